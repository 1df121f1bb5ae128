"""Issue 4: resume after SIGKILL, evaluation cache, workers, faults, budgets, interrupts."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from collections import Counter
from dataclasses import replace
from pathlib import Path

import pytest
from conftest import RunRecord, strip_volatile
from helpers_long import HashEvaluator, InterruptingReflector, VaryingReflector, long_dataset, long_seed

from gepa_lab import (
    Evaluation,
    EvaluationSettings,
    PromotionPolicy,
    ReflectionSettings,
    RunAborted,
    SearchConfig,
    optimize,
)
from gepa_lab.core.errors import ReflectorUnavailable

SCRIPT = Path(__file__).parent / "scripts" / "killable_run.py"
CONFIG = SearchConfig(max_iterations=8, minibatch_size=2, random_seed=5)
_strip = strip_volatile


def _record(run_dir: Path) -> dict[str, object]:
    return RunRecord(run_dir).comparable()


def _script(run_dir: Path, log: Path, kill_before: int, *extra: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, str(SCRIPT), str(run_dir), str(log), str(kill_before), *extra],
                          capture_output=True, text=True, timeout=120)


@pytest.fixture(scope="module")
def uninterrupted(tmp_path_factory) -> Path:
    run_dir = tmp_path_factory.mktemp("clean") / "run"
    done = _script(run_dir, run_dir.parent / "log.jsonl", 0)
    assert done.returncode == 0, done.stderr
    return run_dir


@pytest.mark.parametrize("kill_points", [(1,), (3,), (12,), (23,), (2, 9, 14)])
def test_sigkill_then_resume_matches_uninterrupted_run(tmp_path, uninterrupted, kill_points):
    run_dir, log = tmp_path / "run", tmp_path / "paid.jsonl"
    for kill_before in kill_points:
        killed = _script(run_dir, log, kill_before, *(["--resume"] if (run_dir / "experiment.json").exists() else []))
        assert killed.returncode == -9, killed.stderr  # really SIGKILLed
        assert not (run_dir / "result.json").exists()
    resumed = _script(run_dir, log, 0, "--resume")
    assert resumed.returncode == 0, resumed.stderr

    clean = json.loads((uninterrupted / "result.json").read_text())
    got = json.loads((run_dir / "result.json").read_text())
    assert _strip(got) == _strip(clean)
    assert [c["id"] for c in RunRecord(run_dir).candidates] == [c["id"] for c in RunRecord(uninterrupted).candidates]
    assert _record(run_dir) == _record(uninterrupted)
    paid = Counter(tuple(json.loads(line)) for line in log.read_text().splitlines())
    assert paid and max(paid.values()) == 1, [k for k, v in paid.items() if v > 1][:3]


def test_resume_refuses_changed_config_or_data(tmp_path):
    run_dir = tmp_path / "run"
    with pytest.raises(KeyboardInterrupt):
        optimize(long_seed(), long_dataset(), HashEvaluator(), InterruptingReflector(at=2), CONFIG, run_dir=run_dir)
    changed = SearchConfig(max_iterations=9, minibatch_size=2, random_seed=5)
    with pytest.raises(ValueError, match="search setting max_iterations changed"):
        optimize(long_seed(), long_dataset(), HashEvaluator(), VaryingReflector(), changed, run_dir=run_dir, resume=True)
    class Retuned(HashEvaluator):
        def fingerprint(self) -> str:
            return "hash-evaluator-v2"

    with pytest.raises(ValueError, match="evaluator configuration changed"):
        optimize(long_seed(), long_dataset(), Retuned(), VaryingReflector(), CONFIG, run_dir=run_dir, resume=True)
    ds = long_dataset()
    ds = replace(ds, validation=[replace(ds.validation[0], input="a different task"), *ds.validation[1:]])
    with pytest.raises(ValueError, match="validation split changed"):
        optimize(long_seed(), ds, HashEvaluator(), VaryingReflector(), CONFIG, run_dir=run_dir, resume=True)
    # Nothing was spoiled by the refusals: the proper resume still completes.
    result = optimize(long_seed(), long_dataset(), HashEvaluator(), VaryingReflector(), CONFIG, run_dir=run_dir,
                      resume=True)
    assert result.stop_reason == "max_iterations"
    with pytest.raises(ValueError, match="already finished"):
        optimize(long_seed(), long_dataset(), HashEvaluator(), VaryingReflector(), CONFIG, run_dir=run_dir, resume=True)




def test_interrupt_checkpoints_and_resume_reaches_the_same_result(tmp_path):
    clean = optimize(long_seed(), long_dataset(), HashEvaluator(), VaryingReflector(), CONFIG)
    run_dir = tmp_path / "run"
    with pytest.raises(KeyboardInterrupt):
        optimize(long_seed(), long_dataset(), HashEvaluator(), InterruptingReflector(at=3), CONFIG, run_dir=run_dir)
    events = [json.loads(x)["kind"] for x in (run_dir / "events.jsonl").read_text().splitlines()]
    assert events[-1] == "run_interrupted"
    round_ends = [e["data"] for e in RunRecord(run_dir).events if e["kind"] == "round_end"]
    assert round_ends[-1]["state"]["iteration"] == 2
    resumed = optimize(long_seed(), long_dataset(), HashEvaluator(), VaryingReflector(), CONFIG, run_dir=run_dir,
                       resume=True)
    assert _strip(resumed.to_dict()) == _strip(clean.to_dict())


def _tree(run_dir: Path) -> dict[str, object]:
    return _record(run_dir) | {"all events": _strip(RunRecord(run_dir).events)}


@pytest.mark.parametrize("workers,backend", [(8, "thread"), (2, "process")])
def test_results_identical_for_any_worker_count(tmp_path, workers, backend):
    one = tmp_path / "one"
    many = tmp_path / "many"
    a = optimize(long_seed(), long_dataset(), HashEvaluator(), VaryingReflector(), CONFIG, run_dir=one)
    b = optimize(long_seed(), long_dataset(), HashEvaluator(), VaryingReflector(), CONFIG, run_dir=many,
                 evaluation=EvaluationSettings(workers=workers, backend=backend))
    assert _strip(a.to_dict()) == _strip(b.to_dict())
    tree_one, tree_many = _tree(one), _tree(many)
    # The only permitted difference: the recorded worker settings themselves.
    assert tree_many["experiment.json"]["config"].pop("evaluation")["workers"] == workers
    tree_one["experiment.json"]["config"].pop("evaluation")
    assert tree_one == tree_many


def test_recorded_evaluations_cost_no_evaluator_call_but_count_as_metric_calls(tmp_path):
    run_dir = tmp_path / "run"
    first = optimize(long_seed(), long_dataset(), HashEvaluator(), VaryingReflector(), CONFIG, run_dir=run_dir)
    # Decided again under another policy: the holdout evaluations come from the record.
    counting = _CountingEvaluator()
    again = optimize(long_seed(), long_dataset(), counting, VaryingReflector(), CONFIG, run_dir=run_dir, resume=True,
                     promotion=PromotionPolicy(require_interval=False))
    assert counting.calls == 0 and again.decision_paid_evaluations == 0
    assert again.metric_calls == first.metric_calls and again.decision_number == 2
    paid = RunRecord(run_dir).paid
    assert len(paid) == len({(b["candidate_id"], r["case_id"], b["seed"])
                             for b in RunRecord(run_dir).evaluations for r in b["results"]})


class _CountingEvaluator(HashEvaluator):
    calls = 0

    def evaluate(self, artifact, cases, seed):
        self.calls += 1
        return super().evaluate(artifact, cases, seed)


class _FlakyEvaluator(HashEvaluator):
    """Fails the first attempt of every case, then behaves."""

    def __init__(self):
        self.seen: set[tuple] = set()

    def evaluate(self, artifact, cases, seed):
        key = (artifact.to_dict().__repr__(), cases[0].id, seed)
        if key not in self.seen:
            self.seen.add(key)
            raise ConnectionError("provider hiccup")
        return super().evaluate(artifact, cases, seed)


FAST_RETRY = EvaluationSettings(max_retries=2, retry_backoff_s=0.0)


def test_transient_evaluator_errors_are_retried_to_the_same_result():
    clean = optimize(long_seed(), long_dataset(), HashEvaluator(), VaryingReflector(), CONFIG)
    flaky = optimize(long_seed(), long_dataset(), _FlakyEvaluator(), VaryingReflector(), CONFIG, evaluation=FAST_RETRY)
    assert _strip(flaky.to_dict()) == _strip(clean.to_dict())


class _BrokenCaseEvaluator(HashEvaluator):
    def evaluate(self, artifact, cases, seed):
        if cases[0].id == "val-1":
            raise ConnectionRefusedError("tool server down for val-1")
        return super().evaluate(artifact, cases, seed)


def test_persistent_case_failure_is_scored_zero_and_recorded(tmp_path):
    result = optimize(long_seed(), long_dataset(), _BrokenCaseEvaluator(), VaryingReflector(),
                      SearchConfig(max_iterations=0), run_dir=tmp_path, evaluation=FAST_RETRY)
    record = RunRecord(tmp_path).evaluations[0]
    assert record["phase"] == "validation"
    row = next(r for r in record["results"] if r["case_id"] == "val-1")
    assert row["score"] == 0.0
    assert "evaluation failed after 3 attempt(s)" in row["feedback"] and "tool server down" in row["feedback"]
    assert row["objectives"] == {"evaluation_failed": 1.0}
    assert result.baseline_validation.score < 0.75  # the zero is averaged in


class _DeadEvaluator:
    calls = 0

    def evaluate(self, artifact, cases, seed):
        self.calls += 1
        raise TimeoutError("model endpoint unreachable")


def test_everything_failing_aborts_the_run(tmp_path):
    dead = _DeadEvaluator()
    settings = EvaluationSettings(max_retries=0, max_consecutive_failures=3)
    with pytest.raises(RunAborted, match="3 consecutive evaluations failed"):
        optimize(long_seed(), long_dataset(), dead, VaryingReflector(), CONFIG, run_dir=tmp_path, evaluation=settings)
    assert dead.calls == 3
    assert not (tmp_path / "result.json").exists()
    assert json.loads((tmp_path / "events.jsonl").read_text().splitlines()[-1])["kind"] == "run_failed"


class _SlowCaseEvaluator(HashEvaluator):
    def evaluate(self, artifact, cases, seed):
        if cases[0].id == "val-2":
            time.sleep(2.0)
        return super().evaluate(artifact, cases, seed)


@pytest.mark.parametrize("workers, backend", [(1, "thread"), (4, "thread"), (2, "process")])
def test_per_case_timeout_scores_a_failure(tmp_path, workers, backend):
    settings = EvaluationSettings(timeout_s=0.2, max_retries=0, workers=workers, backend=backend)
    optimize(long_seed(), long_dataset(), _SlowCaseEvaluator(), VaryingReflector(),
             SearchConfig(max_iterations=0), run_dir=tmp_path, evaluation=settings)
    record = RunRecord(tmp_path).evaluations[0]
    failed = [r["case_id"] for r in record["results"] if r["objectives"].get("evaluation_failed")]
    assert failed == ["val-2"]
    assert "timeout" in record["results"][2]["feedback"]


class _FailingReflector:
    def __init__(self, failures: int):
        self.failures, self.calls = failures, 0

    def fingerprint(self) -> str:  # an outage, not another reflector
        return "varying-reflector-v1"

    def reflect(self, artifact, component, records):
        self.calls += 1
        if self.calls <= self.failures:
            raise ConnectionError("connection reset by the provider")
        return VaryingReflector().reflect(artifact, component, records)


def test_reflector_errors_are_retried_then_stop_the_run_resumably(tmp_path):
    retry = ReflectionSettings(max_retries=2, retry_backoff_s=0.0)
    recovered = optimize(long_seed(), long_dataset(), HashEvaluator(), _FailingReflector(2), CONFIG,
                         reflection=retry)
    assert recovered.stop_reason == "max_iterations"
    with pytest.raises(ReflectorUnavailable, match=r"reflector _FailingReflector kept failing \(3 attempts\): "
                                                   r"ConnectionError: connection reset by the provider; the run "
                                                   r"stopped at its last round end: resume it"):
        optimize(long_seed(), long_dataset(), HashEvaluator(), _FailingReflector(10**6), CONFIG, run_dir=tmp_path,
                 reflection=retry)
    kinds = [json.loads(x)["kind"] for x in (tmp_path / "events.jsonl").read_text().splitlines()]
    assert kinds[-1] == "run_failed" and not (tmp_path / "result.json").exists()
    back = optimize(long_seed(), long_dataset(), HashEvaluator(), _FailingReflector(0), CONFIG, run_dir=tmp_path,
                    reflection=retry, resume=True)  # the provider is back: the search goes on
    assert strip_volatile(back.to_dict()) == strip_volatile(recovered.to_dict())


def test_cost_budget_stops_with_its_reason_and_keeps_the_holdout():
    # Seed validation costs 4 x 0.00113; one iteration + the holdout reserve needs ~0.0181 more.
    result = optimize(long_seed(), long_dataset(), HashEvaluator(), VaryingReflector(),
                      SearchConfig(max_iterations=8, minibatch_size=2, random_seed=5, max_cost_usd=0.03))
    assert result.stop_reason == "cost_budget"
    assert result.baseline_holdout.cases == 4
    assert result.cost_usd["task"] <= 0.03


def test_time_limit_stops_with_its_reason_and_keeps_the_holdout():
    class Slow(HashEvaluator):
        def evaluate(self, artifact, cases, seed):
            time.sleep(0.01)
            return super().evaluate(artifact, cases, seed)

    result = optimize(long_seed(), long_dataset(), Slow(), VaryingReflector(),
                      SearchConfig(max_iterations=1000, max_metric_calls=100_000, minibatch_size=2, time_limit_s=0.3))
    assert result.stop_reason == "time_limit"
    assert result.baseline_holdout.cases == 4
    # 10 ms per case: ~30 cases fit in 0.3 s; the clock, not the budget or the cap, stopped it.
    assert 8 <= result.metric_calls - 2 * 4 <= 80 and result.proposals < 1000


def test_budget_preflight_reports_the_iteration_range(caplog):
    caplog.set_level("INFO", logger="gepa_lab")
    result = optimize(long_seed(), long_dataset(), HashEvaluator(), VaryingReflector(),
                      SearchConfig(max_iterations=50, max_metric_calls=40, minibatch_size=2))
    # 40 - 4 validation - 8 holdout reserve = 28 calls. Every child accepted: 8 per iteration => 3.
    # Every proposal rejected before scoring its child: 2 per iteration, the last needing 8 => 11.
    assert "allows 3 to 11 iterations (max_iterations 50)" in caplog.text
    assert 3 <= result.proposals <= 11


def test_evaluation_contract_breach_stays_fatal_despite_retries():
    class Liar(HashEvaluator):
        def evaluate(self, artifact, cases, seed):
            return [Evaluation(cases[0].id, 1.5)]

    from gepa_lab import EvaluatorContractError

    with pytest.raises(EvaluatorContractError, match="within \\[0, 1\\]"):
        optimize(long_seed(), long_dataset(), Liar(), VaryingReflector(), CONFIG, evaluation=FAST_RETRY)
