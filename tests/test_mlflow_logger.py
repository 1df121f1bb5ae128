"""The MLflow logging process's logic (`mlflow_logger.RunLogger`), driven directly in this process,
where MLflow's client can be made to fail on purpose; and when the logging process starts."""

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
from gepa_lab.tracking.mlflow_logger import RunLogger

pytestmark = pytest.mark.usefixtures("mlflow_env")


def started(uri: str, run_dir: Path, resume: ResumePoint | None = None, reopen: str | None = None) -> RunLogger:
    """A RunLogger for a toy run, its parent run opened (what `MlflowTracker.start` sends)."""
    seed, dataset = toy_seed(), toy_dataset()
    run = RunInfo(str(uuid.uuid4()), "toy-logger", "gepa", datetime.now(UTC).isoformat(), dataset, dataset.digests(),
                  seed, artifact_id(seed), SearchConfig(), {"experiment_name": "toy-logger"}, False, str(run_dir), resume)
    where = Path(uri.removeprefix("sqlite:///")).parent / "mlruns"  # as the tracker puts artifacts
    experiments = [(name, (where / name).as_uri()) for name in ("gepa-lab", "gepa-lab-candidates")]
    logger = RunLogger(uri, run, False, experiments, reopen, {})
    assert logger.start_error is None
    return logger


def member(key: str, candidate_id: str) -> dict[str, Any]:
    return {"key": key, "name": key, "candidate_id": candidate_id, "metrics": {"validation_mean": 0.5},
            "tags": {"candidate_id": candidate_id, "status": "accepted"}, "files": {"candidate.md": "text"}}


def test_a_racing_dataset_insert_is_retried(mlflow_uri, mlflow_client, tmp_path, monkeypatch) -> None:
    """Parallel jobs registering one new dataset race inside MLflow (an IntegrityError on
    PostgreSQL): the logger logs the inputs again instead of losing them."""
    from mlflow import MlflowClient

    original, calls = MlflowClient.log_inputs, []

    def flaky(self: Any, *args: Any, **kwargs: Any) -> Any:
        calls.append(1)
        if len(calls) == 1:
            raise RuntimeError("duplicate key value violates unique constraint (simulated race)")
        return original(self, *args, **kwargs)

    monkeypatch.setattr(MlflowClient, "log_inputs", flaky)
    logger = started(mlflow_uri, tmp_path)
    assert logger.errors == [] and len(calls) == 2
    assert len(mlflow_client.get_run(logger.run_id).inputs.dataset_inputs) == 3


@pytest.mark.parametrize(("argv", "expected"), [
    (["experiment=recipe"], 1),  # tracking's default is MLflow
    (["experiment=recipe", "tracking=mlflow", "tracking.uri=http://127.0.0.1:5000"], 1),
    (["experiment=recipe", "tracking=none"], 0),
    (["-m", "experiment=recipe", "search.random_seed=1,2"], 0),  # a sweep's jobs start their own
    (["--cfg", "job"], 0),
])
def test_the_logging_process_starts_before_composition_only_when_a_run_will_use_it(argv, expected,
                                                                                    monkeypatch) -> None:
    from gepa_lab.__main__ import start_logger_early
    from gepa_lab.tracking import mlflow_tracker

    started: list[int] = []
    monkeypatch.setattr(mlflow_tracker, "prespawn", lambda: started.append(1))
    start_logger_early(argv)
    assert len(started) == expected


def test_an_idle_logger_is_stopped_at_exit_not_left_importing_mlflow(monkeypatch) -> None:
    from gepa_lab.tracking import mlflow_tracker

    monkeypatch.setattr(mlflow_tracker, "IDLE", [])
    mlflow_tracker.prespawn()  # e.g. started early for a run whose config then fails
    [process] = mlflow_tracker.IDLE
    mlflow_tracker._stop_idle()  # what atexit runs
    assert process.wait(timeout=5) == -9


def test_a_candidate_cut_short_ends_failed_and_a_resume_replaces_it(mlflow_uri, mlflow_client, tmp_path,
                                                                     monkeypatch) -> None:
    from mlflow.store.artifact.local_artifact_repo import LocalArtifactRepository

    logger = started(mlflow_uri, tmp_path)
    run_id = logger.run_id
    logger.member(member("seed", "c0"))
    with monkeypatch.context() as patch:  # the upload of iteration 0's files fails
        patch.setattr(LocalArtifactRepository, "log_artifact",
                      lambda *a, **k: (_ for _ in ()).throw(OSError("disk full")))
        logger.safe("log candidate iteration-0", logger.member, member("iteration-0", "c1"))
    assert logger.errors == ["log candidate iteration-0: OSError: disk full"]
    assert {c.data.tags["gepa.key"]: c.info.status for c in candidate_runs(mlflow_client, run_id)} == {
        "seed": "FINISHED", "iteration-0": "FAILED"}
    logger.end("KILLED", {"stop_reason": "interrupted"}, error=("KeyboardInterrupt", "interruptions/x.txt"))
    assert mlflow_client.get_run(run_id).info.status == "KILLED"

    resumed = started(mlflow_uri, tmp_path, ResumePoint(0, 1), reopen=run_id)  # as a resume finds the run
    assert resumed.run_id == run_id and mlflow_client.get_run(run_id).info.status == "RUNNING"
    assert [c.data.tags["gepa.key"] for c in candidate_runs(mlflow_client, run_id)] == ["seed"]  # FAILED one gone
    resumed.member(member("seed", "c0"))  # replayed: not logged twice
    resumed.member(member("iteration-0", "c1"))
    assert sorted(c.data.tags["gepa.key"] for c in candidate_runs(mlflow_client, run_id)) == ["iteration-0", "seed"]
    assert resumed.errors == []


def test_a_logging_error_is_redacted_before_it_becomes_a_tag(mlflow_uri, tmp_path) -> None:
    """A failed MLflow call's text (which may echo a store URL's password) is redacted: it ends up
    in the parent run's `mlflow_tracker.first_error` tag."""
    logger = started(mlflow_uri, tmp_path)

    def fails() -> None:
        raise ConnectionError("cannot reach postgresql://gepa:hunter2horse@db.internal/mlflow")

    logger.safe("log something", fails)
    assert logger.errors[0].startswith("log something: ConnectionError: cannot reach postgresql://gepa:")
    assert "hunter2horse" not in logger.errors[0]
