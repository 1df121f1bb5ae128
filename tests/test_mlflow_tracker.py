"""MLflow tracking: the parent run and its decision, pool members in the candidates experiment,
every proposal as a table row, the saved views the links open, the logging thread, failure
states, resume, config.

Toy searches (`fixtures_mlflow`) on one SQLite store per module; each test finds its own runs
by run id. Five iterations see every proposal status: accepted, rejected, reflection-rejected
twice, duplicate. The evaluator is called once per case: the seed's validation is calls 1-3,
iteration 0 (accepted) 4-10, iteration 1 (rejected) 11-14, then two calls per iteration.
"""

from __future__ import annotations

import ast
import builtins
import contextlib
import json
import math
import os
import pathlib
import re
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from fixtures_mlflow import (
    IMPROVED,
    InterruptAfterIteration,
    ToyEvaluator,
    artifact_paths,
    candidate_runs,
    proposal_events,
    read_artifact,
    steps,
    table_rows,
    toy_dataset,
    toy_run,
)

from gepa_lab import EvaluatorError, report
from gepa_lab.core.errors import TrackingError
from gepa_lab.tracking import mlflow_links, mlflow_logger, mlflow_tracker, mlflow_values
from gepa_lab.tracking.mlflow_tracker import MlflowTracker, default_uri, run_links
from gepa_lab.tracking.mlflow_values import DIGEST_MAX, PARAM_MAX, flatten_config, split_params

pytestmark = pytest.mark.usefixtures("mlflow_env")

ROOT = Path(__file__).resolve().parents[1]
SERIES = ("search/best_validation_mean", "search/pool_size", "search/front_size", "search/metric_calls",
          "search/proposals", "search/cost_usd", "search/task_cost_usd", "search/reflection_cost_usd")
ALL_STATUSES = ["accepted", "duplicate", "reflection_rejected", "reflection_rejected", "rejected"]
PARENT_FILES = {"lineage.png", "validation_heatmap.png", "holdout_deltas.png",
                "winner.md", "winner.json", "winner_diff.txt", "result.json", "holdout_comparison.json",
                "promotion_rules.json", "proposals.json", "seed.json", "config/resolved_config.json"}
KILL_SCRIPT = Path(__file__).parent / "scripts" / "mlflow_killable_run.py"


class InterruptAt:
    """A tracker that raises KeyboardInterrupt from one hook (the first time it is called)."""

    def __init__(self, hook: str):
        setattr(self, hook, self._interrupt)

    def _interrupt(self, *args: Any) -> None:
        raise KeyboardInterrupt


def statuses(client: Any, run_id: str, tmp: Path) -> list[str]:
    return sorted(row["status"] for row in table_rows(client, run_id, "proposals.json", tmp))


def by_key(client: Any, run_id: str) -> dict[str, Any]:
    return {c.data.tags["gepa.key"]: c for c in candidate_runs(client, run_id)}


@pytest.fixture(scope="module")
def finished(mlflow_uri: str, tmp_path_factory: pytest.TempPathFactory) -> tuple[MlflowTracker, Path]:
    run_dir = tmp_path_factory.mktemp("run")
    tracker = toy_run(mlflow_uri, run_dir, run_config={"notes": {"long": "x" * (PARAM_MAX + 500)}})
    return tracker, run_dir


# -- a finished run --------------------------------------------------------------------------

def test_parents_alone_in_their_experiment_pool_members_beside_it(finished, mlflow_client, tmp_path) -> None:
    tracker, run_dir = finished
    client = mlflow_client
    parent = client.get_run(tracker.run_id)
    assert parent.info.status == "FINISHED"
    assert parent.info.run_name == f"toy-seed1-{parent.data.tags['gepa.experiment_id'][:8]}"  # re-runs differ
    experiment = client.get_experiment(parent.info.experiment_id)
    assert experiment.name == "gepa-lab"
    everything = client.search_runs([experiment.experiment_id], "", max_results=1000)
    assert {r.data.tags["gepa.run_kind"] for r in everything} == {"parent"}  # no candidate in the way
    # Pool members: the seed and the accepted child, in the candidates experiment.
    children = by_key(client, tracker.run_id)
    assert sorted(children) == ["iteration-0", "seed"]
    assert client.get_experiment_by_name("gepa-lab-candidates").experiment_id == \
        children["seed"].info.experiment_id == parent.data.tags["gepa.candidates_experiment_id"]
    seed, accepted = children["seed"], children["iteration-0"]
    assert {c.info.status for c in children.values()} == {"FINISHED"}
    assert accepted.data.tags["mlflow.parentRunId"] == tracker.run_id  # MLflow's "Parent run" link
    assert accepted.data.tags["parent_id"] == seed.data.tags["candidate_id"]
    assert (accepted.data.tags["component"], accepted.data.tags["iteration"]) == ("steps", "0")
    assert accepted.data.tags["is_best"] == "true" and "is_best" not in seed.data.tags
    assert accepted.data.metrics["minibatch_parent_sum"] == pytest.approx(0.4)
    assert accepted.data.metrics["minibatch_child_sum"] == pytest.approx(1.6)
    assert accepted.data.metrics["validation_mean"] == pytest.approx(0.8)
    assert seed.data.metrics["validation_mean"] == pytest.approx(0.2)
    assert (accepted.data.tags["experiment"], accepted.data.tags["random_seed"]) == ("toy", "1")
    # Every proposal is a row of the parent's proposals table, as in the run record.
    rows = table_rows(client, tracker.run_id, "proposals.json", tmp_path)
    events = proposal_events(run_dir)
    assert [r["iteration"] for r in rows] == list(range(len(events))) == [0, 1, 2, 3, 4]
    assert sorted(r["status"] for r in rows) == ALL_STATUSES
    assert rows[0]["candidate_id"] == accepted.data.tags["candidate_id"] and rows[0]["validation_mean"] == 0.8
    assert rows[1]["reason"] == "strict_minibatch_improvement" and rows[1]["validation_mean"] is None
    assert rows[1]["minibatch_child_sum"] == rows[1]["minibatch_parent_sum"] == pytest.approx(1.6)  # not greater


