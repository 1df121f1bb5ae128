"""Promotion decision (DESIGN §4): every rule is evaluated and recorded; the first failure names
the reason. Eligible is not live: only the revision store's approval makes a winner live."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict, dataclass, field

from gepa_lab.contracts import Case, Evaluation, Summary

ELIGIBLE_REASON = "holdout requirements satisfied"
# Means of the same scores in another order can differ in the last bit; a true tie must pass.
DELTA_TOLERANCE = 1e-9


@dataclass(frozen=True)
class RuleOutcome:
    rule: str
    passed: bool
    detail: str


@dataclass(frozen=True)
class PromotionDecision:
    eligible: bool
    reason: str
    rules: list[RuleOutcome] = field(default_factory=list)

    def to_dict(self) -> dict:
        return asdict(self)


def assess_promotion(
    *,
    best_is_seed: bool,
    holdout: Sequence[Case],
    baseline: Sequence[Evaluation],
    candidate: Sequence[Evaluation],
    min_improvement: float,
    critical_tolerance: float = 0.0,
) -> PromotionDecision:
    """`baseline` / `candidate` are holdout evaluations in holdout order (empty if no holdout).

    `critical_tolerance` (default 0, DESIGN's exact rule) lets a researcher ignore drops on a
    critical case no larger than it (e.g. token-efficiency noise in a score)."""
    rules: list[RuleOutcome] = []

    rules.append(
        RuleOutcome(
            "candidate_improved_validation",
            not best_is_seed,
            "no accepted candidate improved validation" if best_is_seed else "best candidate is not the seed",
        )
    )
    has_holdout = bool(holdout)
    rules.append(
        RuleOutcome(
            "holdout_configured",
            has_holdout,
            f"{len(holdout)} holdout cases" if has_holdout else "no holdout split configured",
        )
    )
    if has_holdout:
        delta = Summary.of(candidate).score - Summary.of(baseline).score
        ok = delta >= min_improvement - DELTA_TOLERANCE
        detail = f"holdout delta {delta:.4f} is {'at least' if ok else 'below'} required {min_improvement:.4f}"
        rules.append(RuleOutcome("holdout_delta", ok, detail))
        regressed = [
            case.id
            for case, b, c in zip(holdout, baseline, candidate, strict=True)
            if case.critical and c.score < b.score - critical_tolerance
        ]
        rules.append(
            RuleOutcome(
                "critical_non_regression",
                not regressed,
                f"critical holdout case regressed: {regressed[0]}" if regressed else "no critical holdout case regressed",
            )
        )
    for rule in rules:
        if not rule.passed:
            return PromotionDecision(False, rule.detail, rules)
    return PromotionDecision(True, ELIGIBLE_REASON, rules)
