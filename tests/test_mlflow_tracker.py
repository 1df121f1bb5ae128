"""MLflow tracking (issue 3): parent + nested runs, decision, failure states, resume, config.

Toy searches (`fixtures_mlflow`) on one SQLite store per module; each test finds its own runs
by run id. Five iterations see every proposal status: accepted, rejected, reflection-rejected
twice, duplicate. The evaluator is called once per case: the seed's validation is calls 1-3,
iteration 0 (accepted) 4-10, iteration 1 (rejected) 11-14, then two calls per iteration.
"""

from __future__ import annotations

import ast
import builtins
import json
import pathlib
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from fixtures_mlflow import (
    IMPROVED,
    InterruptAfterIteration,
    ToyEvaluator,
    artifact_paths,
    nested_runs,
    proposal_events,
    read_artifact,
    steps,
    toy_dataset,
    toy_run,
)

from gepa_lab import EvaluatorError
from gepa_lab.core.errors import TrackingError
from gepa_lab.tracking import mlflow_tracker, mlflow_values
from gepa_lab.tracking.mlflow_tracker import MlflowTracker, default_uri
from gepa_lab.tracking.mlflow_values import DIGEST_MAX, PARAM_MAX, flatten_config, split_params

pytestmark = pytest.mark.usefixtures("mlflow_env")

ROOT = Path(__file__).resolve().parents[1]
ITERATION_METRICS = ("best_validation_mean", "pool_size", "front_size", "metric_calls", "task_cost_usd",
                     "reflection_cost_usd", "cost_usd", "proposals")
ALL_STATUSES = ["accepted", "duplicate", "reflection_rejected", "reflection_rejected", "rejected", "seed"]
KILL_SCRIPT = Path(__file__).parent / "scripts" / "mlflow_killable_run.py"


class InterruptAt:
    """A tracker that raises KeyboardInterrupt from one hook (the first time it is called)."""

    def __init__(self, hook: str):
        setattr(self, hook, self._interrupt)

    def _interrupt(self, *args: Any) -> None:
        raise KeyboardInterrupt


def statuses(client: Any, run_id: str) -> list[str]:
    return sorted(c.data.tags["status"] for c in nested_runs(client, run_id))


def by_status(client: Any, run_id: str) -> dict[str, Any]:
    return {c.data.tags["status"]: c for c in nested_runs(client, run_id)}


@pytest.fixture(scope="module")
def finished(mlflow_uri: str, tmp_path_factory: pytest.TempPathFactory) -> tuple[MlflowTracker, Path]:
    run_dir = tmp_path_factory.mktemp("run")
    tracker = toy_run(mlflow_uri, run_dir, run_config={"notes": {"long": "x" * (PARAM_MAX + 500)}})
    return tracker, run_dir


# -- a finished run --------------------------------------------------------------------------

def test_one_parent_and_one_nested_run_per_seed_and_proposal(finished, mlflow_client) -> None:
    tracker, run_dir = finished
    client = mlflow_client
    parent = client.get_run(tracker.run_id)
    assert parent.info.status == "FINISHED"
    assert parent.info.run_name == f"toy-seed1-{parent.data.tags['gepa.experiment_id'][:8]}"  # re-runs differ
    assert "mlflow.parentRunId" not in parent.data.tags
    children = nested_runs(client, tracker.run_id)
    assert len(children) == len(proposal_events(run_dir)) + 1 == 6  # every proposal + the seed
    assert statuses(client, tracker.run_id) == ALL_STATUSES
    assert {c.info.status for c in children} == {"FINISHED"}
    assert sorted(c.data.tags["gepa.key"] for c in children) == ["iteration-0", "iteration-1", "iteration-2",
                                                                 "iteration-3", "iteration-4", "seed"]
    assert {c.data.tags["gepa.run_kind"] for c in children} == {"candidate"}
    runs = by_status(client, tracker.run_id)
    seed, accepted, rejected = runs["seed"], runs["accepted"], runs["rejected"]
    assert accepted.data.tags["parent_id"] == seed.data.tags["candidate_id"]
    assert (accepted.data.tags["component"], accepted.data.tags["iteration"]) == ("steps", "0")
    assert accepted.data.tags["reason"] == "strict minibatch improvement"
    assert [c.data.tags.get("is_best") for c in children].count("true") == 1
    assert accepted.data.tags["is_best"] == "true"
    assert accepted.data.metrics["minibatch_parent_sum"] == pytest.approx(0.4)
    assert accepted.data.metrics["minibatch_child_sum"] == pytest.approx(1.6)
    assert accepted.data.metrics["validation_mean"] == pytest.approx(0.8)
    assert accepted.data.metrics["validation.cost_usd"] == pytest.approx(0.001)
    assert seed.data.metrics["validation_mean"] == pytest.approx(0.2)
    assert rejected.data.tags["reason"] == "strict_minibatch_improvement"
    assert "validation_mean" not in rejected.data.metrics
    assert "candidate_id" not in runs["reflection_rejected"].data.tags
    assert runs["duplicate"].data.tags["candidate_id"] == seed.data.tags["candidate_id"]
    # Nested runs carry the comparison tags of their parent.
    assert (accepted.data.tags["experiment"], accepted.data.tags["random_seed"]) == ("toy", "1")


