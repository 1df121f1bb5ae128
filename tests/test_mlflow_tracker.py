"""MLflow tracking (issue 3): parent + nested runs, decision, failure states, resume, config.

All runs use toy evaluators and one SQLite store per module (creating a store costs ~1.5 s of
migrations); each test finds its own runs by run id. `toy_run` is reused by the server and
notebook tests.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from gepa_lab import Case, Dataset, Evaluation, SkillSpec, optimize
from gepa_lab.engine import SearchConfig
from gepa_lab.mlflow_tracker import (
    DIGEST_MAX,
    PARAM_MAX,
    MlflowTracker,
    MlflowTrackingConfig,
    MlflowTrackingError,
    build_tracker,
    default_uri,
    flatten_config,
    split_params,
)

IMPROVED = "Check the improved result."
PROPOSAL_EVENTS = {"candidate_accepted", "candidate_rejected", "candidate_duplicate", "reflection_rejected"}
CONF_DIR = Path(__file__).resolve().parent.parent / "conf"


# -- toy search ------------------------------------------------------------------------------

class ToyEvaluator:
    """Seed-like specs score 0.2, specs with IMPROVED among their steps 0.8. `fail_after` calls:
    raise `error` (an exception instance) or break the contract (error=None)."""

    def __init__(self, fail_after: int | None = None, error: BaseException | None = None):
        self.calls = 0
        self.fail_after = fail_after
        self.error = error

    def evaluate(self, artifact: Any, cases: list[Case], seed: int) -> list[Evaluation]:
        self.calls += 1
        if self.fail_after is not None and self.calls > self.fail_after:
            if self.error is not None:
                raise self.error
            return []  # wrong count: an evaluator contract error stops the run
        score = 0.8 if IMPROVED in artifact.steps else 0.2
        return [Evaluation(c.id, score, output="out", feedback="fb",
                           objectives={"cost_usd": 0.001, "tokens": 10.0}) for c in cases]


class ToyReflector:
    """steps: add IMPROVED (accepted), or drop it again (= the seed: duplicate); pitfalls: a new
    pitfall (same score: rejected); when_to_use unchanged and description not JSON
    (reflection-rejected). Five iterations see every status."""

    def reflect(self, artifact: Any, component: str, records: list[dict[str, Any]]) -> Any:
        if component == "steps":
            steps = [s for s in artifact.steps if s != IMPROVED]
            return {"steps": steps if IMPROVED in artifact.steps else steps + [IMPROVED]}
        if component == "pitfalls":
            return {"pitfalls": [*artifact.pitfalls, "Do not skip checks."], "rationale": "guard"}
        if component == "when_to_use":
            return {"when_to_use": artifact.when_to_use}
        return "no json here"


class InterruptAfterIteration:
    """A tracker that raises KeyboardInterrupt from the `iteration` hook: after the MLflow tracker
    logged the proposal, before the engine's checkpoint (so a resume replays that iteration)."""

    def __init__(self, iteration: int):
        self.at = iteration

    def iteration(self, stats: Any) -> None:
        if stats.iteration == self.at:
            raise KeyboardInterrupt


def toy_dataset() -> Dataset:
    def cases(prefix: str, n: int, critical: int = 0) -> list[Case]:
        return [Case(f"{prefix}{i}", f"{prefix} input {i}", critical=i <= critical) for i in range(1, n + 1)]

    return Dataset("toy", "v1", cases("fb", 4), cases("val", 3), cases("ho", 3, critical=1))


def toy_seed() -> SkillSpec:
    return SkillSpec(name="Toy Skill", description="toy workflow", when_to_use="Use for toy tasks.",
                     steps=["Read the task.", "Answer."])


def toy_run(uri: str, run_dir: Path, *, experiment: str = "toy", random_seed: int = 1,
            iterations: int = 5, evaluator: ToyEvaluator | None = None, resume: bool = False,
            run_config: dict[str, Any] | None = None, tracker: MlflowTracker | None = None,
            after: tuple[Any, ...] = (), reflector: Any = None) -> MlflowTracker:
    """One toy search logged by `tracker` (default: a new one); `after`: more trackers."""
    tracker = tracker or MlflowTracker(uri, experiment, run_dir)
    config = {"experiment_name": experiment, "hydra_choices": {"experiment": experiment, "tracking": "mlflow"},
              **(run_config or {})}
    optimize(toy_seed(), toy_dataset(), evaluator or ToyEvaluator(), reflector or ToyReflector(),
             SearchConfig(max_iterations=iterations, minibatch_size=2, random_seed=random_seed),
             run_dir=run_dir, trackers=[tracker, *after], run_config=config, resume=resume)
    return tracker


