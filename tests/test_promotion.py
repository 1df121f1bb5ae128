"""Promotion (docs/design.md §4): the first failing rule names the reason and
every rule's outcome is recorded."""

from __future__ import annotations

import json
import random
from dataclasses import replace

import pytest
from helpers import IMPROVED_STEP, ImprovingReflector, ToyEvaluator, attach, cases, seed_spec

from gepa_lab import Case, Dataset, Evaluation, PromotionPolicy, SearchConfig, optimize
from gepa_lab.core.settings import GatePolicy
from gepa_lab.search.promotion import assess_promotion, paired_interval

SATISFIED = "holdout requirements satisfied"
LENIENT = PromotionPolicy.preset("lenient")


def evals(holdout, scores, objectives=None):
    return [Evaluation(case_id=c.id, score=s, objectives=dict(objectives[i]) if objectives else {})
            for i, (c, s) in enumerate(zip(holdout, scores, strict=True))]


def assess(baseline, candidate, *, best_is_seed=False, critical=(), min_improvement=0.0, policy=None,
           base_objectives=None, cand_objectives=None, validation=()):
    holdout = [Case(id=f"h{i}", input=f"x{i}", critical=f"h{i}" in critical) for i in range(1, len(baseline) + 1)]
    policy = policy or replace(LENIENT, min_holdout_improvement=min_improvement)
    return assess_promotion(
        best_is_seed=best_is_seed,
        holdout=holdout,
        baseline=[evals(holdout, baseline, base_objectives)],
        candidate=[evals(holdout, candidate, cand_objectives)],
        policy=policy,
        validation=validation,
        quality_objective="quality",
    )


def status(decision):
    return {r.rule: r.status for r in decision.rules}


# -- rules 1-4 under the lenient preset (mean delta, no interval, no ceilings) --------------------
def test_best_is_seed():
    d = assess([0.5, 0.5], [0.5, 0.5], best_is_seed=True)
    assert d.eligible is False
    assert d.reason == "no accepted candidate improved validation"


def test_no_holdout_records_the_holdout_rules_as_skipped():
    d = assess_promotion(best_is_seed=False, holdout=[], baseline=[], candidate=[], policy=PromotionPolicy())
    assert d.eligible is False
    assert d.reason == "no holdout split configured"
    assert status(d) == {"candidate_improved_validation": "passed", "holdout_configured": "failed",
                         "holdout_delta": "skipped", "holdout_interval": "skipped",
                         "critical_non_regression": "skipped", "gates": "skipped"}


def test_delta_below_minimum_is_formatted_with_four_decimals():
    d = assess([0.5, 0.5], [0.498, 0.5])  # delta = -0.001
    assert d.eligible is False
    assert d.reason == "holdout delta -0.0010 is below required 0.0000"


def test_a_tiny_negative_delta_is_never_printed_as_minus_zero():
    d = assess([0.5, 0.5], [0.49998, 0.5])  # delta = -0.00001: "-0.0000 is below 0.0000" would contradict itself
    assert d.eligible is False
    assert d.reason == "holdout delta -1.00e-05 is below required 0.0000"


def test_delta_below_a_positive_minimum():
    d = assess([0.2, 0.2], [0.4, 0.4], min_improvement=0.25)
    assert d.reason == "holdout delta 0.2000 is below required 0.2500"
    assert assess([0.2, 0.2], [0.5, 0.5], min_improvement=0.25).reason == SATISFIED


def test_zero_delta_with_zero_minimum_passes_the_lenient_rule():
    d = assess([0.4, 0.6], [0.6, 0.4])
    assert d.eligible is True and d.reason == SATISFIED


def test_critical_case_regression_names_the_first_regressed_critical_case():
    # Overall delta is positive, but critical h2 drops; h3 also drops, h1 (not critical) drops too.
    d = assess([0.5, 0.5, 0.5, 0.1], [0.4, 0.4, 0.4, 1.0], critical=("h2", "h3"))
    assert d.eligible is False
    assert d.reason == "critical holdout case regressed: h2"