def test_candidate_files_preview_in_the_browser(finished, mlflow_client, tmp_path) -> None:
    tracker, _ = finished
    client = mlflow_client
    children = by_key(client, tracker.run_id)
    accepted, seed = children["iteration-0"].info.run_id, children["seed"].info.run_id
    files = {"candidate.md", "candidate.json", "diff.txt"}  # the same in every pool member's run
    assert artifact_paths(client, accepted) == artifact_paths(client, seed) == files
    assert f"+3. {IMPROVED}" in read_artifact(client, accepted, "diff.txt", tmp_path)  # .txt: MLflow previews it
    assert f"3. {IMPROVED}" in read_artifact(client, accepted, "candidate.md", tmp_path)
    details = json.loads(read_artifact(client, accepted, "candidate.json", tmp_path))
    assert IMPROVED in details["artifact"]["steps"]
    assert details["reflection"]["status"] == "accepted" and details["reflection"]["records"][0]["case_id"] == "case-1"
    minibatch = [dict(zip(details["minibatch"]["columns"], row, strict=True)) for row in details["minibatch"]["data"]]
    assert [(r["parent_score"], r["child_score"]) for r in minibatch] == [(0.2, 0.8), (0.2, 0.8)]
    assert details["validation"]["columns"][:2] == ["case_id", "score"]
    assert [row[:2] for row in details["validation"]["data"]] == [["val1", 0.8], ["val2", 0.8], ["val3", 0.8]]
    seed_details = json.loads(read_artifact(client, seed, "candidate.json", tmp_path))
    assert set(seed_details) == {"artifact", "validation"}


def test_parent_tags_params_inputs_and_links(finished, mlflow_client) -> None:
    tracker, run_dir = finished
    client = mlflow_client
    parent = client.get_run(tracker.run_id)
    tags, params = parent.data.tags, parent.data.params
    digests = toy_dataset().digests()
    assert (tags["experiment"], tags["random_seed"], tags["gepa.run_kind"]) == ("toy", "1", "parent")
    assert (tags["hydra.experiment"], tags["hydra.tracking"]) == ("toy", "mlflow")
    assert [tags[f"dataset.digest.{s}"] for s in digests] == list(digests.values())
    assert tags["gepa_lab.version"] == __import__("gepa_lab").__version__
    head = subprocess.run(["git", "-C", str(ROOT), "rev-parse", "HEAD"], capture_output=True, text=True)
    assert tags.get("mlflow.source.git.commit") == (head.stdout.strip() or None)
    assert tags["simulated"] == "false" and "not an LM" not in tags["mlflow.note.content"]
    assert params["search.max_iterations"] == "5" and params["experiment_name"] == "toy"
    assert not any(k.startswith("hydra_choices") for k in params)
    assert params["notes.long"] == f"<{PARAM_MAX + 500} chars: see artifact config/long_params.json>"
    inputs = {{t.key: t.value for t in i.tags}["mlflow.data.context"]: i for i in parent.inputs.dataset_inputs}
    assert set(inputs) == {"feedback", "validation", "holdout"}
    for split, item in inputs.items():
        assert item.dataset.digest == digests[split][:DIGEST_MAX]
        assert {t.key: t.value for t in item.tags}["sha256"] == digests[split]
    stored = json.loads((run_dir / "mlflow_run.json").read_text())
    assert stored == {"run_id": tracker.run_id, "experiment_id": parent.info.experiment_id,
                      "tracking_uri": tracker.uri}
    links = json.loads((run_dir / "result.json").read_text())["links"]
    port = mlflow_links.ui_port()  # the URL reaches the server the command starts
    assert links == {"mlflow_run_id": tracker.run_id, "mlflow_experiment_id": parent.info.experiment_id,
                     "mlflow_tracking_uri": tracker.uri, "mlflow_run_name": parent.info.run_name,
                     "mlflow_run_url": f"http://127.0.0.1:{port}/#/experiments/{parent.info.experiment_id}/runs?"
                                       "viewStateShareKey=gepa-lab-decisions&workflowType=machine_learning",
                     "mlflow_ui_command": f"mlflow ui --backend-store-uri {tracker.uri} --port {port}"}


