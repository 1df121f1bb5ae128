"""The promotion decision (docs/design.md §4): every rule is evaluated and recorded; the first
failure names the reason. Eligible is not live: only the revision store's approval makes a winner
live."""

from __future__ import annotations

from collections.abc import Sequence

from gepa_lab.core.contracts import Case, Evaluation, Summary
from gepa_lab.core.result import ELIGIBLE_REASON, PromotionDecision, RuleOutcome
from gepa_lab.core.settings import PromotionPolicy

# Means of the same scores in another order can differ in the last bit; a true tie must pass.
DELTA_TOLERANCE = 1e-9


def assess_promotion(
    *,
    best_is_seed: bool,
    holdout: Sequence[Case],
    baseline: Sequence[Evaluation],
    candidate: Sequence[Evaluation],
    policy: PromotionPolicy | None = None,
) -> PromotionDecision:
    """`baseline` / `candidate` are holdout evaluations in holdout order (empty if no holdout)."""
    policy = policy or PromotionPolicy()
    rules: list[RuleOutcome] = [
        RuleOutcome("candidate_improved_validation", not best_is_seed,
                    "no accepted candidate improved validation" if best_is_seed else "best candidate is not the seed"),
    ]
    has_holdout = bool(holdout)
    rules.append(RuleOutcome("holdout_configured", has_holdout,
                             f"{len(holdout)} holdout cases" if has_holdout else "no holdout split configured"))
    if has_holdout:
        minimum = policy.min_holdout_improvement
        delta = Summary.of(candidate).score - Summary.of(baseline).score
        ok = delta >= minimum - DELTA_TOLERANCE
        rules.append(RuleOutcome(
            "holdout_delta", ok, f"holdout delta {delta:.4f} is {'at least' if ok else 'below'} required {minimum:.4f}"))
        regressed = [
            case.id
            for case, b, c in zip(holdout, baseline, candidate, strict=True)
            if case.critical and c.score < b.score - policy.critical_tolerance
        ]
        rules.append(RuleOutcome(
            "critical_non_regression", not regressed,
            f"critical holdout case regressed: {regressed[0]}" if regressed else "no critical holdout case regressed"))
    for rule in rules:
        if not rule.passed:
            return PromotionDecision(False, rule.detail, tuple(rules))
    return PromotionDecision(True, ELIGIBLE_REASON, tuple(rules))
