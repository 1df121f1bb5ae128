"""The frontier (`search/frontier`): the keys on which candidates hold Pareto fronts. Each key's
value is higher-is-better; parent selection draws from the candidates holding fronts."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from types import MappingProxyType
from typing import ClassVar, Protocol

from gepa_lab.core.contracts import Evaluation


class Frontier(Protocol):
    draws: ClassVar[str]

    def values(self, validation: Sequence[Evaluation]) -> list[float]: ...


SCORE_AND_TOKENS: Mapping[str, str] = MappingProxyType({"score": "max", "tokens": "min"})


class Instance:
    """One key per validation case: its score (GEPA's instance-level frontier)."""

    draws = "none"

    def values(self, validation: Sequence[Evaluation]) -> list[float]:
        return [ev.score for ev in validation]


class Objective:
    """One key per objective: its mean over Validation (`score` is the score itself), negated for
    objectives to minimise. A candidate lacking an objective holds no front on it."""

    draws = "none"

    def __init__(self, objectives: Mapping[str, str] = SCORE_AND_TOKENS):
        self.objectives = dict(objectives)
        self._signs: dict[str, float] = {}
        for name, direction in self.objectives.items():
            if direction not in ("max", "min"):
                raise ValueError(f"search.frontier.objectives.{name} must be 'max' or 'min' (got {direction!r})")
            self._signs[str(name)] = 1.0 if direction == "max" else -1.0

    def values(self, validation: Sequence[Evaluation]) -> list[float]:
        out = []
        for name, sign in self._signs.items():
            found = ([ev.score for ev in validation] if name == "score"
                     else [ev.objectives[name] for ev in validation if name in ev.objectives])
            out.append(sign * math.fsum(found) / len(found) if found and len(found) == len(validation) else -math.inf)
        return out


class Hybrid(Objective):
    """The instance keys followed by the objective keys."""

    draws = "none"

    def values(self, validation: Sequence[Evaluation]) -> list[float]:
        return Instance().values(validation) + super().values(validation)
