"""What the next round proposes: each proposal source plans in turn (a due merge, then reflection
fills the round), drawing from the run's one RNG in a fixed order per proposal — the source's
draws (a merge's pair; reflection's parent), the minibatch, the paired seed[, the child's seed
when unpaired] — before any of the round runs."""

from __future__ import annotations

from gepa_lab.core.artifacts import Artifact
from gepa_lab.core.contracts import Dataset
from gepa_lab.core.settings import SearchConfig
from gepa_lab.search.policies import Policies
from gepa_lab.search.proposal import Plan
from gepa_lab.search.state import Candidate, SearchState, draw_seed


def proposal_calls(minibatch_size: int, dataset: Dataset, parents: int = 1, repeats: int = 1) -> int:
    """Metric calls one proposal may spend: each parent and the child on the minibatch, the child
    on Validation (`repeats` times)."""
    return (parents + 1) * min(minibatch_size, len(dataset.feedback)) + repeats * len(dataset.validation)


class RoundPlanner:
    """What the proposal sources plan through (gepa_lab.search.policies.sources): the round's pool
    and RNG, whether a proposal with n parents still fits, the parent policy's choice, `add`."""

    def __init__(self, state: SearchState, config: SearchConfig, policies: Policies, dataset: Dataset, k: int,
                 room: int):
        self.state, self.config, self.policies, self.dataset = state, config, policies, dataset
        self.k, self.room, self.pool, self.rng = k, room, state.pool, state.rng
        self.plans: list[Plan] = []

    def fits(self, parents: int) -> bool:
        return len(self.plans) < self.k and self.room >= proposal_calls(self.config.minibatch_size, self.dataset,
                                                                        parents, self.config.validation_repeats)

    def parent(self) -> Candidate:
        return self.policies.parent.select(self.pool, self.rng)

    def add(self, parents: tuple[Candidate, ...], child: Artifact | None = None, components: tuple[str, ...] = (),
            kind: str = "reflection") -> None:
        rng, config = self.rng, self.config
        minibatch = self.policies.batch.sample(self.dataset.feedback, config.minibatch_size, rng)
        paired_seed = draw_seed(rng)
        child_seed = paired_seed if config.paired_seeds or child is not None else draw_seed(rng)
        self.plans.append(Plan(self.state.iteration + len(self.plans), parents, minibatch, paired_seed, child_seed,
                               kind, child, components, parents[0].cursor))
        self.room -= proposal_calls(config.minibatch_size, self.dataset, len(parents), config.validation_repeats)


def plan_round(state: SearchState, config: SearchConfig, policies: Policies, k: int, room: int,
               dataset: Dataset) -> list[Plan]:
    """Up to k plans whose worst-case spend fits `room` metric calls."""
    planner = RoundPlanner(state, config, policies, dataset, k, room)
    for source in policies.sources:
        source.plan(planner)
    return planner.plans