def test_nested_run_artifacts(finished, mlflow_client, tmp_path) -> None:
    tracker, _ = finished
    client = mlflow_client
    runs = by_status(client, tracker.run_id)
    accepted = runs["accepted"].info.run_id
    assert artifact_paths(client, accepted) == {"candidate.json", "SKILL.md", "diff.patch", "reflection.json",
                                                "minibatch.json", "validation.json"}
    assert f"+3. {IMPROVED}" in read_artifact(client, accepted, "diff.patch", tmp_path)
    assert f"3. {IMPROVED}" in read_artifact(client, accepted, "SKILL.md", tmp_path)
    assert IMPROVED in json.loads(read_artifact(client, accepted, "candidate.json", tmp_path))["steps"]
    reflection = json.loads(read_artifact(client, accepted, "reflection.json", tmp_path))
    assert reflection["status"] == "accepted" and reflection["component"] == "steps"
    assert reflection["records"][0]["case_id"] == "case-1" and IMPROVED in reflection["reply"]["steps"]
    # Tables through log_table: registered in mlflow.loggedArtifacts, read back by MLflow.
    logged = json.loads(runs["accepted"].data.tags["mlflow.loggedArtifacts"])
    assert logged == [{"path": "minibatch.json", "type": "table"}, {"path": "validation.json", "type": "table"}]
    minibatch = json.loads(read_artifact(client, accepted, "minibatch.json", tmp_path))
    assert minibatch["columns"] == ["case_id", "parent_score", "child_score"]
    assert [row[1:] for row in minibatch["data"]] == [[0.2, 0.8], [0.2, 0.8]]
    validation = json.loads(read_artifact(client, accepted, "validation.json", tmp_path))
    assert validation["columns"] == ["case_id", "score", "cost_usd", "tokens"]
    assert [row[:2] for row in validation["data"]] == [["val1", 0.8], ["val2", 0.8], ["val3", 0.8]]
    assert artifact_paths(client, runs["reflection_rejected"].info.run_id) == {"reflection.json", "minibatch.json"}
    assert artifact_paths(client, runs["seed"].info.run_id) == {"candidate.json", "SKILL.md", "validation.json"}