def proposal_events(run_dir: Path) -> list[dict[str, Any]]:
    lines = (run_dir / "events.jsonl").read_text(encoding="utf-8").splitlines()
    return [e for e in map(json.loads, lines) if e["kind"] in PROPOSAL_EVENTS]


def nested_runs(client: Any, parent: Any) -> list[Any]:
    return client.search_runs([parent.info.experiment_id],
                              f"tags.`mlflow.parentRunId` = '{parent.info.run_id}'", max_results=1000)


def artifact_paths(client: Any, run_id: str, path: str | None = None) -> set[str]:
    out: set[str] = set()
    for item in client.list_artifacts(run_id, path):
        out |= artifact_paths(client, run_id, item.path) if item.is_dir else {item.path}
    return out


def read_json_artifact(client: Any, run_id: str, path: str, tmp: Path) -> Any:
    return json.loads(Path(client.download_artifacts(run_id, path, str(tmp))).read_text(encoding="utf-8"))


# -- fixtures --------------------------------------------------------------------------------

@pytest.fixture(autouse=True)
def _offline(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MLFLOW_DISABLE_TELEMETRY", "true")
    monkeypatch.setenv("LITELLM_LOCAL_MODEL_COST_MAP", "True")
    monkeypatch.delenv("MLFLOW_TRACKING_URI", raising=False)


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory) -> str:
    return f"sqlite:///{tmp_path_factory.mktemp('mlflow')}/mlflow.db"


@pytest.fixture(scope="module")
def finished(store: str, tmp_path_factory: pytest.TempPathFactory) -> tuple[MlflowTracker, Path]:
    run_dir = tmp_path_factory.mktemp("run")
    long_value = "x" * (PARAM_MAX + 500)
    tracker = toy_run(store, run_dir, run_config={"notes": {"long": long_value}})
    return tracker, run_dir


@pytest.fixture(scope="module")
def client(store: str) -> Any:
    from mlflow import MlflowClient

    return MlflowClient(tracking_uri=store)


# -- a finished run --------------------------------------------------------------------------

def test_one_parent_and_one_nested_run_per_seed_and_proposal(finished, client) -> None:
    tracker, run_dir = finished
    parent = client.get_run(tracker.run_id)
    assert parent.info.status == "FINISHED"
    assert "mlflow.parentRunId" not in parent.data.tags
    assert parent.info.run_name == "toy-seed1"
    children = nested_runs(client, parent)
    events = proposal_events(run_dir)
    assert len(children) == len(events) + 1  # every proposal event + the seed
    statuses = sorted(c.data.tags["status"] for c in children)
    assert statuses == sorted(["seed", "accepted", "rejected", "duplicate", "reflection_rejected",
                               "reflection_rejected"])
    assert {c.info.status for c in children} == {"FINISHED"}
    assert len({c.data.tags["gepa.key"] for c in children}) == len(children)
    by_status = {c.data.tags["status"]: c for c in children}
    seed, accepted = by_status["seed"], by_status["accepted"]
    assert accepted.data.tags["parent_id"] == seed.data.tags["candidate_id"]
    assert accepted.data.tags["component"] == "steps"
    assert accepted.data.tags["iteration"] == "0"
    assert accepted.data.tags["is_best"] == "true"
    assert accepted.data.metrics["minibatch_parent_sum"] == pytest.approx(0.4)
    assert accepted.data.metrics["minibatch_child_sum"] == pytest.approx(1.6)
    assert accepted.data.metrics["validation_mean"] == pytest.approx(0.8)
    assert accepted.data.metrics["validation.cost_usd"] == pytest.approx(0.001)
    assert seed.data.metrics["validation_mean"] == pytest.approx(0.2)
    rejected = by_status["rejected"]
    assert rejected.data.tags["reason"] == "strict_minibatch_improvement"
    assert "validation_mean" not in rejected.data.metrics
    assert "candidate_id" not in by_status["reflection_rejected"].data.tags
    # Nested runs carry the comparison tags of their parent.
    assert accepted.data.tags["experiment"] == "toy" and accepted.data.tags["random_seed"] == "1"