def test_critical_case_that_holds_or_improves_passes():
    d = assess([0.5, 0.5], [0.5, 0.9], critical=("h1", "h2"))
    assert d.reason == SATISFIED and d.eligible is True


def test_every_rule_is_evaluated_and_the_first_failure_wins():
    # Seed is best AND delta is negative AND a critical case regressed: all three failures are
    # recorded, but the reason is the first rule's.
    d = assess([0.5, 0.5], [0.4, 0.5], best_is_seed=True, critical=("h1",))
    assert d.reason == "no accepted candidate improved validation"
    assert {k: v for k, v in status(d).items() if v == "failed"} == {
        "candidate_improved_validation": "failed", "holdout_delta": "failed", "critical_non_regression": "failed"}
    details = " | ".join(r.detail for r in d.rules)
    assert "holdout delta -0.0500 is below required 0.0000" in details
    assert "critical holdout case regressed: h1" in details


def test_delta_failure_comes_before_critical_failure():
    d = assess([0.5, 0.5], [0.4, 0.5], critical=("h1",))
    assert d.reason == "holdout delta -0.0500 is below required 0.0000"


@pytest.mark.parametrize(
    "baseline, candidate, minimum",
    [([0.1, 0.2], [0.15, 0.15], 0.0), ([0.1, 0.1], [0.35, 0.35], 0.25)],
    ids=["tie", "exact-minimum"],
)
def test_delta_equal_to_the_minimum_passes_despite_float_rounding(baseline, candidate, minimum):
    d = assess(baseline, candidate, min_improvement=minimum)
    assert d.reason == SATISFIED


# -- critical cases judged on quality, not on efficiency credit ------------------------------------
def _q(quality, passed=1.0, **extra):
    return {"quality": quality, "passed": passed, **extra}


def test_an_efficiency_only_drop_on_a_critical_case_is_not_a_regression():
    # Same quality and pass; the score fell 3e-5 because the candidate used more tokens.
    d = assess([0.95, 0.5], [0.94997, 0.9], critical=("h1",),
               base_objectives=[_q(0.8), _q(0.3)], cand_objectives=[_q(0.8), _q(0.9)])
    assert status(d)["critical_non_regression"] == "passed" and d.reason == SATISFIED


@pytest.mark.parametrize("tolerance, eligible", [(0.0, False), (0.049, False), (0.05, True)])
def test_a_quality_drop_is_judged_against_the_tolerance(tolerance, eligible):
    policy = replace(LENIENT, critical_tolerance=tolerance)
    d = assess([0.9, 0.1], [0.9, 0.9], critical=("h1",), policy=policy,
               base_objectives=[_q(0.80), _q(0.1)], cand_objectives=[_q(0.75), _q(0.9)])
    assert d.eligible is eligible
    assert (d.reason == "critical holdout case regressed: h1") is not eligible


def test_losing_a_pass_on_a_critical_case_is_a_regression_whatever_the_quality():
    d = assess([0.85, 0.1], [0.86, 0.9], critical=("h1",),
               base_objectives=[_q(0.5, passed=1.0), _q(0.1)], cand_objectives=[_q(0.6, passed=0.0), _q(0.9)])
    assert d.reason == "critical holdout case regressed: h1"


# -- the default preset: a paired bootstrap interval ----------------------------------------------
def test_the_interval_is_recorded_and_a_noisy_tie_does_not_clear_it():
    default = PromotionPolicy()
    d = assess([0.5, 0.6, 0.4, 0.7, 0.5, 0.3], [0.6, 0.5, 0.5, 0.6, 0.4, 0.4], policy=default)
    low, high = d.interval
    assert low < 0 < high and d.delta == pytest.approx(0.0, abs=1e-12)
    assert d.reason == f"holdout delta +0.0000 [95% CI {low:+.4f}, {high:+.4f}] does not clear 0.0000"
    clear = assess([0.5] * 6, [0.6, 0.55, 0.62, 0.58, 0.6, 0.57], policy=default)
    assert clear.reason == SATISFIED and clear.interval[0] > 0


