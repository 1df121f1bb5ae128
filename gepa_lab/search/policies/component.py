"""Component selection: which of the parent's components a proposal rewrites (`search/component`).
The child inherits its parent's cursor (the next component in round-robin order) as it stands
after the choice."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, ClassVar, Protocol

from gepa_lab.core.contracts import Evaluation

if TYPE_CHECKING:
    from gepa_lab.search.state import Candidate


class ComponentSelector(Protocol):
    draws: ClassVar[str]

    def choose(self, parent: Candidate, evaluations: Sequence[Evaluation]) -> tuple[str, ...]: ...


def _advance(parent: Candidate) -> str:
    components = parent.artifact.COMPONENTS
    chosen = components[parent.cursor % len(components)]
    parent.cursor = (parent.cursor + 1) % len(components)
    return chosen


class RoundRobin:
    """Per candidate, the components in turn (docs/design.md §3)."""

    draws = "none"

    def choose(self, parent: Candidate, evaluations: Sequence[Evaluation]) -> tuple[str, ...]:
        return (_advance(parent),)


class AllComponents:
    """Every component at once: one reflection per component, all applied to one child."""

    draws = "none"

    def choose(self, parent: Candidate, evaluations: Sequence[Evaluation]) -> tuple[str, ...]:
        return tuple(parent.artifact.COMPONENTS)


def mentions(feedback: str, component: str) -> bool:
    text, name = feedback.lower(), component.lower()
    return name in text or name.replace("_", " ") in text


class MostFailures:
    """The component named by the most failing minibatch cases' feedback (score below 1); ties and
    feedback that names none fall back to round-robin order from the parent's cursor."""

    draws = "none"

    def choose(self, parent: Candidate, evaluations: Sequence[Evaluation]) -> tuple[str, ...]:
        components = parent.artifact.COMPONENTS
        failing = [ev.feedback for ev in evaluations if ev.score < 1.0]
        counts = [sum(mentions(text, c) for text in failing) for c in components]
        if max(counts, default=0) == 0:
            return (_advance(parent),)
        n, start = len(components), parent.cursor
        return (components[max(((start + i) % n for i in range(n)), key=counts.__getitem__)],)