def test_parent_tags_params_and_inputs(finished, mlflow_client, tmp_path) -> None:
    tracker, run_dir = finished
    client = mlflow_client
    parent = client.get_run(tracker.run_id)
    tags, params = parent.data.tags, parent.data.params
    digests = toy_dataset().digests()
    assert (tags["experiment"], tags["random_seed"], tags["gepa.run_kind"]) == ("toy", "1", "parent")
    assert (tags["hydra.experiment"], tags["hydra.tracking"]) == ("toy", "mlflow")
    assert (tags["dataset.id"], tags["dataset.version"]) == ("toy", "v1")
    assert [tags[f"dataset.digest.{s}"] for s in digests] == list(digests.values())
    assert tags["gepa_lab.version"] == __import__("gepa_lab").__version__
    head = subprocess.run(["git", "-C", str(ROOT), "rev-parse", "HEAD"], capture_output=True, text=True)
    assert tags.get("mlflow.source.git.commit") == (head.stdout.strip() or None)
    assert tags["promotion_eligible"] == "true" and tags["simulated"] == "false"  # the toy evaluator is no simulation
    assert tags["promotion_reason"] == "holdout requirements satisfied"
    assert "not an LM" not in tags["mlflow.note.content"]
    assert tags["stop_reason"] == "max_iterations"
    assert (tags["submission.status"], tags["submission.revision_id"]) == ("not_requested", "")
    assert tags["rule.critical_non_regression"] == "passed"
    assert tags["mlflow_tracker.errors"] == "0" and "mlflow_tracker.first_error" not in tags
    assert params["search.max_iterations"] == "5" and params["experiment_name"] == "toy"
    assert not any(k.startswith("hydra_choices") for k in params)
    assert params["notes.long"] == f"<{PARAM_MAX + 500} chars: see artifact config/long_params.json>"
    long_params = json.loads(read_artifact(client, tracker.run_id, "config/long_params.json", tmp_path))
    assert long_params["notes.long"] == "x" * (PARAM_MAX + 500)  # whole, never truncated
    inputs = {{t.key: t.value for t in i.tags}["mlflow.data.context"]: i for i in parent.inputs.dataset_inputs}
    assert set(inputs) == {"feedback", "validation", "holdout"}
    for split, item in inputs.items():
        assert item.dataset.digest == digests[split][:DIGEST_MAX]
        assert {t.key: t.value for t in item.tags}["sha256"] == digests[split]
        assert item.dataset.name == f"toy/{split}"
    stored = json.loads((run_dir / "mlflow_run.json").read_text())
    assert stored == {"run_id": tracker.run_id, "experiment_id": parent.info.experiment_id,
                      "tracking_uri": tracker.uri}
    # The result names the MLflow run.
    links = json.loads((run_dir / "result.json").read_text())["links"]
    assert links == {"mlflow_run_id": tracker.run_id, "mlflow_experiment_id": parent.info.experiment_id,
                     "mlflow_tracking_uri": tracker.uri}


def test_links_leave_out_a_tracking_uri_with_a_password() -> None:
    tracker = MlflowTracker(uri="postgresql://gepa:s3cret@127.0.0.1/mlflow")
    tracker.run_id, tracker.experiment_id = "r1", "7"
    assert tracker.links() == {"mlflow_run_id": "r1", "mlflow_experiment_id": "7"}
    assert MlflowTracker(uri="http://127.0.0.1:5000").links() == {}  # no run yet


def test_iteration_metrics_and_decision(finished, mlflow_client, mlflow_uri, tmp_path, monkeypatch) -> None:
    tracker, run_dir = finished
    client = mlflow_client
    parent = client.get_run(tracker.run_id)
    for metric in ITERATION_METRICS:  # each step exactly once
        assert [m.step for m in client.get_metric_history(tracker.run_id, metric)] == [0, 1, 2, 3, 4], metric
    history = {m.step: m.value for m in client.get_metric_history(tracker.run_id, "best_validation_mean")}
    assert history == pytest.approx({0: 0.8, 1: 0.8, 2: 0.8, 3: 0.8, 4: 0.8})
    calls = {m.step: m.value for m in client.get_metric_history(tracker.run_id, "metric_calls")}
    assert calls == {0: 10, 1: 14, 2: 16, 3: 18, 4: 20}
    assert [m.value for m in client.get_metric_history(tracker.run_id, "proposals")] == [1, 2, 3, 4, 5]
    m = parent.data.metrics
    assert m["holdout_delta"] == pytest.approx(0.6)
    assert m["baseline_holdout_mean"] == pytest.approx(0.2) and m["candidate_holdout_mean"] == pytest.approx(0.8)
    assert m["promotion_eligible"] == 1.0 and m["rule.holdout_delta"] == 1.0
    assert (m["total_metric_calls"], m["total_proposals"]) == (26, 5)
    assert m["total_cost_usd"] == pytest.approx(0.026)
    paths = artifact_paths(client, tracker.run_id)
    assert {"plots/lineage.png", "plots/validation_heatmap.png", "plots/best_vs_metric_calls.png",
            "plots/holdout_deltas.png", "best/SKILL.md", "best/candidate.json", "decision/result.json",
            "decision/holdout_comparison.json", "decision/promotion_rules.json"} <= paths
    assert f"3. {IMPROVED}" in read_artifact(client, tracker.run_id, "best/SKILL.md", tmp_path)
    result = json.loads(read_artifact(client, tracker.run_id, "decision/result.json", tmp_path))
    assert result["best_id"] == parent.data.tags["best_candidate_id"] and result["proposals"] == 5
    # The decision tables are MLflow tables: MLflow's own reader finds them (it searches through
    # the fluent API, hence the environment variable).
    monkeypatch.setenv("MLFLOW_TRACKING_URI", mlflow_uri)
    experiment = parent.info.experiment_id
    holdout = client.load_table(experiment, "decision/holdout_comparison.json", run_ids=[tracker.run_id],
                                extra_columns=["run_id"])
    assert list(holdout.columns) == ["case_id", "critical", "baseline", "candidate", "delta", "run_id"]
    assert list(holdout["case_id"]) == ["ho1", "ho2", "ho3"] and list(holdout["critical"]) == [True, False, False]
    assert list(holdout["delta"]) == pytest.approx([0.6, 0.6, 0.6]) and set(holdout["run_id"]) == {tracker.run_id}
    rules = client.load_table(experiment, "decision/promotion_rules.json", run_ids=[tracker.run_id])
    expected = json.loads((run_dir / "result.json").read_text())["promotion_rules"]  # the run record's
    assert len(expected) >= 4 and list(rules.columns[:3]) == ["rule", "passed", "detail"]
    assert list(rules["rule"]) == [r["rule"] for r in expected] and list(rules["passed"]) == [r["passed"] for r in expected]
    stored = json.loads(read_artifact(client, tracker.run_id, "decision/promotion_rules.json", tmp_path))
    rows = [dict(zip(stored["columns"], row, strict=True)) for row in stored["data"]]
    assert len(rows) == len(expected)
    for row, rule in zip(rows, expected, strict=True):  # every field (MLflow writes floats to 10 digits)
        assert row.keys() == rule.keys()
        for field, value in rule.items():
            assert row[field] == (pytest.approx(value) if isinstance(value, float) else value), field
    assert {k: v for k, v in parent.data.tags.items() if k.startswith("rule.")} == {
        f"rule.{r['rule']}": r.get("status") or ("passed" if r["passed"] else "failed") for r in expected}