def test_the_bootstrap_is_seeded():
    deltas = [((i * 37) % 23 - 11) / 97 for i in range(30)]
    a = paired_interval(deltas, 0.95, 2000, seed=7)
    assert a == paired_interval(deltas, 0.95, 2000, seed=7)
    assert a != paired_interval(deltas, 0.95, 2000, seed=8)
    assert a[0] < sum(deltas) / len(deltas) < a[1]


# -- gates (rule 5) ----------------------------------------------------------------------------------
def _gate(**gates):
    return replace(LENIENT, gates=GatePolicy(**{"no_pass_rate_regression": False, "require_safety": False,
                                                "ceilings": {}, **gates}))


@pytest.mark.parametrize("candidate_tokens, passes", [(120.0, True), (120.0001, False), (80.0, True)])
def test_a_ceiling_passes_exactly_at_the_ceiling(candidate_tokens, passes):
    d = assess([0.2], [0.8], policy=_gate(ceilings={"tokens": 1.2}),
               base_objectives=[{"tokens": 100.0}], cand_objectives=[{"tokens": candidate_tokens}])
    assert status(d)["gate.ceiling.tokens"] == ("passed" if passes else "failed")
    if not passes:
        assert d.reason == "tokens grew 1.2000x, above the ceiling 1.2000x"


@pytest.mark.parametrize("candidate_cost, passes", [(0.0, True), (0.001, False)])
def test_a_zero_baseline_passes_only_a_zero_candidate(candidate_cost, passes):
    d = assess([0.2], [0.8], policy=_gate(ceilings={"cost_usd": 1.2}),
               base_objectives=[{"cost_usd": 0.0}], cand_objectives=[{"cost_usd": candidate_cost}])
    assert d.eligible is passes


def test_an_unreported_objective_is_skipped_not_failed():
    d = assess([0.2], [0.8], policy=_gate(ceilings={"latency_ms": 1.2}, validation_pass_rate_floor=0.9))
    assert status(d)["gate.ceiling.latency_ms"] == "skipped"
    assert status(d)["gate.validation_pass_rate"] == "skipped"
    assert d.eligible is True


@pytest.mark.parametrize("floor, eligible", [(0.5, True), (0.51, False)])
def test_the_holdout_pass_rate_floor(floor, eligible):
    d = assess([0.2, 0.2], [0.9, 0.5], policy=_gate(holdout_pass_rate_floor=floor),
               base_objectives=[_q(0.2, 0.0), _q(0.2, 0.0)], cand_objectives=[_q(0.9, 1.0), _q(0.5, 0.0)])
    assert d.eligible is eligible
    if not eligible:
        assert d.reason == "holdout pass rate 0.5000 is below the floor 0.5100"


def test_the_validation_pass_rate_floor_reads_the_winner_validation():
    validation = [Evaluation("v1", 0.9, objectives={"passed": 1.0}), Evaluation("v2", 0.2, objectives={"passed": 0.0})]
    d = assess([0.2], [0.8], policy=_gate(validation_pass_rate_floor=0.8), validation=validation)
    assert d.reason == "validation pass rate 0.5000 is below the floor 0.8000"


def test_a_pass_rate_regression_blocks_even_with_a_better_mean():
    d = assess([0.85, 0.3], [0.7, 0.9], policy=_gate(no_pass_rate_regression=True),
               base_objectives=[_q(0.9, 1.0), _q(0.3, 1.0)], cand_objectives=[_q(0.7, 0.0), _q(0.9, 1.0)])
    assert d.reason == "holdout pass rate 0.5000 fell below the seed's 1.0000"


def test_a_failed_safety_check_blocks():
    d = assess([0.2, 0.2], [0.9, 0.9], policy=_gate(require_safety=True),
               cand_objectives=[{"safety_passed": 1.0}, {"safety_passed": 0.0}],
               base_objectives=[{"safety_passed": 1.0}, {"safety_passed": 1.0}])
    assert d.reason == "1 holdout case(s) failed a safety check"