def test_nested_run_artifacts(finished, client, tmp_path) -> None:
    tracker, _ = finished
    children = {c.data.tags["status"]: c for c in nested_runs(client, client.get_run(tracker.run_id))}
    accepted = children["accepted"].info.run_id
    assert artifact_paths(client, accepted) == {"candidate.json", "SKILL.md", "diff.patch", "reflection.json",
                                                "minibatch.json", "validation.json"}
    diff = Path(client.download_artifacts(accepted, "diff.patch", str(tmp_path))).read_text()
    assert f"+3. {IMPROVED}" in diff
    minibatch = read_json_artifact(client, accepted, "minibatch.json", tmp_path)
    assert minibatch["columns"] == ["case_id", "parent_score", "child_score"]
    assert [row[1:] for row in minibatch["data"]] == [[0.2, 0.8], [0.2, 0.8]]
    reflection = read_json_artifact(client, accepted, "reflection.json", tmp_path)
    assert reflection["records"][0]["case_id"] == "case-1" and IMPROVED in reflection["reply"]["steps"]
    assert "minibatch.json" in children["accepted"].data.tags["mlflow.loggedArtifacts"]
    refl = children["reflection_rejected"].info.run_id
    assert artifact_paths(client, refl) == {"reflection.json", "minibatch.json"}
    assert artifact_paths(client, children["seed"].info.run_id) == {"candidate.json", "SKILL.md", "validation.json"}


def test_parent_tags_params_and_inputs(finished, client, tmp_path) -> None:
    tracker, run_dir = finished
    parent = client.get_run(tracker.run_id)
    tags, params = parent.data.tags, parent.data.params
    digests = toy_dataset().digests()
    assert tags["experiment"] == "toy" and tags["random_seed"] == "1"
    assert tags["hydra.experiment"] == "toy" and tags["hydra.tracking"] == "mlflow"
    assert tags["dataset.id"] == "toy" and tags["dataset.version"] == "v1"
    assert tags["dataset.digest.holdout"] == digests["holdout"]
    assert tags["gepa_lab.version"] and tags["gepa.run_kind"] == "parent"
    assert tags["promotion_eligible"] == "true"
    assert tags["promotion_reason"] == "holdout requirements satisfied"
    assert tags["stop_reason"] == "max_iterations"
    assert tags["submission.status"] == "not_requested"
    assert tags["rule.critical_non_regression"] == "passed"
    assert tags["mlflow_tracker.errors"] == "0"
    assert params["search.max_iterations"] == "5" and params["experiment_name"] == "toy"
    assert not any(k.startswith("hydra_choices") for k in params)
    assert params["notes.long"] == f"<{PARAM_MAX + 500} chars: see artifact config/long_params.json>"
    long_params = read_json_artifact(client, tracker.run_id, "config/long_params.json", tmp_path)
    assert long_params["notes.long"] == "x" * (PARAM_MAX + 500)  # whole, never truncated
    inputs = {{t.key: t.value for t in i.tags}["mlflow.data.context"]: i for i in parent.inputs.dataset_inputs}
    assert set(inputs) == {"feedback", "validation", "holdout"}
    for split, item in inputs.items():
        assert item.dataset.digest == digests[split][:DIGEST_MAX]
        assert {t.key: t.value for t in item.tags}["sha256"] == digests[split]
    stored = json.loads((run_dir / "mlflow_run.json").read_text())
    assert stored["run_id"] == tracker.run_id


