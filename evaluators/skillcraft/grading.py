"""The SkillCraft score of a graded run, and its quality / efficiency parts.

q = share of rubric checks passed; pass = artifact written and every critical check passed;
score = 0.79·q on fail, min(1, 0.80 + 0.19·q + 0.01·eff) on pass, eff = 1 − min(1, tokens/budget).
See docs/skillcraft_sim.md §5.
"""

from __future__ import annotations

from collections.abc import Mapping

from evaluators.skillcraft.family import Check

EFFICIENCY_WEIGHT = 0.01


def efficiency(tokens: float, token_budget: int) -> float:
    return 1.0 - min(1.0, tokens / token_budget)


def score_of(checks: list[Check], written: bool, tokens: int, token_budget: int) -> tuple[float, float, bool]:
    """(score, quality, passed) exactly as the SkillCraft optimizer computes them."""
    quality = sum(c.passed for c in checks) / len(checks) if checks else 0.0
    passed = written and all(c.passed for c in checks if c.critical)
    eff = efficiency(tokens, token_budget)
    score = min(1.0, 0.80 + 0.19 * quality + EFFICIENCY_WEIGHT * eff) if passed else 0.79 * quality
    return score, quality, passed


def efficiency_part(objectives: Mapping[str, float], token_budget: int) -> float:
    """The share of a score that comes from token efficiency (0 on a failed run); the rest of
    the score is its quality part."""
    if not objectives.get("passed"):
        return 0.0
    return EFFICIENCY_WEIGHT * efficiency(objectives["agent_tokens"], token_budget)