def test_presets():
    lenient, default, strict = (PromotionPolicy.preset(n) for n in ("lenient", "default", "strict"))
    assert default == PromotionPolicy()
    assert lenient.require_interval is False and set(lenient.gates.ceilings.values()) == {None}
    assert default.require_interval and default.gates.ceilings["cost_usd"] == 1.2
    assert (strict.holdout_repeats, strict.gates.holdout_pass_rate_floor, strict.require_interval) == (3, 0.8, True)
    with pytest.raises(ValueError, match="unknown promotion preset 'loose'"):
        PromotionPolicy.preset("loose")


# --------------------------------------------------------------------------------------------
# End to end through optimize
# --------------------------------------------------------------------------------------------


def run(holdout_scores=None, *, holdout=None, improve=True, min_improvement=0.0, submit=False, submitter=None,
        n=2):
    """Seed scores 0.2 on feedback/validation, the improved child 0.8. Holdout scores come from
    `holdout_scores[(improved, case_id)]` (default: 0.2 / 0.8)."""
    holdout = cases("ho", n) if holdout is None else holdout

    def score(artifact, case, seed):
        improved = IMPROVED_STEP in artifact.steps
        if case.id.startswith("ho") and holdout_scores is not None:
            return holdout_scores[(improved, case.id)]
        return 0.8 if improved and improve else 0.2

    ds = Dataset("p", "v1", cases("fb", n), cases("val", n), holdout)
    ev, rf = attach(ToyEvaluator(score), ImprovingReflector())
    config = SearchConfig(max_iterations=1, minibatch_size=2)
    return optimize(seed_spec(), ds, ev, rf, config, submit=submit, submitter=submitter,
                    promotion=replace(LENIENT, min_holdout_improvement=min_improvement))


def test_end_to_end_eligible():
    result = run()
    assert result.promotion_eligible is True
    assert result.promotion_reason == SATISFIED
    assert len(result.promotion_rules) >= 4
    assert all(r["passed"] for r in result.promotion_rules)


def test_end_to_end_no_improvement():
    result = run(improve=False)
    assert result.promotion_eligible is False
    assert result.promotion_reason == "no accepted candidate improved validation"
    assert result.promotion_rules[0]["passed"] is False
    assert len(result.promotion_rules) >= 4  # the holdout rules were still evaluated


def test_end_to_end_no_holdout():
    result = run(holdout=[])
    assert result.promotion_eligible is False
    assert result.promotion_reason == "no holdout split configured"
    assert [r["passed"] for r in result.promotion_rules][:2] == [True, False]


def test_end_to_end_small_holdout_regression():
    scores = {(False, "ho-1"): 0.5, (False, "ho-2"): 0.5, (True, "ho-1"): 0.498, (True, "ho-2"): 0.5}
    result = run(scores)
    assert result.best_id != result.seed_id
    assert result.promotion_eligible is False
    assert result.promotion_reason == "holdout delta -0.0010 is below required 0.0000"
    assert result.holdout_delta == pytest.approx(-0.001)


def test_end_to_end_minimum_improvement():
    assert run(min_improvement=0.5).promotion_reason == SATISFIED  # delta 0.6
    result = run(min_improvement=0.7)
    assert result.promotion_eligible is False
    assert result.promotion_reason == "holdout delta 0.6000 is below required 0.7000"


def test_end_to_end_tie_on_holdout_passes_with_zero_minimum():
    scores = {(False, "ho-1"): 0.5, (False, "ho-2"): 0.5, (True, "ho-1"): 0.5, (True, "ho-2"): 0.5}
    result = run(scores)
    assert result.best_id != result.seed_id
    assert result.holdout_delta == 0
    assert result.promotion_reason == SATISFIED


def test_end_to_end_critical_regression():
    holdout = [Case("ho-1", "a"), Case("ho-2", "b", critical=True)]
    scores = {(False, "ho-1"): 0.2, (False, "ho-2"): 0.6, (True, "ho-1"): 1.0, (True, "ho-2"): 0.5}
    result = run(scores, holdout=holdout)
    assert result.holdout_delta == pytest.approx(0.75 - 0.4)
    assert result.promotion_eligible is False
    assert result.promotion_reason == "critical holdout case regressed: ho-2"
    critical = [h for h in result.holdout_cases if h["critical"]]
    assert critical == [{"case_id": "ho-2", "critical": True, "baseline": 0.6, "candidate": 0.5,
                         "delta": pytest.approx(-0.1)}]