def test_iteration_metrics_and_decision(finished, client, store, tmp_path, monkeypatch) -> None:
    tracker, _ = finished
    monkeypatch.setenv("MLFLOW_TRACKING_URI", store)  # load_table searches via the fluent API
    parent = client.get_run(tracker.run_id)
    history = client.get_metric_history(tracker.run_id, "best_validation_mean")
    assert [m.step for m in history] == [0, 1, 2, 3, 4]
    assert history[0].value == pytest.approx(0.8)
    for key in ("pool_size", "front_size", "metric_calls", "task_cost_usd", "reflection_cost_usd"):
        assert len(client.get_metric_history(tracker.run_id, key)) == 5, key
    m = parent.data.metrics
    assert m["holdout_delta"] == pytest.approx(0.6)
    assert m["baseline_holdout_mean"] == pytest.approx(0.2) and m["candidate_holdout_mean"] == pytest.approx(0.8)
    assert m["promotion_eligible"] == 1.0
    holdout = read_json_artifact(client, tracker.run_id, "decision/holdout_comparison.json", tmp_path)
    assert holdout["columns"] == ["case_id", "critical", "baseline", "candidate", "delta"]
    assert holdout["data"][0][:2] == ["ho1", True] and holdout["data"][0][4] == pytest.approx(0.6)
    rules = read_json_artifact(client, tracker.run_id, "decision/promotion_rules.json", tmp_path)
    assert [r[0] for r in rules["data"]] == ["candidate_improved_validation", "holdout_configured",
                                             "holdout_delta", "critical_non_regression"]
    paths = artifact_paths(client, tracker.run_id)
    assert {"plots/lineage.png", "plots/validation_heatmap.png", "plots/best_vs_metric_calls.png",
            "plots/holdout_deltas.png", "best/SKILL.md", "decision/result.json"} <= paths
    # The table is registered as one (mlflow.loggedArtifacts), so MLflow's own reader finds it.
    frame = client.load_table(parent.info.experiment_id, "decision/holdout_comparison.json",
                              run_ids=[tracker.run_id], extra_columns=["run_id"])
    assert list(frame["case_id"]) == ["ho1", "ho2", "ho3"] and set(frame["run_id"]) == {tracker.run_id}


def test_a_rejected_first_proposal_gets_no_validation_of_the_seed(store, client, tmp_path) -> None:
    class NoGain:
        def reflect(self, artifact: Any, component: str, records: list[dict[str, Any]]) -> Any:
            return {"steps": [*artifact.steps, "Also answer."]}

    tracker = toy_run(store, tmp_path, experiment="toy-first", iterations=1, reflector=NoGain())
    children = {c.data.tags["status"]: c for c in nested_runs(client, client.get_run(tracker.run_id))}
    assert set(children) == {"seed", "rejected"}
    rejected = children["rejected"].data.metrics
    assert "validation_mean" not in rejected and rejected["minibatch_child_sum"] == pytest.approx(0.4)
    assert children["seed"].data.metrics["validation_mean"] == pytest.approx(0.2)
    assert client.get_run(tracker.run_id).data.tags["promotion_reason"] == "no accepted candidate improved validation"


# -- failures, interruption, resume ----------------------------------------------------------

def test_evaluator_failure_marks_run_failed(store, client, tmp_path) -> None:
    # 15 per-case calls: the seed's validation, iterations 0 and 1, then a broken contract.
    tracker = MlflowTracker(store, "toy-fail", tmp_path)
    with pytest.raises(Exception, match="evaluation results"):
        toy_run(store, tmp_path, experiment="toy-fail", evaluator=ToyEvaluator(fail_after=15), tracker=tracker)
    parent = client.get_run(tracker.run_id)
    assert parent.info.status == "FAILED"
    assert parent.data.tags["stop_reason"] == "error" and "evaluation results" in parent.data.tags["error"]
    assert parent.data.tags["promotion_eligible"] == "false"
    children = nested_runs(client, parent)
    assert len(children) == 3 and {c.info.status for c in children} == {"FINISHED"}
    assert "error.txt" in artifact_paths(client, tracker.run_id)
    assert [m.step for m in client.get_metric_history(tracker.run_id, "pool_size")] == [0, 1]


def test_keyboard_interrupt_marks_run_killed_and_flushes(store, client) -> None:
    # No run dir (no checkpoints) and a large batch: only fail() can write the buffered metrics.
    tracker = MlflowTracker(store, "toy-kill", None, flush_every=100)
    with pytest.raises(KeyboardInterrupt):
        toy_run(store, None, experiment="toy-kill",  # type: ignore[arg-type]
                evaluator=ToyEvaluator(fail_after=15, error=KeyboardInterrupt()), tracker=tracker)
    parent = client.get_run(tracker.run_id)
    assert parent.info.status == "KILLED" and parent.data.tags["stop_reason"] == "interrupted"
    assert [m.step for m in client.get_metric_history(tracker.run_id, "pool_size")] == [0, 1]
    assert not client.search_runs([parent.info.experiment_id], "attributes.status = 'RUNNING'")