def test_decision_is_readable_and_compares_first(finished, mlflow_client, tmp_path) -> None:
    tracker, run_dir = finished
    client = mlflow_client
    parent = client.get_run(tracker.run_id)
    m, tags = parent.data.metrics, parent.data.tags
    # MLflow's comparison plots a run's first-created metric by default: the holdout delta.
    assert next(iter(m)) == "holdout_delta"
    assert [x.value for x in client.get_metric_history(tracker.run_id, "holdout_delta")][-1] == pytest.approx(0.6)
    assert math.isnan(client.get_metric_history(tracker.run_id, "holdout_delta")[0].value)  # until decided
    assert m["seed_holdout_mean"] == pytest.approx(0.2) and m["winner_holdout_mean"] == pytest.approx(0.8)
    assert m["promotion_eligible"] == 1.0 and m["rule.holdout_delta"] == 1.0
    assert m["total_metric_calls"] == 26 and m["total_cost_usd"] == pytest.approx(0.026)  # binary noise gone
    assert not {"total_proposals", "candidate_count", "metric_calls", "cost_usd"} & set(m)  # one name per quantity
    for metric in SERIES:  # each step exactly once
        assert [x.step for x in client.get_metric_history(tracker.run_id, metric)] == [0, 1, 2, 3, 4], metric
    calls = {x.step: x.value for x in client.get_metric_history(tracker.run_id, "search/metric_calls")}
    assert calls == {0: 10, 1: 14, 2: 16, 3: 18, 4: 20}  # the search's; total_metric_calls adds the holdout's
    winner = by_key(client, tracker.run_id)["iteration-0"].data.tags["candidate_id"]
    assert (tags["winner"], tags["promotion_eligible"], tags["stop_reason"]) == (winner[:12], "true", "max_iterations")
    assert tags["holdout_delta_ci"].startswith("+0.6000 [+0.6000, +0.6000] 95% CI")
    assert tags["mlflow_tracker.errors"] == "0" and "mlflow_tracker.first_error" not in tags
    description = tags["mlflow.note.content"]
    assert description.startswith("**ELIGIBLE**: holdout requirements satisfied.")
    assert "20 metric calls in the search, 26 in all" in description
    candidates = tags["gepa.candidates_experiment_id"]
    assert f"(#/experiments/{candidates}/runs?viewStateShareKey=gepa-lab-pool-{tracker.run_id}&" in description
    assert f"(#/experiments/{parent.info.experiment_id}/runs/{tracker.run_id}/artifacts/winner_diff.txt?" in description
    assert PARENT_FILES <= artifact_paths(client, tracker.run_id)  # at the root: MLflow's compare shows them
    assert f"+3. {IMPROVED}" in read_artifact(client, tracker.run_id, "winner_diff.txt", tmp_path)
    result = json.loads(read_artifact(client, tracker.run_id, "result.json", tmp_path))
    assert result["best_id"] == winner and result["proposals"] == 5
    logged = json.loads(tags["mlflow.loggedArtifacts"])  # MLflow tables: load_table and the UI read them
    assert {t["path"] for t in logged} == {"holdout_comparison.json", "promotion_rules.json", "proposals.json"}
    holdout = table_rows(client, tracker.run_id, "holdout_comparison.json", tmp_path)
    assert [(r["case_id"], r["critical"]) for r in holdout] == [("ho1", True), ("ho2", False), ("ho3", False)]
    expected = json.loads((run_dir / "result.json").read_text())["promotion_rules"]
    rules = table_rows(client, tracker.run_id, "promotion_rules.json", tmp_path)
    assert [r["rule"] for r in rules] == [r["rule"] for r in expected] and len(expected) >= 4
    assert {k: v for k, v in tags.items() if k.startswith("rule.")} == {
        f"rule.{r['rule']}": r.get("status") or ("passed" if r["passed"] else "failed") for r in expected}


def test_links_open_saved_views(finished, mlflow_client) -> None:
    """The run's link opens every parent run with the decision columns, newest first: a named view
    MLflow's "Views" menu lists; its pool members' view sorts them by validation (the winner first)."""
    tracker, _ = finished
    parents, candidates = (mlflow_client.get_experiment_by_name(n).tags for n in ("gepa-lab", "gepa-lab-candidates"))
    saved = json.loads(parents["mlflow.sharedViewState.gepa-lab-decisions"])
    assert saved["name"] == "gepa-lab decisions" and saved["createdAt"] > 0
    decisions = json.loads(saved["state"])
    assert decisions["columnOrder"][:4] == ["metrics.`holdout_delta`", "tags.`holdout_delta_ci`",
                                            "tags.`promotion_eligible`", "tags.`winner`"]
    assert {"metrics.`total_cost_usd`", "metrics.`total_metric_calls`", "tags.`conclusion`"} <= set(
        decisions["selectedColumns"])
    assert decisions["searchFilter"] == "tags.`gepa.run_kind` = 'parent'"
    assert (decisions["orderByKey"], decisions["orderByAsc"]) == ("attributes.start_time", False)
    pool = json.loads(candidates[f"mlflow.sharedViewState.gepa-lab-pool-{tracker.run_id}"])
    assert pool["searchFilter"] == f"tags.`gepa.parent_run_id` = '{tracker.run_id}'"
    assert (pool["orderByKey"], pool["orderByAsc"]) == ("metrics.`validation_mean`", False)
    assert pool["selectedColumns"][:2] == ["metrics.`validation_mean`", "tags.`is_best`"]