def test_one_log_batch_per_iteration(mlflow_uri, mlflow_client, tmp_path) -> None:
    tracker = MlflowTracker(uri=mlflow_uri)
    stepped: list[int] = []
    original_start = tracker.start

    def start_then_spy(run: Any) -> None:
        original_start(run)
        real = tracker.client.log_batch

        def log_batch(run_id: str, metrics: Any = (), **kwargs: Any) -> Any:
            if run_id == tracker.run_id and any(m.key == "pool_size" for m in metrics):
                stepped.append(metrics[0].step)
            return real(run_id, metrics=metrics, **kwargs)

        tracker.client.log_batch = log_batch

    tracker.start = start_then_spy  # type: ignore[method-assign]
    toy_run(mlflow_uri, tmp_path, experiment="toy-batches", iterations=3, tracker=tracker)
    assert stepped == [0, 1, 2]
    assert steps(mlflow_client, tracker.run_id) == [0, 1, 2]


def test_a_rejected_first_proposal_gets_no_validation(mlflow_uri, mlflow_client, tmp_path) -> None:
    class NoGain:
        def reflect(self, artifact: Any, component: str, records: list[dict[str, Any]]) -> Any:
            return {"steps": [*artifact.steps, "Also answer."]}

    tracker = toy_run(mlflow_uri, tmp_path, experiment="toy-first", iterations=1, reflector=NoGain())
    runs = by_status(mlflow_client, tracker.run_id)
    assert set(runs) == {"seed", "rejected"}
    rejected = runs["rejected"].data.metrics
    assert "validation_mean" not in rejected and rejected["minibatch_child_sum"] == pytest.approx(0.4)
    assert "validation.json" not in artifact_paths(mlflow_client, runs["rejected"].info.run_id)
    assert runs["seed"].data.tags["is_best"] == "true"
    tags = mlflow_client.get_run(tracker.run_id).data.tags
    assert (tags["promotion_eligible"], tags["promotion_reason"]) == (
        "false", "no accepted candidate improved validation")


# -- failures, interruption, resume ----------------------------------------------------------