def test_resume_reuses_the_parent_run_without_duplicates(store, client, tmp_path) -> None:
    first = MlflowTracker(store, "toy-resume", tmp_path)
    with pytest.raises(KeyboardInterrupt):
        toy_run(store, tmp_path, experiment="toy-resume", tracker=first, after=(InterruptAfterIteration(1),))
    assert client.get_run(first.run_id).info.status == "KILLED"
    assert len(nested_runs(client, client.get_run(first.run_id))) == 3  # seed, iterations 0 and 1
    second = toy_run(store, tmp_path, experiment="toy-resume", resume=True)  # replays iteration 1
    assert second.run_id == first.run_id
    parent = client.get_run(first.run_id)
    assert parent.info.status == "FINISHED" and parent.data.tags["resume_count"] == "1"
    children = nested_runs(client, parent)
    assert len(children) == 1 + len(proposal_events(tmp_path)) == 6  # seed + 5 proposals, none twice
    assert len({c.data.tags["gepa.key"] for c in children}) == 6
    assert [m.step for m in client.get_metric_history(first.run_id, "pool_size")] == [0, 1, 2, 3, 4]
    assert second.errors == []
    # The resumed tracker knows the earlier pool: the lineage covers seed + accepted child.
    assert [n["parent_id"] is None for n in second._pool] == [True, False]


def test_hard_kill_loses_no_iteration_metrics(store, client, tmp_path) -> None:
    """SIGKILL / OOM: no fail() call, buffered metrics gone from memory. The checkpoint kept them."""
    first = MlflowTracker(store, "toy-hard", tmp_path)
    first.fail = lambda error: None  # type: ignore[method-assign]  # the process just dies
    with pytest.raises(KeyboardInterrupt):
        toy_run(store, tmp_path, experiment="toy-hard", tracker=first, after=(InterruptAfterIteration(2),))
    assert client.get_run(first.run_id).info.status == "RUNNING"  # as a killed process leaves it
    assert client.get_metric_history(first.run_id, "pool_size") == []  # never flushed
    second = toy_run(store, tmp_path, experiment="toy-hard", resume=True)
    assert second.run_id == first.run_id
    assert [m.step for m in client.get_metric_history(first.run_id, "pool_size")] == [0, 1, 2, 3, 4]
    assert client.get_run(first.run_id).info.status == "FINISHED"
    assert len(nested_runs(client, client.get_run(first.run_id))) == 6


def test_resume_of_a_run_killed_before_its_first_checkpoint(store, client, tmp_path) -> None:
    class InterruptAtSeed:
        def candidate(self, info: Any) -> None:
            raise KeyboardInterrupt

    first = MlflowTracker(store, "toy-early", tmp_path)
    with pytest.raises(KeyboardInterrupt):
        toy_run(store, tmp_path, experiment="toy-early", tracker=first, after=(InterruptAtSeed(),))
    assert [c.data.tags["status"] for c in nested_runs(client, client.get_run(first.run_id))] == ["seed"]
    second = toy_run(store, tmp_path, experiment="toy-early", resume=True)  # starts over from the seed
    assert second.run_id == first.run_id
    children = nested_runs(client, client.get_run(first.run_id))
    assert len(children) == 1 + len(proposal_events(tmp_path)) == 6
    assert [n["parent_id"] is None for n in second._pool] == [True, False]


def test_unreachable_server_fails_before_any_evaluation(tmp_path) -> None:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]  # closed again: nothing listens there
    evaluator = ToyEvaluator()
    with pytest.raises(MlflowTrackingError, match="not reachable"):
        toy_run(f"http://127.0.0.1:{port}", tmp_path, evaluator=evaluator)
    assert evaluator.calls == 0


def test_logging_errors_are_counted_not_fatal(store, client, tmp_path, caplog) -> None:
    tracker = MlflowTracker(store, "toy-flaky", tmp_path)
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
    toy_run(store, tmp_path, experiment="toy-flaky", tracker=tracker)
    parent = client.get_run(tracker.run_id)
    assert parent.info.status == "FINISHED"
    assert parent.data.tags["mlflow_tracker.errors"] == "1"
    assert "store hiccup" in parent.data.tags["mlflow_tracker.first_error"]
    assert len(nested_runs(client, parent)) == 5  # one proposal missing, and reported
    assert "MLflow logging failed" in caplog.text