def test_plots_read(finished, tmp_path) -> None:
    """Lineage labels never overlap nor leave the axes; the heatmap frames the winner's row; the
    holdout plot shades the interval."""
    from matplotlib.patches import Rectangle

    from gepa_lab.tracking import plots

    tracker, run_dir = finished
    nodes = [{"id": f"cand{i:02d}xxxx", "parent_id": None if i == 0 else "cand00xxxx", "iteration": None if i == 0
              else i, "validation_mean": 0.5 + 0.001 * (i % 3)} for i in range(30)]  # crowded: labels would collide
    figure = plots.lineage_figure(nodes, "cand07xxxx")
    plots.png(figure)
    axes = figure.axes[0]
    renderer = figure.canvas.get_renderer()
    boxes = [t.get_window_extent(renderer) for t in axes.texts]
    inside = axes.get_window_extent(renderer)
    assert 0 < len(boxes) < 30 and axes.texts[0].get_text() == "cand07xx"  # the winner first
    assert all(inside.x0 <= b.x0 and b.x1 <= inside.x1 and inside.y0 <= b.y0 and b.y1 <= inside.y1 for b in boxes)
    assert not any(a.overlaps(b) for i, a in enumerate(boxes) for b in boxes[i + 1:])
    heat = plots.heatmap_figure(["s", "w", "x"], ["c1", "c2"], [[0.1, 0.2], [0.9, 1.0], [0.5, None]], best_id="w")
    frames = [p for p in heat.axes[0].patches if isinstance(p, Rectangle) and p.get_edgecolor()[:3] != (0, 0, 0)]
    assert len(frames) == 1 and frames[0].get_y() == 0.5  # around row 1
    assert [t.get_text() for t in heat.axes[0].get_yticklabels()] == ["s", "winner w", "x"]
    deltas = plots.holdout_delta_figure([{"case_id": "a", "delta": 0.1, "critical": True},
                                         {"case_id": "b", "delta": 0.3, "critical": False}], [0.05, 0.35], 0.95)
    labels = [t.get_text() for t in deltas.axes[0].get_legend().get_texts()]
    assert labels == ["mean +0.2000", "95% interval [+0.0500, +0.3500]"]


# -- what the engine waits for ---------------------------------------------------------------

def test_rounds_are_written_while_the_run_goes_on(mlflow_uri, mlflow_client, tmp_path) -> None:
    """While iteration 3 runs (its hook waits here), MLflow gets iterations 0-2 (metrics, proposals
    table): the logger writes what it has when nothing else is queued; the engine never waited."""
    seen: dict[str, Any] = {}

    class Watch:
        def __init__(self, tracker: MlflowTracker):
            self.tracker = tracker

        def iteration(self, stats: Any) -> None:
            if stats.iteration != 3:
                return
            deadline = time.monotonic() + 120
            while time.monotonic() < deadline:
                if not (tmp_path / "mlflow_run.json").is_file():  # the logger has not created the run yet
                    time.sleep(0.2)
                    continue
                run_id = json.loads((tmp_path / "mlflow_run.json").read_text())["run_id"]
                rows = _rows_or_none(mlflow_client, run_id, tmp_path / "dl")
                if rows and len(rows) >= 3 and steps(mlflow_client, run_id, "search/pool_size")[:3] == [0, 1, 2]:
                    seen.update(rows=rows, status=mlflow_client.get_run(run_id).info.status)
                    return
                time.sleep(0.2)

    tracker = MlflowTracker(uri=mlflow_uri)
    toy_run(mlflow_uri, tmp_path, experiment="toy-rounds", tracker=tracker, after=(Watch(tracker),))
    assert seen["status"] == "RUNNING" and [r["iteration"] for r in seen["rows"]][:3] == [0, 1, 2]


def _rows_or_none(client: Any, run_id: str, tmp: Path) -> list[dict[str, Any]] | None:
    try:
        return table_rows(client, run_id, "proposals.json", tmp)
    except Exception:  # not written yet
        return None


