"""The MLflow logging process's logic, run in this process (`mlflow_worker.Logger` fed messages
directly), where MLflow's client can be made to fail on purpose."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from fixtures_mlflow import candidate_runs, toy_dataset, toy_seed

from gepa_lab.core.artifacts import artifact_id
from gepa_lab.core.events import ResumePoint, RunInfo
from gepa_lab.core.settings import SearchConfig
from gepa_lab.tracking.mlflow_tracker import MlflowTracker
from gepa_lab.tracking.mlflow_worker import Logger, describe, sqlite_path

pytestmark = pytest.mark.usefixtures("mlflow_env")


def start_message(uri: str, run_dir: Path, *, sweep: dict[str, Any] | None = None,
                  resume: ResumePoint | None = None, reopen: str | None = None) -> dict[str, Any]:
    """What `MlflowTracker.start` sends for a toy run."""
    seed, dataset = toy_seed(), toy_dataset()
    run = RunInfo(str(uuid.uuid4()), "toy-worker", "gepa", datetime.now(UTC).isoformat(), dataset, dataset.digests(),
                  seed, artifact_id(seed), SearchConfig(), {"experiment_name": "toy-worker", "sweep": sweep or {}},
                  False, str(run_dir), resume)
    tracker = MlflowTracker(uri=uri)
    stored = {"run_id": reopen, "tracking_uri": uri} if reopen else None
    return tracker._start_payload(run, sqlite_path(uri), stored)


def candidate_message(key: str, candidate_id: str) -> dict[str, Any]:
    return {"key": key, "name": key, "candidate_id": candidate_id, "metrics": {"validation_mean": 0.5},
            "tags": {"candidate_id": candidate_id, "status": "accepted"}, "files": {"candidate.md": "text"}}


def test_a_racing_dataset_insert_is_retried(mlflow_uri, mlflow_client, tmp_path, monkeypatch) -> None:
    """Parallel jobs registering one new dataset race inside MLflow (an IntegrityError on
    PostgreSQL): the logger logs the inputs again instead of losing them; sweep fields are tags."""
    from mlflow import MlflowClient

    original, calls = MlflowClient.log_inputs, []

    def flaky(self: Any, *args: Any, **kwargs: Any) -> Any:
        calls.append(1)
        if len(calls) == 1:
            raise RuntimeError("duplicate key value violates unique constraint (simulated race)")
        return original(self, *args, **kwargs)

    monkeypatch.setattr(MlflowClient, "log_inputs", flaky)
    replies: list[tuple[Any, ...]] = []
    logger = Logger(replies.append)
    logger.start(start_message(mlflow_uri, tmp_path, sweep={"id": "0123456789ab", "dir": "/s", "job": 3}))
    state = replies[0][-1]
    assert replies[0][0] == "started" and state["start_error"] is None and logger.errors == []
    parent = mlflow_client.get_run(state["run_id"])
    assert len(calls) == 2 and len(parent.inputs.dataset_inputs) == 3
    assert (parent.data.tags["sweep_id"], parent.data.tags["sweep_job"]) == ("0123456789ab", "3")
    assert not [k for k in parent.data.params if k.startswith("sweep")]
    logger.candidate(candidate_message("seed", "c0"))
    assert candidate_runs(mlflow_client, state["run_id"])[0].data.tags["sweep_id"] == "0123456789ab"


def test_a_candidate_cut_short_ends_failed_and_a_resume_replaces_it(mlflow_uri, mlflow_client, tmp_path,
                                                                     monkeypatch) -> None:
    from mlflow.store.artifact.local_artifact_repo import LocalArtifactRepository

    logger = Logger(lambda reply: None)
    logger.start(start_message(mlflow_uri, tmp_path))
    run_id = logger.state()["run_id"]
    logger.candidate(candidate_message("seed", "c0"))
    with monkeypatch.context() as patch:  # the artifact upload of iteration 0's run fails
        patch.setattr(LocalArtifactRepository, "log_artifacts",
                      lambda *a, **k: (_ for _ in ()).throw(OSError("disk full")))
        logger.candidate(candidate_message("iteration-0", "c1"))
    assert logger.errors == ["log candidate iteration-0: OSError: disk full"]
    assert {c.data.tags["gepa.key"]: c.info.status for c in candidate_runs(mlflow_client, run_id)} == {
        "seed": "FINISHED", "iteration-0": "FAILED"}
    logger.end({"status": "KILLED", "error": ("KeyboardInterrupt", "interruptions/x.txt"),
                "tags": {"stop_reason": "interrupted"}})
    assert mlflow_client.get_run(run_id).info.status == "KILLED"

    resumed = Logger(lambda reply: None)  # as a resume's logging process finds the run
    resumed.start(start_message(mlflow_uri, tmp_path, resume=ResumePoint(0, 1), reopen=run_id))
    assert resumed.state()["run_id"] == run_id and mlflow_client.get_run(run_id).info.status == "RUNNING"
    assert [c.data.tags["gepa.key"] for c in candidate_runs(mlflow_client, run_id)] == ["seed"]  # FAILED one gone
    resumed.candidate(candidate_message("seed", "c0"))  # replayed: not logged twice
    resumed.candidate(candidate_message("iteration-0", "c1"))
    assert sorted(c.data.tags["gepa.key"] for c in candidate_runs(mlflow_client, run_id)) == ["iteration-0", "seed"]
    assert resumed.errors == []


@pytest.mark.parametrize(("argv", "expected"), [
    (["experiment=recipe"], ["sql"]),  # tracking's default is MLflow
    (["experiment=recipe", "tracking=mlflow", "tracking.uri=http://127.0.0.1:5000"], ["rest"]),
    (["experiment=recipe", "tracking=none"], []),
    (["-m", "experiment=recipe", "search.random_seed=1,2"], []),  # a sweep's jobs start their own
    (["--cfg", "job"], []),
])
def test_the_logging_process_starts_before_composition_only_when_a_run_will_use_it(argv, expected,
                                                                                    monkeypatch) -> None:
    from gepa_lab.__main__ import start_logger_early
    from gepa_lab.tracking.mlflow_process import POOL

    started: list[str] = []
    monkeypatch.delenv("MLFLOW_TRACKING_URI", raising=False)
    monkeypatch.setattr(POOL, "prespawn", started.append)
    start_logger_early(argv)
    assert started == expected


def test_an_idle_logger_is_stopped_at_exit_not_left_importing_mlflow() -> None:
    from gepa_lab.tracking.mlflow_process import Pool

    pool = Pool()
    pool.prespawn("sql")  # e.g. started early for a run whose config then fails
    [worker] = pool.idle
    pool.close()  # what atexit runs
    assert worker.proc.wait(timeout=5) == -9 and pool.idle == []


def test_a_logging_error_is_redacted_before_it_becomes_a_tag(monkeypatch) -> None:
    """A failed MLflow call's text (which may echo a store URL's password) is redacted: it ends up
    in the parent run's `mlflow_tracker.first_error` tag."""
    error = ConnectionError("cannot reach postgresql://gepa:hunter2horse@db.internal/mlflow")
    text = describe(error)
    assert text.startswith("ConnectionError: cannot reach postgresql://gepa:") and "hunter2horse" not in text
