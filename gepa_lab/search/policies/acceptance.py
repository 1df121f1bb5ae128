"""Acceptance: whether a child's minibatch scores earn it a validation run (`search/acceptance`).
The child is always compared with its parent on the same cases under the same paired seed."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import ClassVar, Protocol

from gepa_lab.core.contracts import Evaluation


def minibatch_sum(evaluations: Sequence[Evaluation]) -> float:
    return math.fsum(ev.score for ev in evaluations)


class Acceptance(Protocol):
    draws: ClassVar[str]

    def accepts(self, parent: Sequence[Evaluation], child: Sequence[Evaluation]) -> bool: ...


class StrictImprovement:
    """GEPA's rule: the child's minibatch sum is strictly greater (`strict_minibatch_improvement`)."""

    draws = "none"
    reason = "strict_minibatch_improvement"

    def accepts(self, parent: Sequence[Evaluation], child: Sequence[Evaluation]) -> bool:
        return minibatch_sum(child) > minibatch_sum(parent)


class AtLeast:
    """A tie is enough when the child is no worse on the tie-break objective (mean over the
    minibatch, lower is better, e.g. `tokens`); without that objective a tie is accepted."""

    draws = "none"
    reason = "minibatch_at_least"

    # Objectives where lower is better (what a tie-break can prefer); a typo would accept every tie.
    TIE_BREAKS = ("tokens", "agent_tokens", "prompt_tokens", "completion_tokens", "cost_usd", "latency_ms",
                  "tool_calls", "lm_calls")

    def __init__(self, tie_break: str | None = "tokens"):
        if tie_break is not None and tie_break not in self.TIE_BREAKS:
            raise ValueError(f"search.acceptance.tie_break must be one of {', '.join(self.TIE_BREAKS)}, or null to "
                             f"accept every tie (got {tie_break!r})")
        self.tie_break = tie_break

    def accepts(self, parent: Sequence[Evaluation], child: Sequence[Evaluation]) -> bool:
        gain = minibatch_sum(child) - minibatch_sum(parent)
        if gain != 0:
            return gain > 0
        name = self.tie_break
        if name is None or not all(name in ev.objectives for ev in (*parent, *child)):
            return True
        return math.fsum(ev.objectives[name] for ev in child) <= math.fsum(ev.objectives[name] for ev in parent)


class ByMargin:
    """The child's minibatch mean beats the parent's by more than `margin`."""

    draws = "none"
    reason = "minibatch_margin"

    def __init__(self, margin: float = 0.05):
        if isinstance(margin, bool) or not isinstance(margin, (int, float)) or not 0 <= margin < 1:
            raise ValueError(f"search.acceptance.margin must be a number in [0, 1) (got {margin!r})")
        self.margin = float(margin)

    def accepts(self, parent: Sequence[Evaluation], child: Sequence[Evaluation]) -> bool:
        n = max(1, len(child))
        return (minibatch_sum(child) - minibatch_sum(parent)) / n > self.margin