def test_hooks_return_before_mlflow_has_the_data(mlflow_uri, tmp_path) -> None:
    """The engine's side only hands data over: a logging process that is paused (SIGSTOP) does
    not stop the search; the run completes in MLflow once it resumes."""
    from mlflow import MlflowClient

    tracker = MlflowTracker(uri=mlflow_uri)
    paused: list[int] = []

    class Pause:
        def iteration(self, stats: Any) -> None:
            if stats.iteration == 0:
                pid = tracker.process.pid  # the test reaches in: which process to pause
                os.kill(pid, signal.SIGSTOP)
                paused.append(pid)
            if stats.iteration == 4:
                os.kill(paused[0], signal.SIGCONT)

    toy_run(mlflow_uri, tmp_path, experiment="toy-paused", tracker=tracker, after=(Pause(),))
    assert paused and tracker.errors == []
    assert MlflowClient(mlflow_uri).get_run(tracker.run_id).info.status == "FINISHED"


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
    assert statuses(mlflow_client, tracker.run_id, tmp_path / "dl") == ["accepted", "rejected"]
    assert sorted(by_key(mlflow_client, tracker.run_id)) == ["iteration-0", "seed"]
    assert [p for p in artifact_paths(mlflow_client, tracker.run_id) if p.startswith("interruptions/")][0].endswith(
        "-EvaluatorError.txt")
    assert steps(mlflow_client, tracker.run_id, "search/pool_size") == [0, 1]


def test_keyboard_interrupt_marks_run_killed(mlflow_uri, mlflow_client) -> None:
    tracker = MlflowTracker(uri=mlflow_uri)  # no run dir: no checkpoints, nothing to resume
    with pytest.raises(KeyboardInterrupt):
        toy_run(mlflow_uri, None, experiment="toy-kill", tracker=tracker,
                evaluator=ToyEvaluator(fail_after=15, error=KeyboardInterrupt()))
    parent = mlflow_client.get_run(tracker.run_id)
    assert parent.info.status == "KILLED" and parent.data.tags["stop_reason"] == "interrupted"
    assert steps(mlflow_client, tracker.run_id, "search/pool_size") == [0, 1]


def test_resume_reuses_the_parent_run_without_duplicates(mlflow_uri, mlflow_client, tmp_path, monkeypatch) -> None:
    first = MlflowTracker(uri=mlflow_uri)
    with pytest.raises(KeyboardInterrupt):  # after iteration 1 is logged, before its checkpoint
        toy_run(mlflow_uri, tmp_path, experiment="toy-resume", tracker=first, after=(InterruptAfterIteration(1),))
    assert mlflow_client.get_run(first.run_id).info.status == "KILLED"
    assert statuses(mlflow_client, first.run_id, tmp_path / "dl1") == ["accepted", "rejected"]

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
    assert "mlflow_tracker.missing_iterations" not in parent.data.tags
    rows = table_rows(mlflow_client, first.run_id, "proposals.json", tmp_path / "dl2")
    assert [r["iteration"] for r in rows] == [0, 1, 2, 3, 4] and len(proposal_events(tmp_path)) == 5
    assert sorted(by_key(mlflow_client, first.run_id)) == ["iteration-0", "seed"]  # none twice
    for metric in SERIES:
        assert [m.step for m in mlflow_client.get_metric_history(first.run_id, metric)] == [0, 1, 2, 3, 4]
    # The winner was logged by the first process; the resumed one still tags it.
    assert by_key(mlflow_client, first.run_id)["iteration-0"].data.tags["is_best"] == "true"
    assert "lineage.png" in artifact_paths(mlflow_client, first.run_id)


@pytest.mark.slow
def test_sigkill_of_the_engine_loses_nothing_handed_over(mlflow_uri, mlflow_client, tmp_path) -> None:
    """SIGKILL of the gepa_lab process at evaluator call 17 (iteration 3's first): the logging
    process writes iterations 0-2 and ends the run KILLED (stop_reason killed); the resume
    continues the same run from there."""
    killed = subprocess.run([sys.executable, str(KILL_SCRIPT), mlflow_uri, str(tmp_path), "17"],
                            capture_output=True, text=True, timeout=120)
    assert killed.returncode == -9, killed.stderr[-3000:]  # really SIGKILLed
    run_id = json.loads((tmp_path / "mlflow_run.json").read_text())["run_id"]
    deadline = time.monotonic() + 120  # the logging process still writes what it was handed
    while mlflow_client.get_run(run_id).info.status == "RUNNING" and time.monotonic() < deadline:
        time.sleep(0.2)
    parent = mlflow_client.get_run(run_id)
    assert parent.info.status == "KILLED" and parent.data.tags["stop_reason"] == "killed"
    assert steps(mlflow_client, run_id, "search/pool_size") == [0, 1, 2]
    assert [r["iteration"] for r in table_rows(mlflow_client, run_id, "proposals.json", tmp_path / "dl")] == [0, 1, 2]
    resumed = subprocess.run([sys.executable, str(KILL_SCRIPT), mlflow_uri, str(tmp_path), "0", "--resume"],
                             capture_output=True, text=True, timeout=120)
    assert resumed.returncode == 0, resumed.stderr[-3000:]
    assert resumed.stdout.split() == [run_id, "0"]  # same run, no logging errors
    for metric in SERIES:
        assert [m.step for m in mlflow_client.get_metric_history(run_id, metric)] == [0, 1, 2, 3, 4]
    parent = mlflow_client.get_run(run_id)
    assert parent.info.status == "FINISHED" and parent.data.tags["resume_count"] == "1"
    assert statuses(mlflow_client, run_id, tmp_path / "dl2") == sorted(ALL_STATUSES)


