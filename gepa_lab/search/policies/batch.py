"""Minibatch sampling: which Feedback cases a proposal is scored on (`search/batch`)."""

from __future__ import annotations

import random
from collections.abc import Sequence
from typing import Any, ClassVar, Protocol

from gepa_lab.core.contracts import Case


class BatchSampler(Protocol):
    draws: ClassVar[str]

    def sample(self, feedback: Sequence[Case], size: int, rng: random.Random) -> list[Case]: ...


class PerIteration:
    """A fresh sample without replacement for every proposal (docs/design.md §3)."""

    draws = "one rng.sample per proposal"

    def sample(self, feedback: Sequence[Case], size: int, rng: random.Random) -> list[Case]:
        return [feedback[i] for i in rng.sample(range(len(feedback)), min(size, len(feedback)))]


class EpochShuffled:
    """Walks a shuffled order of the Feedback split, `size` cases at a time, reshuffling when an
    epoch is used up, so every case is seen once per epoch (as the reference library's epoch
    sampler). A batch that straddles two epochs never repeats a case."""

    draws = "one rng.shuffle per epoch"

    def __init__(self) -> None:
        self._order: list[int] = []
        self._next = 0

    def sample(self, feedback: Sequence[Case], size: int, rng: random.Random) -> list[Case]:
        size = min(size, len(feedback))
        taken: list[int] = []
        while len(taken) < size:
            if self._next >= len(self._order):
                order = list(range(len(feedback)))
                rng.shuffle(order)
                # Cases this batch already holds go last in the new epoch: still seen once in it.
                self._order = [i for i in order if i not in taken] + [i for i in order if i in taken]
                self._next = 0
            taken.append(self._order[self._next])
            self._next += 1
        return [feedback[i] for i in taken]

    def state(self) -> dict[str, Any]:
        return {"order": list(self._order), "next": self._next}

    def restore(self, state: dict[str, Any]) -> None:
        self._order, self._next = [int(i) for i in state["order"]], int(state["next"])