# -- the CLI (needs the wiring in gepa_lab.config / cli.py) -----------------------------------

def _mlflow_wired() -> bool:
    from gepa_lab.config import GROUP_SCHEMAS

    return "mlflow_schema" in GROUP_SCHEMAS.get("tracking", {})


@pytest.mark.skipif(not _mlflow_wired(), reason="tracking=mlflow is not registered in gepa_lab.config yet")
def test_recipe_cli_run_logs_every_candidate(tmp_path) -> None:
    """Issue 3's acceptance: one `experiment=recipe` run, default store (mlflow.db in the working
    directory) -> one parent run whose nested runs = proposals in events.jsonl + the seed."""
    import os
    import subprocess
    import sys

    from mlflow import MlflowClient

    env = {k: v for k, v in os.environ.items() if k != "MLFLOW_TRACKING_URI"}
    done = subprocess.run([sys.executable, "-m", "gepa_lab", "experiment=recipe", "tracking=mlflow"],
                          cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    run_dir = Path(next(line.split(None, 1)[1] for line in done.stdout.splitlines()
                        if line.strip().startswith("record")).strip())
    run_dir = run_dir if run_dir.is_absolute() else tmp_path / run_dir
    client = MlflowClient(f"sqlite:///{tmp_path / 'mlflow.db'}")
    experiment = client.get_experiment_by_name("gepa-lab")
    parents = client.search_runs([experiment.experiment_id], "tags.`gepa.run_kind` = 'parent'")
    assert len(parents) == 1
    parent = parents[0]
    tags = parent.data.tags
    assert parent.info.status == "FINISHED" and tags["experiment"] == "recipe"
    assert tags["hydra.experiment"] == "recipe" and tags["hydra.tracking"] == "mlflow"
    for key in ("dataset.id", "dataset.version", "dataset.digest.holdout", "random_seed", "gepa_lab.version",
                "promotion_eligible", "promotion_reason", "stop_reason", "submission.status"):
        assert tags.get(key), key
    assert len(nested_runs(client, parent)) == len(proposal_events(run_dir)) + 1
    assert json.loads((run_dir / "mlflow_run.json").read_text())["run_id"] == parent.info.run_id


# -- configuration and helpers ---------------------------------------------------------------

def test_default_uri_is_absolute_sqlite_in_cwd(tmp_path, monkeypatch) -> None:
    monkeypatch.chdir(tmp_path)
    assert default_uri() == f"sqlite:///{tmp_path.resolve()}/mlflow.db"
    monkeypatch.setenv("MLFLOW_TRACKING_URI", "http://127.0.0.1:5000")
    assert default_uri() == "http://127.0.0.1:5000"


def test_tracking_group_composes_to_the_schema(tmp_path) -> None:
    from hydra import compose, initialize_config_dir
    from hydra.core.config_store import ConfigStore
    from omegaconf import OmegaConf

    from gepa_lab.config import register_configs

    register_configs()
    ConfigStore.instance().store(group="tracking", name="mlflow_schema", node=MlflowTrackingConfig)
    with initialize_config_dir(config_dir=str(CONF_DIR), version_base="1.3"):
        cfg = compose(config_name="config", overrides=["tracking=mlflow", "tracking.uri=sqlite:///x.db"])
    conf = OmegaConf.to_object(cfg.tracking)
    assert isinstance(conf, MlflowTrackingConfig)
    assert conf == MlflowTrackingConfig(uri="sqlite:///x.db")
    tracker = build_tracker(conf, "recipe", tmp_path)
    assert (tracker.uri, tracker.mlflow_experiment, tracker.experiment_name) == ("sqlite:///x.db", "gepa-lab", "recipe")


def test_flatten_and_split_params() -> None:
    flat = flatten_config({"a": {"b": 1, "c": [1, 2], "d": None, "e": True, "f": {}}, "g": "x"})
    assert flat == {"a.b": "1", "a.c": "[1, 2]", "a.d": "null", "a.e": "true", "a.f": "{}", "g": "x"}
    params, long_values = split_params({"short": "v", "long": "y" * (PARAM_MAX + 1)})
    assert params["short"] == "v" and long_values == {"long": "y" * (PARAM_MAX + 1)}
    assert "config/long_params.json" in params["long"]