@pytest.mark.slow
def test_sigkill_of_engine_and_logger_is_resumed_and_any_gap_named(mlflow_uri, mlflow_client, tmp_path) -> None:
    """Both processes SIGKILLed: what the logger had not written is lost to MLflow (the run
    record has it); the resume finishes the same run and a tag names any missing iterations."""
    killed = subprocess.run([sys.executable, str(KILL_SCRIPT), mlflow_uri, str(tmp_path), "19", "--with-logger"],
                            capture_output=True, text=True, timeout=120)
    assert killed.returncode == -9, killed.stderr[-3000:]  # (after the logger created the parent run)
    run_id = json.loads((tmp_path / "mlflow_run.json").read_text())["run_id"]
    assert mlflow_client.get_run(run_id).info.status == "RUNNING"
    resumed = subprocess.run([sys.executable, str(KILL_SCRIPT), mlflow_uri, str(tmp_path), "0", "--resume"],
                             capture_output=True, text=True, timeout=120)
    assert resumed.returncode == 0, resumed.stderr[-3000:]
    parent = mlflow_client.get_run(run_id)
    assert parent.info.status == "FINISHED"
    logged = steps(mlflow_client, run_id, "search/pool_size")
    assert len(logged) == len(set(logged)) and logged[-1] == 4  # nothing twice; the resumed part is there
    gap = sorted(set(range(5)) - set(logged))
    assert bool(gap) == ("mlflow_tracker.missing_iterations" in parent.data.tags)


def test_resume_of_a_run_killed_before_its_first_checkpoint(mlflow_uri, mlflow_client, tmp_path,
                                                            monkeypatch) -> None:
    run_dir = tmp_path / "run"
    first = MlflowTracker(uri=mlflow_uri)
    with pytest.raises(KeyboardInterrupt):  # the seed is in MLflow, not in a checkpoint
        toy_run(mlflow_uri, run_dir, experiment="toy-early", tracker=first, after=(InterruptAt("candidate"),))
    assert sorted(by_key(mlflow_client, first.run_id)) == ["seed"]
    # Resumed from another directory with the default URI: the run file names the store.
    monkeypatch.chdir(tmp_path)
    second = toy_run(mlflow_uri, run_dir, experiment="toy-early", resume=True, tracker=MlflowTracker())
    assert (second.run_id, second.uri) == (first.run_id, mlflow_uri)  # the seed was scored again
    assert sorted(by_key(mlflow_client, first.run_id)) == ["iteration-0", "seed"]
    assert statuses(mlflow_client, first.run_id, tmp_path / "dl") == sorted(ALL_STATUSES)
    assert not (tmp_path / "mlflow.db").exists()


def test_a_run_killed_before_anything_reached_mlflow_resumes_into_a_new_run(mlflow_uri, mlflow_client,
                                                                           tmp_path) -> None:
    first = MlflowTracker(uri=mlflow_uri)
    with pytest.raises(KeyboardInterrupt):  # a tracker before it stops the run: MLflow never started
        toy_run(mlflow_uri, tmp_path, experiment="toy-nothing", tracker=first, before=(InterruptAt("start"),))
    assert first.run_id is None and not (tmp_path / "mlflow_run.json").exists()
    second = toy_run(mlflow_uri, tmp_path, experiment="toy-nothing", resume=True)
    parents = mlflow_client.search_runs([second.state['experiment_id']], "tags.experiment = 'toy-nothing'")
    assert [p.info.run_id for p in parents] == [second.run_id]
    assert parents[0].info.status == "FINISHED" and "resume_count" not in parents[0].data.tags


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
    with pytest.raises(TrackingError, match="cannot write the MLflow store" if kind == "folder is a file"
                       else "cannot log to MLflow at nosuch://store: "):
        toy_run(uri, tmp_path / "run", evaluator=evaluator)
    assert evaluator.calls == 0


def test_logging_errors_are_counted_not_fatal(mlflow_uri, mlflow_client, tmp_path, caplog) -> None:
    """Every artifact upload fails (the artifact location is under a file); the run finishes and
    says what is missing."""
    (tmp_path / "file").write_text("not a folder")
    tracker = MlflowTracker(uri=mlflow_uri, experiment="broken-artifacts",
                            artifact_location=(tmp_path / "file" / "artifacts").as_uri())
    toy_run(mlflow_uri, tmp_path / "run", experiment="toy-flaky", tracker=tracker)
    parent = mlflow_client.get_run(tracker.run_id)
    assert parent.info.status == "FINISHED" and parent.data.metrics["holdout_delta"] == pytest.approx(0.6)
    assert int(parent.data.tags["mlflow_tracker.errors"]) == len(tracker.errors) >= 2
    assert parent.data.tags["mlflow_tracker.first_error"].startswith("log the config and seed files: NotADirectoryError")
    assert "MLflow run" in caplog.text and "logging call(s) failed" in caplog.text


