"""Acceptance (`search/acceptance`): whether a child's minibatch scores earn it a validation run.
The child is compared with its parent (a merge: the better parent) on the same cases under the
same paired seed. The verdict carries the rule's name and its gain: what `accept_top` ranks a
round's children by, and what `skip_perfect_parents` asks of a perfect child."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import ClassVar, Protocol

from gepa_lab.core.contracts import Evaluation
from gepa_lab.core.settings import check_number


@dataclass(slots=True)
class Verdict:
    accepted: bool
    reason: str  # the rule that judged (a rejection's reason; an accepted child's, with its gain)
    gain: float  # the rule's measure of improvement (higher is better)


def minibatch_gain(parent: Sequence[Evaluation], child: Sequence[Evaluation]) -> float:
    return math.fsum(ev.score for ev in child) - math.fsum(ev.score for ev in parent)


class Acceptance(Protocol):
    draws: ClassVar[str]

    def judge(self, parent: Sequence[Evaluation], child: Sequence[Evaluation]) -> Verdict: ...


class StrictImprovement:
    """GEPA's rule: the child's minibatch sum is strictly greater (`strict_minibatch_improvement`)."""

    draws = "none"

    def judge(self, parent: Sequence[Evaluation], child: Sequence[Evaluation]) -> Verdict:
        gain = minibatch_gain(parent, child)
        return Verdict(gain > 0, "strict_minibatch_improvement", gain)


class AtLeast:
    """A tie is enough when the child is no worse on the tie-break objective (mean over the
    minibatch, lower is better, e.g. `tokens`); without that objective a tie is accepted."""

    draws = "none"

    # Objectives where lower is better (what a tie-break can prefer); a typo would accept every tie.
    TIE_BREAKS = ("tokens", "agent_tokens", "prompt_tokens", "completion_tokens", "cost_usd", "latency_ms",
                  "tool_calls", "lm_calls")

    def __init__(self, tie_break: str | None = "tokens"):
        if tie_break is not None and tie_break not in self.TIE_BREAKS:
            raise ValueError(f"search.acceptance.tie_break must be one of {', '.join(self.TIE_BREAKS)}, or null to "
                             f"accept every tie (got {tie_break!r})")
        self.tie_break = tie_break

    def judge(self, parent: Sequence[Evaluation], child: Sequence[Evaluation]) -> Verdict:
        gain, name = minibatch_gain(parent, child), self.tie_break
        if gain != 0 or name is None or not all(name in ev.objectives for ev in (*parent, *child)):
            return Verdict(gain >= 0, "minibatch_at_least", gain)
        tie_won = math.fsum(ev.objectives[name] for ev in child) <= math.fsum(ev.objectives[name] for ev in parent)
        return Verdict(tie_won, "minibatch_at_least", gain)


class ByMargin:
    """The child's minibatch mean beats the parent's by more than `margin`."""

    draws = "none"

    def __init__(self, margin: float = 0.05):
        check_number(margin, "search.acceptance.margin", 0.0, 0.999)
        self.margin = float(margin)

    def judge(self, parent: Sequence[Evaluation], child: Sequence[Evaluation]) -> Verdict:
        gain = minibatch_gain(parent, child) / max(1, len(child))
        return Verdict(gain > self.margin, "minibatch_margin", gain)
