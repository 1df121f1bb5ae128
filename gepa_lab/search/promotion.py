"""The promotion decision (docs/design.md §4). Every rule is evaluated and recorded (a rule that
does not apply is recorded as skipped); the first failing rule names the reason. Eligible is not
live: only the revision store's approval makes a winner live.

Rules, in order:
1. the winner is not the seed;
2. a holdout split is configured;
3. the mean paired holdout delta reaches the minimum, and (by default) the lower bound of a paired
   bootstrap interval of it is above the minimum; both count each distinct holdout input once, and
   the interval needs at least 2 of them;
4. no critical holdout case regressed: passed under the seed and fails under the winner, or its
   quality dropped by more than the tolerance (efficiency credit alone never counts);
5. gates: pass-rate floors, no pass-rate regression, safety checks, efficiency growth ceilings;
6. with a transfer evaluator: the mean holdout delta under it (first holdout seed) also reaches
   the minimum.
With holdout repeats, each case's mean over the repeats feeds rules 3-5.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from gepa_lab.core.contracts import Case, Evaluation, content_key
from gepa_lab.core.result import ELIGIBLE_REASON, PromotionDecision, RuleOutcome
from gepa_lab.core.settings import PromotionPolicy

# Means of the same scores in another order can differ in the last bit; a true tie must pass.
DELTA_TOLERANCE = 1e-9
PASSED, SAFETY = "passed", "safety_passed"
MIN_INTERVAL_CASES = 2  # distinct holdout cases an interval needs to say anything


@dataclass(frozen=True)
class CaseMeans:
    """One holdout case's score and objectives, averaged over the holdout repeats."""

    score: float
    objectives: dict[str, float]


def case_means(repeats: Sequence[Sequence[Evaluation]]) -> list[CaseMeans]:
    """Per case (holdout order), the mean over repeats of the score and of each objective."""
    out = []
    for per_repeat in zip(*repeats, strict=True):
        names = {k for ev in per_repeat for k in ev.objectives}
        out.append(CaseMeans(
            math.fsum(ev.score for ev in per_repeat) / len(per_repeat),
            {k: math.fsum(ev.objectives[k] for ev in per_repeat if k in ev.objectives)
             / sum(k in ev.objectives for ev in per_repeat) for k in sorted(names)}))
    return out


def paired_interval(deltas: Sequence[float], confidence: float, resamples: int, seed: int) -> tuple[float, float]:
    """Percentile interval of the mean delta over `resamples` bootstrap resamples of the cases."""
    values = np.asarray(deltas, dtype=float)
    rng = np.random.default_rng(seed)
    means = values[rng.integers(0, len(values), size=(resamples, len(values)))].mean(axis=1)
    alpha = 1.0 - confidence
    low, high = np.quantile(means, [alpha / 2, 1 - alpha / 2])
    return float(low), float(high)


def _rule(rule: str, ok: bool, detail: str, value: float | None = None, threshold: float | None = None) -> RuleOutcome:
    return RuleOutcome(rule, ok, detail, "passed" if ok else "failed", value, threshold)


def _skipped(rule: str, why: str) -> RuleOutcome:
    return RuleOutcome(rule, True, why, "skipped")


def _unused(rule: str, configured: bool, unset: str, objective: str) -> RuleOutcome:
    """A gate that does not apply: not configured (`unset` says so), or its objective not reported."""
    return _skipped(rule, f"the evaluator reports no `{objective}` objective" if configured else unset)


def _mean_of(cases: Sequence[CaseMeans], objective: str) -> float | None:
    values = [c.objectives[objective] for c in cases if objective in c.objectives]
    return math.fsum(values) / len(values) if len(values) == len(cases) and values else None


def _critical(holdout: Sequence[Case], base: list[CaseMeans], cand: list[CaseMeans], policy: PromotionPolicy,
              quality: str | None) -> RuleOutcome:
    for case, b, c in zip(holdout, base, cand, strict=True):
        if not case.critical:
            continue
        lost_pass = PASSED in b.objectives and PASSED in c.objectives and (
            b.objectives[PASSED] >= 0.5 > c.objectives[PASSED])
        drop = (b.objectives[quality] - c.objectives[quality]
                if quality is not None and quality in b.objectives and quality in c.objectives else b.score - c.score)
        if lost_pass or drop > policy.critical_tolerance + DELTA_TOLERANCE:
            return _rule("critical_non_regression", False, f"critical holdout case regressed: {case.id}",
                         value=drop, threshold=policy.critical_tolerance)
    if not any(case.critical for case in holdout):
        return _skipped("critical_non_regression", "no critical holdout cases")
    return _rule("critical_non_regression", True, "no critical holdout case regressed")


