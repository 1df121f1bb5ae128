"""The search state: the pool, the budget and the run's single seeded RNG.

A plain value so `gepa_lab.runs.checkpoint` can save and restore it. The engine and the strategy
advance it; Pareto selection over it is cached until the pool changes.
"""

from __future__ import annotations

import math
import random
from dataclasses import dataclass, field

from gepa_lab.core.artifacts import Artifact
from gepa_lab.core.contracts import Evaluation
from gepa_lab.search.pareto import ordered_selection, prune_dominated

SEED_BITS = 63


def draw_seed(rng: random.Random) -> int:
    return rng.getrandbits(SEED_BITS)


@dataclass
class Candidate:
    """A pool member. `cursor` indexes artifact.COMPONENTS: the next component to mutate."""

    id: str
    artifact: Artifact
    parent_id: str | None
    component: str | None
    iteration: int | None
    cursor: int
    validation: tuple[Evaluation, ...]
    metric_calls: int = 0  # budget spent when it joined the pool
    rationale: str = ""
    scores: list[float] = field(init=False, repr=False)
    mean: float = field(init=False, repr=False)
    view: Artifact | None = field(default=None, repr=False)  # what the reflector sees (cached)

    def __post_init__(self) -> None:
        self.scores = [ev.score for ev in self.validation]
        self.mean = math.fsum(self.scores) / len(self.scores) if self.scores else 0.0


@dataclass
class Budget:
    max_calls: int
    used: int = 0

    def can_spend(self, calls: int, reserve: int) -> bool:
        return self.used + calls + reserve <= self.max_calls


@dataclass
class SearchState:
    rng: random.Random
    budget: Budget
    validation_seed: int
    holdout_seeds: list[int] = field(default_factory=list)  # drawn right after the validation seed
    pool: list[Candidate] = field(default_factory=list)
    iteration: int = 0  # the next iteration to run
    proposals: int = 0
    stop_reason: str | None = None
    _by_id: dict[str, Candidate] = field(default_factory=dict, repr=False)
    _top: list[float] = field(default_factory=list, repr=False)  # per validation case: the best score
    _fronts: list[set[str]] = field(default_factory=list, repr=False)  # per case: who holds it
    _selection: list[str] | None = field(default=None, repr=False)
    _alive: set[str] | None = field(default=None, repr=False)

    def add(self, candidate: Candidate) -> None:
        self.pool.append(candidate)
        self._by_id[candidate.id] = candidate
        if not self._fronts:
            self._top = list(candidate.scores)
            self._fronts = [{candidate.id} for _ in candidate.scores]
        else:  # the fronts move only where the newcomer ties or beats the best (exact ties kept)
            for case, score in enumerate(candidate.scores):
                if score > self._top[case]:
                    self._top[case], self._fronts[case] = score, {candidate.id}
                elif score == self._top[case]:
                    self._fronts[case].add(candidate.id)
        self._selection = self._alive = None

    def _survivors(self) -> set[str]:
        if self._alive is None:
            self._alive = prune_dominated(self.score_matrix(), self._fronts)
        return self._alive

    def __contains__(self, candidate_id: str) -> bool:
        return candidate_id in self._by_id

    def get(self, candidate_id: str) -> Candidate:
        return self._by_id[candidate_id]

    def score_matrix(self) -> dict[str, list[float]]:
        return {c.id: c.scores for c in self.pool}

    def select_parent(self) -> Candidate:
        """Instance-level Pareto selection (exactly `pareto.select_parent`), one RNG draw."""
        if self._selection is None:
            self._selection = ordered_selection(self._fronts, self._survivors(), [c.id for c in self.pool])
        if not self._selection:  # no validation cases: nothing owns a front
            return self.best()
        return self._by_id[self._selection[self.rng.randrange(len(self._selection))]]

    def best(self) -> Candidate:
        # Strict '>' keeps the earliest candidate on ties, so the seed wins ties.
        best = self.pool[0]
        for cand in self.pool[1:]:
            if cand.mean > best.mean:
                best = cand
        return best

    def front_size(self) -> int:
        return len(self._survivors())
