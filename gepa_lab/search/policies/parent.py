"""Parent selection: which pool member the next proposal mutates (`search/parent`)."""

from __future__ import annotations

import random
from typing import TYPE_CHECKING, ClassVar, Protocol

from gepa_lab.core.settings import check_int, check_number

if TYPE_CHECKING:
    from gepa_lab.search.state import Candidate, Pool


class ParentSelector(Protocol):
    draws: ClassVar[str]

    def select(self, pool: Pool, rng: random.Random) -> Candidate: ...


class Pareto:
    """GEPA's rule (docs/design.md §3): uniform over the frontier's selection list, so a candidate
    is drawn in proportion to the fronts it holds."""

    draws = "one randrange over the selection list (none with no validation cases)"

    def select(self, pool: Pool, rng: random.Random) -> Candidate:
        chosen = pool.selection()
        if not chosen:  # no validation cases: nothing holds a front
            return pool.best()
        return pool.get(chosen[rng.randrange(len(chosen))])


class CurrentBest:
    """The highest validation mean (ties: the earliest): pure exploitation."""

    draws = "none"

    def select(self, pool: Pool, rng: random.Random) -> Candidate:
        return pool.best()


class EpsilonGreedy:
    """With probability `epsilon` a pool member drawn uniformly, else the current best."""

    draws = "one random(); a randrange over the pool when it explores"

    def __init__(self, epsilon: float = 0.1):
        check_number(epsilon, "search.parent.epsilon", 0.0, 1.0)
        self.epsilon = epsilon

    def select(self, pool: Pool, rng: random.Random) -> Candidate:
        return pool.members[rng.randrange(len(pool.members))] if rng.random() < self.epsilon else pool.best()


class TopKPareto:
    """Pareto selection restricted to the `k` frontier survivors with the highest validation
    means (ties: earlier first)."""

    draws = "one randrange over the restricted selection list"

    def __init__(self, k: int = 3):
        check_int(k, "search.parent.k", 1)
        self.k = k

    def select(self, pool: Pool, rng: random.Random) -> Candidate:
        chosen = pool.selection()
        if not chosen:
            return pool.best()
        order = {c.id: i for i, c in enumerate(pool.members)}
        ranked = sorted(set(chosen), key=lambda cid: (-pool.get(cid).mean, order[cid]))[:self.k]
        kept = [cid for cid in chosen if cid in ranked]
        return pool.get(kept[rng.randrange(len(kept))])