def test_evaluator_failure_marks_run_failed(mlflow_uri, mlflow_client, tmp_path) -> None:
    tracker = MlflowTracker(uri=mlflow_uri)  # call 16 is iteration 2's first: raises
    with pytest.raises(EvaluatorError, match="boom"):
        toy_run(mlflow_uri, tmp_path, experiment="toy-fail", tracker=tracker,
                evaluator=ToyEvaluator(fail_after=15, error=RuntimeError("boom")))
    parent = mlflow_client.get_run(tracker.run_id)
    assert parent.info.status == "FAILED"
    tags = parent.data.tags
    assert tags["stop_reason"] == "error" and tags["error"].startswith("EvaluatorError: ") and "boom" in tags["error"]
    assert (tags["promotion_eligible"], tags["promotion_reason"]) == ("false", "run did not finish (EvaluatorError)")
    assert statuses(mlflow_client, tracker.run_id) == ["accepted", "rejected", "seed"]
    assert {c.info.status for c in nested_runs(mlflow_client, tracker.run_id)} == {"FINISHED"}
    assert [p for p in artifact_paths(mlflow_client, tracker.run_id) if p.startswith("interruptions/")][0].endswith(
        "-EvaluatorError.txt")
    assert steps(mlflow_client, tracker.run_id) == [0, 1]


def test_keyboard_interrupt_marks_run_killed(mlflow_uri, mlflow_client) -> None:
    tracker = MlflowTracker(uri=mlflow_uri)  # no run dir: no checkpoints, nothing to resume
    with pytest.raises(KeyboardInterrupt):
        toy_run(mlflow_uri, None, experiment="toy-kill", tracker=tracker,
                evaluator=ToyEvaluator(fail_after=15, error=KeyboardInterrupt()))
    parent = mlflow_client.get_run(tracker.run_id)
    assert parent.info.status == "KILLED" and parent.data.tags["stop_reason"] == "interrupted"
    assert steps(mlflow_client, tracker.run_id) == [0, 1]
    assert [c.info.status for c in nested_runs(mlflow_client, tracker.run_id)] == ["FINISHED"] * 3


def test_interrupt_inside_a_nested_run_and_resume(mlflow_uri, mlflow_client, tmp_path) -> None:
    """Ctrl-C while iteration 1's nested run is being written: that run ends KILLED, never
    RUNNING; the resume replaces it with a complete one."""
    tracker = MlflowTracker(uri=mlflow_uri)
    original_start = tracker.start

    def start_then_break(run: Any) -> None:
        original_start(run)
        real = tracker.client.log_table

        def log_table(run_id: str, data: Any, artifact_file: str) -> Any:
            if tracker.client.get_run(run_id).data.tags.get("gepa.key") == "iteration-1":
                raise KeyboardInterrupt
            return real(run_id, data, artifact_file)

        tracker.client.log_table = log_table

    tracker.start = start_then_break  # type: ignore[method-assign]
    with pytest.raises(KeyboardInterrupt):
        toy_run(mlflow_uri, tmp_path, experiment="toy-midwrite", tracker=tracker)
    children = {c.data.tags["gepa.key"]: c.info.status for c in nested_runs(mlflow_client, tracker.run_id)}
    assert children == {"seed": "FINISHED", "iteration-0": "FINISHED", "iteration-1": "KILLED"}
    assert mlflow_client.get_run(tracker.run_id).info.status == "KILLED"
    second = toy_run(mlflow_uri, tmp_path, experiment="toy-midwrite", resume=True)
    assert second.run_id == tracker.run_id and second.errors == []
    children = {c.data.tags["gepa.key"]: c.info.status for c in nested_runs(mlflow_client, tracker.run_id)}
    assert len(children) == 6 and set(children.values()) == {"FINISHED"}