def test_a_dead_logger_never_stops_the_search(mlflow_uri, tmp_path, caplog) -> None:
    tracker = MlflowTracker(uri=mlflow_uri)

    class KillLogger:
        def iteration(self, stats: Any) -> None:
            if stats.iteration == 1:
                tracker.process.kill()  # the test reaches in: which process to kill
                tracker.process.wait()

    toy_run(mlflow_uri, tmp_path, experiment="toy-dead-logger", tracker=tracker, after=(KillLogger(),))
    assert json.loads((tmp_path / "result.json").read_text())["promotion_eligible"] is True  # the run finished
    assert tracker.errors and "the MLflow logging process ended" in tracker.errors[-1]
    assert "MLflow logging stopped" in caplog.text


@pytest.mark.slow
def test_recipe_cli_run_logs_every_proposal(tmp_path) -> None:
    """One `experiment=recipe` run -> one parent run; its pool members and the proposals table
    match the run record; the summary prints the run's URL and the command that serves it."""
    from mlflow import MlflowClient

    uri, run_dir = f"sqlite:///{tmp_path / 'mlflow.db'}", tmp_path / "run"
    env = {k: v for k, v in os.environ.items() if k != "MLFLOW_TRACKING_URI"}
    done = subprocess.run([sys.executable, "-m", "gepa_lab", "experiment=recipe", f"tracking.uri={uri}",
                           f"hydra.run.dir={run_dir}", "progress=off"], cwd=tmp_path, env=env,
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    client = MlflowClient(uri)
    experiment = client.get_experiment_by_name("gepa-lab")
    assert experiment.artifact_location == (tmp_path / "mlruns" / "gepa-lab").as_uri()
    parents = client.search_runs([experiment.experiment_id], "")
    assert len(parents) == 1
    parent, record = parents[0], json.loads((run_dir / "result.json").read_text())
    tags = parent.data.tags
    assert parent.info.status == "FINISHED" and parent.info.run_name.startswith("recipe-seed1-")
    assert tags["promotion_eligible"] == str(record["promotion_eligible"]).lower()
    assert (tags["promotion_reason"], tags["stop_reason"]) == (record["promotion_reason"], record["stop_reason"])
    assert tags["simulated"] == "true" and "calibrate the harness, not an LM" in tags["mlflow.note.content"]
    assert tags["mlflow_tracker.errors"] == "0"
    rows = table_rows(client, parent.info.run_id, "proposals.json", tmp_path / "dl")
    events = proposal_events(run_dir)
    assert [r["iteration"] for r in rows] == list(range(len(events)))
    assert [r["status"] for r in rows] == [e["kind"].replace("candidate_", "") for e in events]
    pool = candidate_runs(client, parent.info.run_id)
    assert len(pool) == len(record["pool"]) == 1 + sum(r["status"] == "accepted" for r in rows)
    assert record["links"]["mlflow_run_id"] == parent.info.run_id
    # The summary's link and the command that serves it name the same port.
    port = re.search(r"serve it first: mlflow ui --backend-store-uri \S+ --port (\d+)\n", done.stdout).group(1)
    url = mlflow_links.experiment_url(uri, experiment.experiment_id).replace(f":{mlflow_links.ui_port()}/", f":{port}/")
    assert f"  mlflow      {url}  (this run: {parent.info.run_name})\n              serve it first: mlflow ui " \
           f"--backend-store-uri {uri} --port {port}\n" in done.stdout


# -- configuration, helpers, public API ------------------------------------------------------

def test_each_decision_counts_the_store_s_runs_already_decided_on_its_holdout(tmp_path, monkeypatch) -> None:
    """Holdout reuse: across experiments of one store, by the holdout split's digest; a run
    killed before its decision does not count, another holdout split does not either."""
    uri = f"sqlite:///{tmp_path / 'reuse.db'}"
    counts = []
    for n, experiment in enumerate(("toy", "toy", "other")):
        toy_run(uri, tmp_path / f"run{n}", experiment=experiment, random_seed=n + 1, iterations=2)
        counts.append(json.loads((tmp_path / f"run{n}" / "result.json").read_text(encoding="utf-8"))["holdout_reuse"])
    with pytest.raises(KeyboardInterrupt):
        toy_run(uri, tmp_path / "killed", random_seed=9, iterations=2, after=(InterruptAt("iteration"),))
    tracker = toy_run(uri, tmp_path / "run3", random_seed=4, iterations=2)
    result = json.loads((tmp_path / "run3" / "result.json").read_text(encoding="utf-8"))
    assert counts + [result["holdout_reuse"]] == [0, 1, 2, 3]
    from mlflow import MlflowClient

    assert MlflowClient(uri).get_run(tracker.run_id).data.metrics["holdout_reuse"] == 3
    frame = report.frame_of(report.parent_runs(MlflowClient(uri), "gepa-lab", ""), uri)
    monkeypatch.setattr(report, "HOLDOUT_REUSE_WARNING", 3)
    assert "toy: up to 3 earlier decisions were taken on its holdout split (the look ledger)" in \
        "\n".join(report.summary_lines(frame))


def test_links_leave_out_a_tracking_uri_with_a_password() -> None:
    links = run_links("postgresql://gepa:s3cret@127.0.0.1/mlflow", "7", "r1", "toy-seed1-abcdef12")
    assert "mlflow_tracking_uri" not in links and "s3cret" not in json.dumps(links)
    assert links["mlflow_ui_command"] == (f"mlflow ui --backend-store-uri postgresql://gepa:[REDACTED]@127.0.0.1/mlflow "
                                          f"--port {mlflow_links.ui_port()}")
    assert MlflowTracker(uri="http://127.0.0.1:5000").links() == {}  # no run yet


def test_ui_links() -> None:
    server = "https://alice:pw@mlflow.example.org/base/"
    assert mlflow_links.run_url(server, "3", "abc") == \
        "https://mlflow.example.org/base/#/experiments/3/runs/abc?workflowType=machine_learning"
    assert mlflow_links.run_url("", "3", "abc", "winner_diff.txt") == \
        "#/experiments/3/runs/abc/artifacts/winner_diff.txt?workflowType=machine_learning"  # relative: any host
    assert mlflow_links.ui_command(server) is None
    assert mlflow_links.experiment_url(server, "3") == ("https://mlflow.example.org/base/#/experiments/3/runs?"
                                                        "viewStateShareKey=gepa-lab-decisions&workflowType=machine_learning")
    compare = mlflow_links.compare_url("http://h:5000", ["3", "3"], ["a", "b"])
    assert compare == ("http://h:5000/#/compare-runs?runs=%5B%22a%22%2C%22b%22%5D&experiments=%5B%223%22%5D"
                       "&workflowType=machine_learning")


def test_a_local_store_s_link_and_command_share_a_port_that_was_free() -> None:
    """5000 when nothing listens there (`mlflow ui`'s default), else a free one; the printed URL
    reaches the server the printed command starts, never another one on 5000."""
    import socket

    port, local = mlflow_links.ui_port(), "sqlite:////x/mlflow.db"
    assert mlflow_links.run_url(local, "3", "abc").startswith(f"http://127.0.0.1:{port}/#/")
    assert mlflow_links.ui_command(local) == f"mlflow ui --backend-store-uri {local} --port {port}"
    with socket.socket() as busy:
        with contextlib.suppress(OSError):  # (else something here holds 5000 already)
            busy.bind(("127.0.0.1", 5000))
            busy.listen()
        chosen = mlflow_links.free_port()
        assert chosen != 5000
        with socket.socket() as probe:
            probe.bind(("127.0.0.1", chosen))  # free to serve on


def test_round_end_reaches_the_trackers_that_have_it() -> None:
    from gepa_lab.tracking import HOOKS, Trackers

    calls: list[str] = []

    class WithIt:
        def round_end(self) -> None:
            calls.append("round_end")

    fanout = Trackers([WithIt(), object(), WithIt()])  # type: ignore[list-item]
    assert "round_end" in HOOKS and fanout.wants("round_end")
    fanout.round_end()
    assert calls == ["round_end", "round_end"]


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
    assert mlflow_values.readable({"a": 0.1 + 0.2, "b": 1234567.0, "c": math.nan, "d": None}) == {"a": 0.3, "b": 1234567.0}


@pytest.mark.parametrize("module", [mlflow_tracker, mlflow_values, mlflow_logger, mlflow_links], ids=lambda m: m.__name__)
def test_tracker_uses_only_public_mlflow_names(module) -> None:
    """No private MLflow module, class or function: imports name no `_` component and the only
    underscore attributes read are the module's own (`self._...`)."""
    tree = ast.parse(Path(module.__file__).read_text(encoding="utf-8"))
    imported = [(node.module or "", alias.name) for node in ast.walk(tree) if isinstance(node, ast.ImportFrom)
                for alias in node.names]
    mlflow_names = [(m, n) for m, n in imported if m.split(".")[0] == "mlflow"]
    # The engine's side never imports MLflow (the logging process does).
    assert bool(mlflow_names) == (module is mlflow_logger)
    for name_module, name in mlflow_names:
        assert not any(part.startswith("_") for part in [*name_module.split("."), name]), (name_module, name)
    private = [ast.unparse(node) for node in ast.walk(tree) if isinstance(node, ast.Attribute)
               and node.attr.startswith("_") and not node.attr.startswith("__")
               and not (isinstance(node.value, ast.Name) and node.value.id == "self")]
    assert private in ([], ["os._exit"])  # os._exit: the standard library's documented exit without teardown


def test_the_engine_side_imports_no_mlflow() -> None:
    """The hooks only pickle events: MLflow (seconds of CPU to import) stays in the logging process."""
    done = subprocess.run([sys.executable, "-c", "import sys, gepa_lab.tracking.mlflow_tracker, gepa_lab.cli; "
                           "print(sorted(m for m in sys.modules if m.split('.')[0] == 'mlflow'))"],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0 and done.stdout.strip() == "[]", done.stderr[-2000:]
