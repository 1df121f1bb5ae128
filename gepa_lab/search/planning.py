"""What the next round proposes: parents, minibatches and paired seeds, drawn from the run's one
RNG in a fixed order per proposal — parent, minibatch, paired seed[, child seed when unpaired] —
and a due merge (GEPA+Merge) as the round's first proposal."""

from __future__ import annotations

from gepa_lab.core.artifacts import get_component
from gepa_lab.core.contracts import Dataset
from gepa_lab.core.settings import SearchConfig
from gepa_lab.search.policies import Policies
from gepa_lab.search.proposal import Plan
from gepa_lab.search.state import SearchState, draw_seed


def proposal_calls(minibatch_size: int, dataset: Dataset) -> int:
    """Metric calls one reflective proposal may spend: parent + child minibatch, child validation."""
    return 2 * min(minibatch_size, len(dataset.feedback)) + len(dataset.validation)


def plan_round(state: SearchState, config: SearchConfig, policies: Policies, k: int, room: int,
               dataset: Dataset) -> list[Plan]:
    """Up to k plans whose worst-case spend fits `room` metric calls (k already fits reflective
    proposals; a merge costs one minibatch more)."""
    rng, pool, feedback = state.rng, state.pool, dataset.feedback
    plans: list[Plan] = []
    per_proposal = proposal_calls(config.minibatch_size, dataset)
    # A merge scores both parents and the child on its minibatch, then the child on Validation.
    per_merge = per_proposal + min(config.minibatch_size, len(feedback))
    if policies.merge is not None and room >= per_merge:
        picked = policies.merge.pick(pool, rng)
        if picked is not None:
            a, b, child = picked
            minibatch = policies.batch.sample(feedback, config.minibatch_size, rng)
            seed = draw_seed(rng)
            components = tuple(c for c in a.artifact.COMPONENTS
                               if get_component(child, c) != get_component(a.artifact, c))
            plans.append(Plan(state.iteration, a, minibatch, seed, seed, other=b, child=child,
                              components=components, child_cursor=a.cursor))
            room -= per_merge
    same = policies.parent.select(pool, rng) if config.proposal_parents == "same" and len(plans) < k else None
    while len(plans) < k and room >= per_proposal:
        parent = same or policies.parent.select(pool, rng)
        minibatch = policies.batch.sample(feedback, config.minibatch_size, rng)
        paired_seed = draw_seed(rng)
        child_seed = paired_seed if config.paired_seeds else draw_seed(rng)
        plans.append(Plan(state.iteration + len(plans), parent, minibatch, paired_seed, child_seed))
        room -= per_proposal
    return plans