class RecordingSubmitter:
    def __init__(self):
        self.requests = []

    def submit(self, request):
        self.requests.append(request)
        return {"revision_id": "rev-1", "status": "pending_approval"}


def _field(request, name):
    return request[name] if isinstance(request, dict) else getattr(request, name)


def test_eligible_winner_is_submitted_once():
    submitter = RecordingSubmitter()
    result = run(submit=True, submitter=submitter, n=10)
    assert result.promotion_eligible is True
    assert len(submitter.requests) == 1
    assert _field(submitter.requests[0], "source") == f"optimization/gepa:{result.experiment_id}"
    assert result.submission_reason == "revision submitted with status pending_approval"
    assert result.revision == {"revision_id": "rev-1", "status": "pending_approval"}


def test_ineligible_winner_is_never_submitted():
    submitter = RecordingSubmitter()
    result = run(improve=False, submit=True, submitter=submitter, n=10)
    assert result.promotion_eligible is False
    assert submitter.requests == []
    assert result.submission_reason == result.promotion_reason




class FailingSubmitter:
    def submit(self, request):
        raise RuntimeError("revision store unavailable")


def test_submission_failure_still_records_the_result(tmp_path):
    ds = Dataset("p", "v1", cases("fb", 10), cases("val", 10), cases("ho", 10))
    ev, rf = attach(ToyEvaluator(), ImprovingReflector())
    with pytest.raises(RuntimeError, match="revision store unavailable"):
        optimize(seed_spec(), ds, ev, rf, SearchConfig(max_iterations=1, minibatch_size=2), submit=True,
                 submitter=FailingSubmitter(), run_dir=tmp_path)
    assert (tmp_path / "result.json").exists()
    stored = json.loads((tmp_path / "result.json").read_text(encoding="utf-8"))
    assert stored["promotion_eligible"] is True
    assert "revision store unavailable" in stored["submission_reason"]


# -- the statistical default on noisy evaluators ----------------------------------------------------
class NoisyEvaluator:
    """Every edit is a coin flip: a candidate's true quality is `gain` above the seed's, plus
    per-(artifact, case, seed) noise of +-0.3 that pairing cannot cancel (it depends on the text)."""

    def __init__(self, gain: float):
        self.gain = gain

    def evaluate(self, artifact, cases, seed):
        from gepa_lab.core.artifacts import artifact_id

        edited = len(artifact.steps) > 2
        out = []
        for case in cases:
            noise = random.Random(f"{artifact_id(artifact)}|{case.id}|{seed}").uniform(-0.3, 0.3)
            out.append(Evaluation(case.id, min(1.0, max(0.0, 0.5 + (self.gain if edited else 0.0) + noise))))
        return out


class EditingReflector:
    def __init__(self):
        self.n = 0

    def reflect(self, artifact, component, records):
        self.n += 1
        return {"steps": [*artifact.steps, f"Check the result again ({self.n})."]}


def _noisy_runs(gain: float, policy: PromotionPolicy) -> list[bool]:
    ds = Dataset("noisy", "v1", cases("fb", 6), cases("val", 10), cases("ho", 20))
    return [optimize(seed_spec(), ds, NoisyEvaluator(gain), EditingReflector(),
                     SearchConfig(max_metric_calls=300, minibatch_size=3, random_seed=seed),
                     promotion=policy).promotion_eligible for seed in range(1, 21)]


def test_the_default_refuses_no_better_candidates_that_a_mean_delta_rule_promotes():
    lenient = _noisy_runs(0.0, LENIENT)
    default = _noisy_runs(0.0, PromotionPolicy())
    # With no true gain the winner's holdout delta is noise: roughly half clear a zero mean.
    assert sum(lenient) >= 3
    # The interval's lower bound must clear zero: at most a false-positive rate's worth pass.
    assert sum(default) <= 2 and sum(default) < sum(lenient)


def test_the_default_still_promotes_a_truly_better_candidate():
    assert sum(_noisy_runs(0.25, PromotionPolicy())) >= 17