def test_resume_reuses_the_parent_run_without_duplicates(mlflow_uri, mlflow_client, tmp_path, monkeypatch) -> None:
    first = MlflowTracker(uri=mlflow_uri)
    with pytest.raises(KeyboardInterrupt):  # after iteration 1 is logged, before its checkpoint
        toy_run(mlflow_uri, tmp_path, experiment="toy-resume", tracker=first, after=(InterruptAfterIteration(1),))
    assert mlflow_client.get_run(first.run_id).info.status == "KILLED"
    assert statuses(mlflow_client, first.run_id) == ["accepted", "rejected", "seed"]
    assert steps(mlflow_client, first.run_id) == [0, 1]

    second = MlflowTracker(uri=mlflow_uri)
    read: list[Path] = []  # files of the run dir the tracker reads while starting
    original_start, real_open, real_read_text = second.start, builtins.open, pathlib.Path.read_text

    def spying_start(run: Any) -> None:
        def spy_open(file: Any, *args: Any, **kwargs: Any) -> Any:
            read.append(Path(file))
            return real_open(file, *args, **kwargs)

        def spy_read_text(self: Path, *args: Any, **kwargs: Any) -> str:
            read.append(self)
            return real_read_text(self, *args, **kwargs)

        with monkeypatch.context() as patch:
            patch.setattr(builtins, "open", spy_open)
            patch.setattr(pathlib.Path, "read_text", spy_read_text)
            original_start(run)

    second.start = spying_start  # type: ignore[method-assign]
    toy_run(mlflow_uri, tmp_path, experiment="toy-resume", resume=True, tracker=second)  # replays iteration 1
    assert [p for p in read if tmp_path in p.resolve().parents] == [tmp_path / "mlflow_run.json"]
    assert second.run_id == first.run_id and second.errors == []
    parent = mlflow_client.get_run(first.run_id)
    assert parent.info.status == "FINISHED" and parent.data.tags["resume_count"] == "1"
    assert "error" not in parent.data.tags and parent.data.tags["stop_reason"] == "max_iterations"
    children = nested_runs(mlflow_client, first.run_id)
    assert len(children) == 1 + len(proposal_events(tmp_path)) == 6  # seed + 5 proposals, none twice
    assert len({c.data.tags["gepa.key"] for c in children}) == 6
    for metric in ITERATION_METRICS:
        assert [m.step for m in mlflow_client.get_metric_history(first.run_id, metric)] == [0, 1, 2, 3, 4]
    # The winner was logged by the first process; the resumed one still tags it.
    assert by_status(mlflow_client, first.run_id)["accepted"].data.tags["is_best"] == "true"
    assert "plots/lineage.png" in artifact_paths(mlflow_client, first.run_id)


@pytest.mark.slow
def test_hard_kill_loses_no_iteration_metrics(mlflow_uri, mlflow_client, tmp_path) -> None:
    """SIGKILL (no fail(), no cleanup) at evaluator call 17, iteration 3's first: iterations 0-2
    are in MLflow, as the kill left them; the resume continues the same run from there."""
    killed = subprocess.run([sys.executable, str(KILL_SCRIPT), mlflow_uri, str(tmp_path), "17"],
                            capture_output=True, text=True, timeout=120)
    assert killed.returncode == -9, killed.stderr[-3000:]  # really SIGKILLed
    run_id = json.loads((tmp_path / "mlflow_run.json").read_text())["run_id"]
    assert mlflow_client.get_run(run_id).info.status == "RUNNING"  # as a killed process leaves it
    assert steps(mlflow_client, run_id) == [0, 1, 2]
    assert len(nested_runs(mlflow_client, run_id)) == 4  # seed, iterations 0-2
    resumed = subprocess.run([sys.executable, str(KILL_SCRIPT), mlflow_uri, str(tmp_path), "0", "--resume"],
                             capture_output=True, text=True, timeout=120)
    assert resumed.returncode == 0, resumed.stderr[-3000:]
    assert resumed.stdout.split() == [run_id, "0"]  # same run, no logging errors
    for metric in ITERATION_METRICS:
        assert [m.step for m in mlflow_client.get_metric_history(run_id, metric)] == [0, 1, 2, 3, 4]
    parent = mlflow_client.get_run(run_id)
    assert parent.info.status == "FINISHED" and parent.data.tags["resume_count"] == "1"
    assert statuses(mlflow_client, run_id) == ALL_STATUSES


def test_resume_of_a_run_killed_before_its_first_checkpoint(mlflow_uri, mlflow_client, tmp_path,
                                                            monkeypatch) -> None:
    run_dir = tmp_path / "run"
    first = MlflowTracker(uri=mlflow_uri)
    with pytest.raises(KeyboardInterrupt):  # the seed is in MLflow, not in a checkpoint
        toy_run(mlflow_uri, run_dir, experiment="toy-early", tracker=first, after=(InterruptAt("candidate"),))
    assert statuses(mlflow_client, first.run_id) == ["seed"]
    # Resumed from another directory with the default URI: the run file names the store.
    monkeypatch.chdir(tmp_path)
    second = toy_run(mlflow_uri, run_dir, experiment="toy-early", resume=True, tracker=MlflowTracker())
    assert (second.run_id, second.uri) == (first.run_id, mlflow_uri)  # the seed was scored again
    assert statuses(mlflow_client, first.run_id) == ALL_STATUSES
    assert len(proposal_events(run_dir)) == 5 and not (tmp_path / "mlflow.db").exists()


