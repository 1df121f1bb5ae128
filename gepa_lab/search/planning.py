"""What the next round proposes: each proposal source plans in turn (a due merge, then reflection
fills the round), drawing from the run's one RNG in a fixed order per proposal — the source's
draws (a merge's pair; reflection's parent), the minibatch, the paired seed[, the child's seed
when unpaired] — before any of the round runs."""

from __future__ import annotations

import random
from dataclasses import dataclass, field

from gepa_lab.core.artifacts import Artifact
from gepa_lab.core.contracts import Dataset
from gepa_lab.core.settings import SearchConfig
from gepa_lab.search.policies import Policies
from gepa_lab.search.proposal import Plan
from gepa_lab.search.state import Candidate, Pool, SearchState, draw_seed


def proposal_calls(minibatch_size: int, dataset: Dataset, parents: int = 1) -> int:
    """Metric calls one proposal may spend: each parent and the child on the minibatch, the child
    on Validation."""
    return (parents + 1) * min(minibatch_size, len(dataset.feedback)) + len(dataset.validation)


@dataclass
class RoundPlanner:
    """The `Round` the proposal sources plan through (gepa_lab.search.policies.sources)."""

    state: SearchState
    config: SearchConfig
    policies: Policies
    dataset: Dataset
    k: int  # proposals the round may make
    room: int  # metric calls it may spend
    plans: list[Plan] = field(default_factory=list)

    def __post_init__(self) -> None:
        self._minibatch, self._validation = min(self.config.minibatch_size, len(self.dataset.feedback)), len(
            self.dataset.validation)

    @property
    def pool(self) -> Pool:
        return self.state.pool

    @property
    def rng(self) -> random.Random:
        return self.state.rng

    @property
    def open(self) -> bool:
        return len(self.plans) < self.k

    def fits(self, parents: int) -> bool:
        return len(self.plans) < self.k and self.room >= (parents + 1) * self._minibatch + self._validation

    def parent(self) -> Candidate:
        return self.policies.parent.select(self.state.pool, self.state.rng)

    def add(self, parents: tuple[Candidate, ...], child: Artifact | None = None, components: tuple[str, ...] = (),
            kind: str = "reflection") -> None:
        rng, config = self.state.rng, self.config
        minibatch = self.policies.batch.sample(self.dataset.feedback, config.minibatch_size, rng)
        paired_seed = draw_seed(rng)
        child_seed = paired_seed if config.paired_seeds or child is not None else draw_seed(rng)
        self.plans.append(Plan(self.state.iteration + len(self.plans), parents, minibatch, paired_seed, child_seed,
                               kind, child, components, parents[0].cursor))
        self.room -= (len(parents) + 1) * self._minibatch + self._validation


def plan_round(state: SearchState, config: SearchConfig, policies: Policies, k: int, room: int,
               dataset: Dataset) -> list[Plan]:
    """Up to k plans whose worst-case spend fits `room` metric calls."""
    planner = RoundPlanner(state, config, policies, dataset, k, room)
    for source in policies.sources:
        source.plan(planner)
    return planner.plans
