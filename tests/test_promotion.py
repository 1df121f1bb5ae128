"""Promotion (DESIGN §4; reference §2.6, §2.7): the first failing rule names the reason and
every rule's outcome is recorded."""

from __future__ import annotations

import json

import pytest
from helpers import IMPROVED_STEP, ImprovingReflector, ToyEvaluator, attach, cases, seed_spec

from gepa_lab import Case, Dataset, Evaluation, PromotionPolicy, SearchConfig, optimize
from gepa_lab.search.promotion import assess_promotion

SATISFIED = "holdout requirements satisfied"


def evals(holdout, scores):
    return [Evaluation(case_id=c.id, score=s) for c, s in zip(holdout, scores, strict=True)]


def assess(baseline, candidate, *, best_is_seed=False, critical=(), min_improvement=0.0):
    holdout = [Case(id=f"h{i}", input="x", critical=f"h{i}" in critical) for i in range(1, len(baseline) + 1)]
    return assess_promotion(
        best_is_seed=best_is_seed,
        holdout=holdout,
        baseline=evals(holdout, baseline),
        candidate=evals(holdout, candidate),
        policy=PromotionPolicy(min_holdout_improvement=min_improvement),
    )


def outcomes(decision):
    return [(r.passed if hasattr(r, "passed") else r["passed"]) for r in decision.rules]


def test_best_is_seed():
    d = assess([0.5, 0.5], [0.5, 0.5], best_is_seed=True)
    assert d.eligible is False
    assert d.reason == "no accepted candidate improved validation"


def test_no_holdout():
    d = assess_promotion(best_is_seed=False, holdout=[], baseline=[], candidate=[])
    assert d.eligible is False
    assert d.reason == "no holdout split configured"
    assert outcomes(d)[:2] == [True, False]


def test_delta_below_minimum_is_formatted_with_four_decimals():
    d = assess([0.5, 0.5], [0.498, 0.5])  # delta = -0.001
    assert d.eligible is False
    assert d.reason == "holdout delta -0.0010 is below required 0.0000"


def test_delta_below_a_positive_minimum():
    d = assess([0.2, 0.2], [0.4, 0.4], min_improvement=0.25)
    assert d.reason == "holdout delta 0.2000 is below required 0.2500"
    assert assess([0.2, 0.2], [0.5, 0.5], min_improvement=0.25).reason == SATISFIED


def test_zero_delta_with_zero_minimum_passes():
    d = assess([0.4, 0.6], [0.6, 0.4])
    assert d.eligible is True
    assert d.reason == SATISFIED


def test_critical_case_regression_names_the_first_regressed_critical_case():
    # Overall delta is positive, but critical h2 drops; h3 also drops, h1 (not critical) drops too.
    d = assess([0.5, 0.5, 0.5, 0.1], [0.4, 0.4, 0.4, 1.0], critical=("h2", "h3"))
    assert d.eligible is False
    assert d.reason == "critical holdout case regressed: h2"


def test_critical_case_that_holds_or_improves_passes():
    d = assess([0.5, 0.5], [0.5, 0.9], critical=("h1", "h2"))
    assert d.reason == SATISFIED and d.eligible is True


def test_all_rules_pass():
    d = assess([0.2, 0.2], [0.8, 0.8], critical=("h1",))
    assert d.eligible is True
    assert d.reason == SATISFIED
    assert len(d.rules) >= 4
    assert all(outcomes(d))


def test_every_rule_is_evaluated_and_the_first_failure_wins():
    # Seed is best AND delta is negative AND a critical case regressed: all three failures are
    # recorded, but the reason is the first rule's.
    d = assess([0.5, 0.5], [0.4, 0.5], best_is_seed=True, critical=("h1",))
    assert d.reason == "no accepted candidate improved validation"
    assert outcomes(d)[:4] == [False, True, False, False]
    details = " | ".join((r.detail if hasattr(r, "detail") else r["detail"]) for r in d.rules)
    assert "holdout delta -0.0500 is below required 0.0000" in details
    assert "critical holdout case regressed: h1" in details


def test_delta_failure_comes_before_critical_failure():
    d = assess([0.5, 0.5], [0.4, 0.5], critical=("h1",))
    assert d.reason == "holdout delta -0.0500 is below required 0.0000"
    assert outcomes(d)[:4] == [True, True, False, False]


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
                    promotion=PromotionPolicy(min_holdout_improvement=min_improvement))


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


@pytest.mark.parametrize(
    "baseline, candidate, minimum",
    [([0.1, 0.2], [0.15, 0.15], 0.0), ([0.1, 0.1], [0.35, 0.35], 0.25)],
    ids=["tie", "exact-minimum"],
)
def test_delta_equal_to_the_minimum_passes_despite_float_rounding(baseline, candidate, minimum):
    d = assess(baseline, candidate, min_improvement=minimum)
    assert d.reason == SATISFIED


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