def _gates(base: list[CaseMeans], cand: list[CaseMeans], validation: Sequence[Evaluation],
           policy: PromotionPolicy) -> list[RuleOutcome]:
    gates = policy.gates
    rules: list[RuleOutcome] = []
    val_rate = _mean_of([CaseMeans(ev.score, ev.objectives) for ev in validation], PASSED)
    base_rate, cand_rate = _mean_of(base, PASSED), _mean_of(cand, PASSED)
    for rule, floor, rate, where in (("gate.validation_pass_rate", gates.validation_pass_rate_floor, val_rate,
                                      "validation"),
                                     ("gate.holdout_pass_rate", gates.holdout_pass_rate_floor, cand_rate, "holdout")):
        if floor is None or rate is None:
            rules.append(_unused(rule, floor is not None, "no floor configured", PASSED))
        else:
            ok = rate >= floor - DELTA_TOLERANCE
            rules.append(_rule(rule, ok, f"{where} pass rate {rate:.4f} is {'at least' if ok else 'below'} the "
                               f"floor {floor:.4f}", rate, floor))
    if not gates.no_pass_rate_regression or base_rate is None or cand_rate is None:
        rules.append(_unused("gate.pass_rate_regression", gates.no_pass_rate_regression, "not required", PASSED))
    else:
        ok = cand_rate >= base_rate - DELTA_TOLERANCE
        rules.append(_rule("gate.pass_rate_regression", ok, f"holdout pass rate {cand_rate:.4f} "
                           f"{'holds' if ok else 'fell below'} the seed's {base_rate:.4f}", cand_rate, base_rate))
    reported = [c.objectives[SAFETY] for c in cand if SAFETY in c.objectives]
    if not gates.require_safety or not reported:
        rules.append(_unused("gate.safety", gates.require_safety, "not required", SAFETY))
    else:
        failing = sum(v < 1.0 - DELTA_TOLERANCE for v in reported)
        rules.append(_rule("gate.safety", failing == 0, f"{failing} holdout case(s) failed a safety check",
                           float(failing), 0.0))
    for objective, ceiling in gates.ceilings.items():
        rule = f"gate.ceiling.{objective}"
        b, c = _mean_of(base, objective), _mean_of(cand, objective)
        if ceiling is None or b is None or c is None:
            rules.append(_unused(rule, ceiling is not None, "no ceiling configured", objective))
        elif b == 0:
            rules.append(_rule(rule, c == 0, f"{objective} {c:g} against a zero baseline", c, 0.0))
        else:
            ratio = c / b
            ok = ratio <= ceiling + DELTA_TOLERANCE
            rules.append(_rule(rule, ok, f"{objective} grew {ratio:.4f}x, {'within' if ok else 'above'} the "
                               f"ceiling {ceiling:.4f}x", ratio, ceiling))
    return rules


def assess_promotion(*, best_is_seed: bool, holdout: Sequence[Case], baseline: Sequence[Sequence[Evaluation]],
                     candidate: Sequence[Sequence[Evaluation]], policy: PromotionPolicy,
                     validation: Sequence[Evaluation] = (), quality_objective: str | None = None,
                     bootstrap_seed: int = 0, transfer_evaluator: str | None = None,
                     transfer: tuple[Sequence[Evaluation], Sequence[Evaluation]] | None = None) -> PromotionDecision:
    """`baseline` / `candidate`: per holdout repeat, the evaluations in holdout order.
    `validation`: the winner's validation evaluations (pass-rate floor).
    `transfer_evaluator`: the transfer check's evaluator, if one is configured; `transfer`: seed's
    and winner's holdout evaluations under it (None when there was no winner to check)."""
    rules = [_rule("candidate_improved_validation", not best_is_seed,
                   "no accepted candidate improved validation" if best_is_seed else "best candidate is not the seed")]
    if not holdout:
        rules.append(_rule("holdout_configured", False, "no holdout split configured"))
        rules += [_skipped(r, "no holdout split") for r in ("holdout_delta", "holdout_interval",
                                                            "critical_non_regression", "gates")]
        return _decide(rules, None, None)
    rules.append(_rule("holdout_configured", True, f"{len(holdout)} holdout cases"))
    base, cand = case_means(baseline), case_means(candidate)
    # One delta per distinct holdout case (duplicates averaged), so copies of one case never count
    # as independent evidence.
    groups: dict[str, list[float]] = {}
    for case, b, c in zip(holdout, base, cand, strict=True):
        groups.setdefault(content_key(case), []).append(c.score - b.score)
    deltas = [math.fsum(values) / len(values) for values in groups.values()]
    delta, minimum = math.fsum(deltas) / len(deltas), policy.min_holdout_improvement
    ok = delta >= minimum - DELTA_TOLERANCE
    over = f" (over {len(deltas)} distinct of {len(holdout)} cases)" if len(deltas) < len(holdout) else ""
    rules.append(_rule("holdout_delta", ok, f"holdout delta {fmt(delta)} is {'at least' if ok else 'below'} "
                       f"required {minimum:.4f}{over}", delta, minimum))
    interval = _interval_rule(rules, delta, deltas, len(holdout), policy, bootstrap_seed)
    rules.append(_critical(holdout, base, cand, policy, quality_objective))
    rules += _gates(base, cand, validation, policy)
    if transfer_evaluator is not None:
        rules.append(_transfer(transfer_evaluator, transfer, minimum))
    return _decide(rules, delta, interval)