def test_a_run_killed_before_anything_reached_mlflow_resumes_into_a_new_run(mlflow_uri, mlflow_client,
                                                                           tmp_path) -> None:
    first = MlflowTracker(uri=mlflow_uri)
    with pytest.raises(KeyboardInterrupt):  # a tracker before it stops the run: MLflow never started
        toy_run(mlflow_uri, tmp_path, experiment="toy-nothing", tracker=first, before=(InterruptAt("start"),))
    assert first.run_id is None and not (tmp_path / "mlflow_run.json").exists()
    second = toy_run(mlflow_uri, tmp_path, experiment="toy-nothing", resume=True)
    parents = mlflow_client.search_runs([second.experiment_id],
                                       "tags.experiment = 'toy-nothing' and tags.`gepa.run_kind` = 'parent'")
    assert [p.info.run_id for p in parents] == [second.run_id]
    assert parents[0].info.status == "FINISHED" and "resume_count" not in parents[0].data.tags
    assert statuses(mlflow_client, second.run_id) == ALL_STATUSES


def test_unreachable_server_fails_before_any_evaluation(tmp_path) -> None:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]  # closed again: nothing listens there
    evaluator = ToyEvaluator()
    with pytest.raises(TrackingError, match="not reachable"):
        toy_run(f"http://127.0.0.1:{port}", tmp_path, evaluator=evaluator)
    assert evaluator.calls == 0


@pytest.mark.parametrize("kind", ["folder is a file", "unknown scheme"])
def test_unusable_store_fails_before_any_evaluation(kind, tmp_path) -> None:
    (tmp_path / "file").write_text("not a folder")
    uri = f"sqlite:///{tmp_path / 'file' / 'mlflow.db'}" if kind == "folder is a file" else "nosuch://store"
    evaluator = ToyEvaluator()
    with pytest.raises(TrackingError, match="cannot write the MLflow store" if kind == "folder is a file" else "cannot log"):
        toy_run(uri, tmp_path / "run", evaluator=evaluator)
    assert evaluator.calls == 0


def test_logging_errors_are_counted_not_fatal(mlflow_uri, mlflow_client, tmp_path, caplog) -> None:
    tracker = MlflowTracker(uri=mlflow_uri)
    original_start = tracker.start

    def start_then_break(run: Any) -> None:
        original_start(run)
        real = tracker.client.create_run

        def create_run(*args: Any, **kwargs: Any) -> Any:
            if kwargs.get("run_name", "").startswith("it001"):
                raise RuntimeError("store hiccup")
            return real(*args, **kwargs)

        tracker.client.create_run = create_run

    tracker.start = start_then_break  # type: ignore[method-assign]
    toy_run(mlflow_uri, tmp_path, experiment="toy-flaky", tracker=tracker)
    parent = mlflow_client.get_run(tracker.run_id)
    assert parent.info.status == "FINISHED"
    assert parent.data.tags["mlflow_tracker.errors"] == "1"
    assert parent.data.tags["mlflow_tracker.first_error"] == (
        "log the proposal's run (iteration 1): RuntimeError: store hiccup")
    assert statuses(mlflow_client, tracker.run_id) == ["accepted", "duplicate", "reflection_rejected",
                                                       "reflection_rejected", "seed"]  # one missing, reported
    assert "MLflow logging failed" in caplog.text


