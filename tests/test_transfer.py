"""The transfer check (promotion rule 6): the winner must also beat the seed on Holdout under a
second evaluator; its calls are reserved up front, it is recorded, and it is part of the run's
identity."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from conftest import RunRecord
from helpers import IMPROVED_SCORE, SEED_SCORE, ImprovingReflector, ToyEvaluator, dataset, is_improved, seed_spec
from helpers_cli import gepa

from gepa_lab import SearchConfig, optimize
from gepa_lab.core.errors import GepaLabError, ResumeError
from gepa_lab.core.fingerprint import fingerprint

CONFIG = SearchConfig(max_iterations=2, minibatch_size=2, max_metric_calls=200)


def reversed_score(artifact, case, seed):
    """Another model on which the improvement backfires."""
    return SEED_SCORE if is_improved(artifact) else IMPROVED_SCORE


def test_a_winner_that_does_not_transfer_is_not_eligible():
    transfer = ToyEvaluator(reversed_score)
    result = optimize(seed_spec(), dataset(holdout=3), ToyEvaluator(), ImprovingReflector(), CONFIG,
                      transfer=transfer)
    assert result.best_id != result.seed_id and result.holdout_delta > 0  # the run's own evaluator agrees
    assert not result.promotion_eligible
    assert result.promotion_reason == "transfer holdout delta -0.6000 under ToyEvaluator is below required 0.0000"
    rule = result.promotion_rules[-1]
    assert (rule["rule"], rule["status"], rule["value"]) == ("transfer_delta", "failed", pytest.approx(-0.6))
    assert result.transfer == {"evaluator": "ToyEvaluator", "holdout_seed": result.seeds["holdout_seed"],
                               "baseline": pytest.approx(IMPROVED_SCORE), "candidate": pytest.approx(SEED_SCORE),
                               "delta": pytest.approx(-0.6)}
    # Seed and winner, on every holdout case, with the run's first holdout seed.
    assert [(len(c.case_ids), c.seed) for c in transfer.calls] == [(1, result.seeds["holdout_seed"])] * 6


def test_a_winner_that_transfers_stays_eligible_and_the_calls_are_reserved():
    transfer = ToyEvaluator()
    result = optimize(seed_spec(), dataset(holdout=3), ToyEvaluator(), ImprovingReflector(),
                      SearchConfig(minibatch_size=2, max_metric_calls=60), transfer=transfer)
    assert result.promotion_eligible and result.promotion_rules[-1]["status"] == "passed"
    assert result.transfer["delta"] == pytest.approx(IMPROVED_SCORE - SEED_SCORE)
    assert transfer.cases_evaluated == 6 and result.metric_calls <= 60  # within the budget, transfer included


def test_without_a_winner_the_transfer_rule_is_skipped_and_only_the_seed_was_checked():
    transfer = ToyEvaluator()

    class SameReflector:
        def reflect(self, artifact, component, records):
            return {component: getattr(artifact, component)}

    result = optimize(seed_spec(), dataset(), ToyEvaluator(), SameReflector(), CONFIG, transfer=transfer)
    assert result.best_id == result.seed_id
    # Only the seed, once per holdout case, before the search (a misconfigured evaluator is refused there).
    assert [(len(c.case_ids), c.seed) for c in transfer.calls] == [(1, result.seeds["holdout_seed"])] * len(
        dataset().holdout)
    assert result.promotion_rules[-1] == {"rule": "transfer_delta", "passed": True, "status": "skipped",
                                          "detail": "no winner to check under ToyEvaluator", "value": None,
                                          "threshold": None}
    assert result.transfer["delta"] is None


def test_without_a_transfer_evaluator_nothing_changes():
    result = optimize(seed_spec(), dataset(), ToyEvaluator(), ImprovingReflector(), CONFIG)
    assert result.transfer is None and all(r["rule"] != "transfer_delta" for r in result.promotion_rules)


def test_the_budget_must_cover_the_transfer_comparison_and_a_holdout_must_exist():
    with pytest.raises(ValueError, match=r"needs at least 14 calls .*holdout_repeats \+ 1 for transfer"):
        optimize(seed_spec(), dataset(validation=2, holdout=3), ToyEvaluator(), ImprovingReflector(),
                 SearchConfig(max_metric_calls=13), transfer=ToyEvaluator())
    with pytest.raises(ValueError, match="a transfer evaluator needs a holdout split"):
        optimize(seed_spec(), dataset(holdout=0), ToyEvaluator(), ImprovingReflector(), CONFIG,
                 transfer=ToyEvaluator())


class _Interrupting(ImprovingReflector):
    def __init__(self, at: int = 0):
        super().__init__()
        self.at, self.calls = at, 0

    def fingerprint(self) -> str:
        return "improving reflector"

    def reflect(self, artifact, component, records):
        self.calls += 1
        if self.calls == self.at:
            raise KeyboardInterrupt
        return super().reflect(artifact, component, records)


class _Other(ToyEvaluator):
    def fingerprint(self):
        return "other model"


def test_the_transfer_evaluator_is_part_of_the_run_identity(tmp_path):
    run_dir = tmp_path / "run"
    with pytest.raises(KeyboardInterrupt):
        optimize(seed_spec(), dataset(), ToyEvaluator(), _Interrupting(at=2), CONFIG, run_dir=run_dir,
                 transfer=ToyEvaluator())
    with pytest.raises(ResumeError, match="transfer evaluator changed .* before the search finished"):
        optimize(seed_spec(), dataset(), ToyEvaluator(), _Interrupting(), CONFIG, run_dir=run_dir, resume=True,
                 transfer=_Other())
    first = optimize(seed_spec(), dataset(), ToyEvaluator(), _Interrupting(), CONFIG, run_dir=run_dir, resume=True,
                     transfer=ToyEvaluator())
    assert first.decision_number == 1 and first.transfer["evaluator"] == "ToyEvaluator"


def test_a_finished_run_is_decided_again_under_another_transfer_evaluator(tmp_path):
    run_dir = tmp_path / "run"
    first = optimize(seed_spec(), dataset(holdout=3), ToyEvaluator(), ImprovingReflector(), CONFIG, run_dir=run_dir)
    assert first.promotion_eligible and first.transfer is None
    transfer = ToyEvaluator(reversed_score)
    again = optimize(seed_spec(), dataset(holdout=3), ToyEvaluator(), ImprovingReflector(), CONFIG, run_dir=run_dir,
                     resume=True, transfer=transfer)
    assert again.decision_number == 2 and not again.promotion_eligible
    assert again.best_id == first.best_id and again.holdout_delta == first.holdout_delta
    assert again.decision_paid_evaluations == 6 == transfer.cases_evaluated  # only the transfer check is paid
    decisions = [e["data"] for e in RunRecord(run_dir).events if e["kind"] == "decision"]
    assert [d["number"] for d in decisions] == [1, 2]
    assert decisions[0]["result"]["promotion_eligible"] and not decisions[1]["result"]["promotion_eligible"]


def test_the_command_line_runs_a_transfer_check(tmp_path):
    done = gepa("experiment=recipe", "tracking=none", "progress=off", "search.max_metric_calls=300",
                "transfer/evaluator=sim_agent", cwd=tmp_path)
    assert done.returncode == 0, done.stderr[-2000:]
    record = Path(next(x for x in done.stdout.splitlines() if x.strip().startswith("record")).split(None, 1)[1])
    result = json.loads((record / "result.json").read_text())
    assert result["transfer"]["evaluator"] == "SkillCraftEvaluator"
    transfer_rule = next(r for r in result["promotion_rules"] if r["rule"] == "transfer_delta")
    assert transfer_rule["value"] == pytest.approx(result["transfer"]["delta"])
    assert "  transfer    SkillCraftEvaluator: seed " in done.stdout
    experiment = json.loads((record / "experiment.json").read_text())
    assert experiment["config"]["transfer"]["evaluator"]["agent_config"] == {"max_tool_calls": 40}


def test_a_bad_transfer_config_is_a_one_line_error(tmp_path):
    done = gepa("experiment=recipe", "tracking=none", "transfer/evaluator=sim_agent",
                "transfer.evaluator.agent_config.max_tool_cals=3", cwd=tmp_path)
    assert done.returncode == 2
    assert done.stderr.strip().splitlines()[-1] == (
        "gepa_lab: error: unknown config key 'transfer.evaluator.agent_config.max_tool_cals'; did you mean "
        "'max_tool_calls'? (`python -m gepa_lab --cfg job` prints every key)")


def test_skillcraft_agent_config_from_a_mapping():
    from evaluators.skillcraft import SkillCraftEvaluator

    assert SkillCraftEvaluator(agent_config={"max_tool_calls": 40}).agent_config.max_tool_calls == 40
    with pytest.raises(ValueError, match="unknown config key 'agent_config.max_tool_cals'; agent_config takes: "):
        SkillCraftEvaluator(agent_config={"max_tool_cals": 40})


def test_mlflow_gets_the_transfer_metrics_and_rule(tmp_path, mlflow_env):
    from mlflow import MlflowClient

    from gepa_lab.tracking.mlflow_tracker import MlflowTracker

    uri = f"sqlite:///{tmp_path}/mlflow.db"
    result = optimize(seed_spec(), dataset(holdout=3), ToyEvaluator(), ImprovingReflector(), CONFIG,
                      transfer=ToyEvaluator(reversed_score), trackers=[MlflowTracker(uri=uri, plots=False)])
    run = MlflowClient(uri).get_run(result.links["mlflow_run_id"])
    assert run.data.metrics["transfer_delta"] == pytest.approx(-0.6)
    assert run.data.metrics["rule.transfer_delta"] == 0.0 and run.data.tags["rule.transfer_delta"] == "failed"
    assert run.data.tags["promotion_reason"] == result.promotion_reason


class _Zero(ToyEvaluator):
    def fingerprint(self):
        return "misconfigured agent"

    def evaluate(self, artifact, cases, seed):
        return [ev.__class__(ev.case_id, 0.0) for ev in super().evaluate(artifact, cases, seed)]


def test_a_transfer_evaluator_scoring_the_seed_zero_is_refused_before_the_search(tmp_path):
    evaluator, reflector = ToyEvaluator(), ImprovingReflector()
    with pytest.raises(GepaLabError) as info:
        optimize(seed_spec(), dataset(holdout=3), evaluator, reflector, CONFIG, run_dir=tmp_path, transfer=_Zero())
    assert str(info.value) == ("transfer evaluator _Zero scored the seed 0 on every holdout case: it is misconfigured, "
                               "not evidence (check transfer.evaluator, then resume=<run dir> with the fixed one: "
                               "nothing was searched yet)")
    assert not reflector.seen and evaluator.cases_evaluated == len(dataset().validation)  # no search paid
    # Fixed, the run resumes: the seed's validation is not paid again, and the record names the fixed evaluator.
    fixed = ToyEvaluator()
    result = optimize(seed_spec(), dataset(holdout=3), ToyEvaluator(), ImprovingReflector(), CONFIG, run_dir=tmp_path,
                      resume=True, transfer=fixed)
    clean = optimize(seed_spec(), dataset(holdout=3), ToyEvaluator(), ImprovingReflector(), CONFIG,
                     transfer=ToyEvaluator())
    assert result.best_id == clean.best_id and result.transfer == clean.transfer and fixed.cases_evaluated == 6
    identity = json.loads((tmp_path / "experiment.json").read_text())["identity"]
    assert identity["transfer"] == fingerprint(fixed)


def test_the_decision_reuses_the_seeds_transfer_scores_from_before_the_search(tmp_path):
    transfer = ToyEvaluator()
    result = optimize(seed_spec(), dataset(holdout=3), ToyEvaluator(), ImprovingReflector(), CONFIG,
                      run_dir=tmp_path, transfer=transfer)
    assert result.best_id != result.seed_id and transfer.cases_evaluated == 6  # seed and winner, each once
    phases = [e["data"]["phase"] for e in RunRecord(tmp_path).events if e["kind"] == "batch"]
    assert phases[:2] == ["validation", "holdout-transfer-baseline"]  # right after the seed's validation
    assert phases.count("holdout-transfer-baseline") == 1 and phases[-1] == "holdout-transfer-candidate"
    assert result.decision_paid_evaluations == 2 * 3 + 3  # holdout seed and winner, the winner's transfer


def test_a_run_with_a_transfer_evaluator_resumes_to_the_uninterrupted_result(tmp_path):
    from conftest import strip_volatile

    clean = optimize(seed_spec(), dataset(holdout=3), ToyEvaluator(), ImprovingReflector(), CONFIG,
                     transfer=ToyEvaluator())
    for at in (1, 2):  # killed while reflecting in the first and the second iteration
        run_dir = tmp_path / f"at{at}"
        transfer = ToyEvaluator()
        with pytest.raises(KeyboardInterrupt):
            optimize(seed_spec(), dataset(holdout=3), ToyEvaluator(), _Interrupting(at=at), CONFIG, run_dir=run_dir,
                     transfer=transfer)
        resumed = optimize(seed_spec(), dataset(holdout=3), ToyEvaluator(), _Interrupting(), CONFIG, run_dir=run_dir,
                           resume=True, transfer=transfer)
        assert strip_volatile(resumed.to_dict()) == strip_volatile(clean.to_dict())
        assert transfer.cases_evaluated == 6  # no transfer case paid twice