def _interval_rule(rules: list[RuleOutcome], delta: float, deltas: Sequence[float], cases: int,
                   policy: PromotionPolicy, bootstrap_seed: int) -> tuple[float, float] | None:
    """Rule 3b over the distinct cases' deltas; returns the interval (None: too few distinct cases,
    as resampling one case gives a zero-width interval that proves nothing)."""
    level, minimum = f"{policy.confidence * 100:g}%", policy.min_holdout_improvement
    if len(deltas) < MIN_INTERVAL_CASES:
        why = (f"the holdout has only {len(deltas)} distinct case ({cases} cases): a {level} interval needs at "
               f"least {MIN_INTERVAL_CASES}; add distinct holdout cases")
        rules.append(_rule("holdout_interval", False, why, float(len(deltas)), float(MIN_INTERVAL_CASES))
                     if policy.require_interval else _skipped("holdout_interval", f"not required ({why})"))
        return None
    low, high = interval = paired_interval(deltas, policy.confidence, policy.bootstrap_resamples, bootstrap_seed)
    if policy.require_interval:
        clears = low > minimum
        rules.append(_rule("holdout_interval", clears, f"holdout delta {fmt(delta, True)} [{level} CI "
                           f"{fmt(low, True)}, {fmt(high, True)}] {'clears' if clears else 'does not clear'} "
                           f"{minimum:.4f}", low, minimum))
    else:
        rules.append(_skipped("holdout_interval", f"not required ({level} CI {fmt(low, True)}, {fmt(high, True)})"))
    return interval


def fmt(value: float, sign: bool = False) -> str:
    """4 decimals, unless that would hide a non-zero value (-0.00002 reads -2.00e-05, never
    -0.0000, so "below required 0.0000" never contradicts the number beside it); float noise
    within the tie tolerance is zero."""
    value = 0.0 if abs(value) < DELTA_TOLERANCE else value
    text = f"{value:+.4f}" if sign else f"{value:.4f}"
    if value != 0 and float(text) == 0:
        return f"{value:+.2e}" if sign else f"{value:.2e}"
    return text.replace("-0.0000", "+0.0000" if sign else "0.0000") if value == 0 else text


def transfer_delta(evidence: tuple[Sequence[Evaluation], Sequence[Evaluation]]) -> float:
    base, cand = evidence
    return math.fsum(c.score - b.score for b, c in zip(base, cand, strict=True)) / len(base)


def _transfer(name: str, evidence: tuple[Sequence[Evaluation], Sequence[Evaluation]] | None,
              minimum: float) -> RuleOutcome:
    if evidence is None:
        return _skipped("transfer_delta", f"no winner to check under {name}")
    delta = transfer_delta(evidence)
    ok = delta >= minimum - DELTA_TOLERANCE
    return _rule("transfer_delta", ok, f"transfer holdout delta {fmt(delta)} under {name} is "
                 f"{'at least' if ok else 'below'} required {minimum:.4f}", delta, minimum)


def _decide(rules: list[RuleOutcome], delta: float | None, interval: tuple[float, float] | None) -> PromotionDecision:
    failed = next((rule for rule in rules if rule.status == "failed"), None)
    return PromotionDecision(failed is None, failed.detail if failed else ELIGIBLE_REASON, tuple(rules), delta,
                             interval)