@pytest.mark.slow
def test_recipe_cli_run_logs_every_candidate(tmp_path) -> None:
    """Issue 3's acceptance: one `experiment=recipe` run -> one parent run whose nested runs are
    the proposals in events.jsonl plus the seed."""
    import os

    from mlflow import MlflowClient

    uri, run_dir = f"sqlite:///{tmp_path / 'mlflow.db'}", tmp_path / "run"
    env = {k: v for k, v in os.environ.items() if k != "MLFLOW_TRACKING_URI"}
    done = subprocess.run([sys.executable, "-m", "gepa_lab", "experiment=recipe", f"tracking.uri={uri}",
                           f"hydra.run.dir={run_dir}"], cwd=tmp_path, env=env, capture_output=True, text=True,
                          timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    client = MlflowClient(uri)
    experiment = client.get_experiment_by_name("gepa-lab")
    assert experiment.artifact_location == (tmp_path / "mlruns" / "gepa-lab").as_uri()
    parents = client.search_runs([experiment.experiment_id], "tags.`gepa.run_kind` = 'parent'")
    assert len(parents) == 1
    parent = parents[0]
    tags = parent.data.tags
    assert parent.info.status == "FINISHED" and parent.info.run_name.startswith("recipe-seed1-")
    assert (tags["experiment"], tags["random_seed"]) == ("recipe", "1")
    assert (tags["hydra.experiment"], tags["hydra.tracking"]) == ("recipe", "mlflow")
    record = json.loads((run_dir / "result.json").read_text())
    assert tags["promotion_eligible"] == str(record["promotion_eligible"]).lower()
    assert (tags["promotion_reason"], tags["stop_reason"]) == (record["promotion_reason"], record["stop_reason"])
    assert tags["submission.status"] == "not_requested" and tags["mlflow_tracker.errors"] == "0"
    assert tags["simulated"] == "true" and "calibrate the harness, not an LM" in tags["mlflow.note.content"]
    for split, digest in record["dataset"]["digests"].items():
        assert tags[f"dataset.digest.{split}"] == digest
    events = proposal_events(run_dir)
    children = nested_runs(client, parent.info.run_id)
    assert len(children) == len(events) + 1
    assert sorted(int(c.data.tags["iteration"]) for c in children) == [-1, *range(len(events))]
    assert record["links"]["mlflow_run_id"] == parent.info.run_id
    assert json.loads((run_dir / "mlflow_run.json").read_text())["run_id"] == parent.info.run_id


# -- configuration, helpers, public API ------------------------------------------------------

def test_default_uri_is_absolute_sqlite_in_cwd(tmp_path, monkeypatch) -> None:
    monkeypatch.chdir(tmp_path)
    assert default_uri() == f"sqlite:///{tmp_path.resolve()}/mlflow.db"
    assert MlflowTracker().uri == f"sqlite:///{tmp_path.resolve()}/mlflow.db"
    monkeypatch.setenv("MLFLOW_TRACKING_URI", "http://127.0.0.1:5000")
    assert default_uri() == "http://127.0.0.1:5000"


def test_tracking_yaml_builds_the_tracker() -> None:
    from hydra.utils import instantiate
    from omegaconf import OmegaConf

    node = OmegaConf.load(ROOT / "conf" / "tracking" / "mlflow.yaml")
    tracker = instantiate(node, uri="sqlite:///x.db")
    assert isinstance(tracker, MlflowTracker)
    assert (tracker.uri, tracker.experiment, tracker.artifact_location, tracker.plots) == (
        "sqlite:///x.db", "gepa-lab", None, True)


def test_flatten_and_split_params() -> None:
    flat = flatten_config({"a": {"b": 1, "c": [1, 2], "d": None, "e": True, "f": {}}, "g": "x"})
    assert flat == {"a.b": "1", "a.c": "[1, 2]", "a.d": "null", "a.e": "true", "a.f": "{}", "g": "x"}
    params, long_values = split_params({"short": "v", "long": "y" * (PARAM_MAX + 1)})
    assert params == {"short": "v", "long": f"<{PARAM_MAX + 1} chars: see artifact config/long_params.json>"}
    assert long_values == {"long": "y" * (PARAM_MAX + 1)}


@pytest.mark.parametrize("module", [mlflow_tracker, mlflow_values], ids=lambda m: m.__name__)
def test_tracker_uses_only_public_mlflow_names(module) -> None:
    """No private MLflow module, class or function: imports name no `_` component and the only
    underscore attributes read are the tracker's own (`self._...`)."""
    tree = ast.parse(Path(module.__file__).read_text(encoding="utf-8"))
    imported = [(node.module or "", alias.name) for node in ast.walk(tree) if isinstance(node, ast.ImportFrom)
                for alias in node.names]
    mlflow_names = [(m, n) for m, n in imported if m.split(".")[0] == "mlflow"]
    assert mlflow_names  # the check below has something to check
    for module, name in mlflow_names:
        assert not any(part.startswith("_") for part in [*module.split("."), name]), (module, name)
        assert not module.startswith("mlflow.tracking.context"), module
    private = [ast.unparse(node) for node in ast.walk(tree) if isinstance(node, ast.Attribute)
               and node.attr.startswith("_") and not node.attr.startswith("__")
               and not (isinstance(node.value, ast.Name) and node.value.id == "self")]
    assert private == []
