"""The GEPA search strategy: one reflective proposal per iteration (docs/design.md §3 step 3).

`run_iteration` draws from the run's RNG in a fixed order (parent, minibatch, paired seed),
scores through the engine's `Scorer` (which spends the budget) and asks the engine's `Reflect`
callable for a reply (which applies the retry policy). It returns the `Proposal` with every batch
it scored; an accepted child has joined the pool when it returns.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any, Protocol

from gepa_lab.core.artifacts import Artifact, artifact_id
from gepa_lab.core.contracts import Case, Dataset
from gepa_lab.core.errors import ReflectionRejected
from gepa_lab.core.events import Proposal, ScoredBatch
from gepa_lab.search.reflection import apply_reply, build_records, reflector_view
from gepa_lab.search.state import Candidate, SearchState, draw_seed


class Scorer(Protocol):
    """Score an artifact on cases with a seed, spending budget; the engine implements it."""

    def __call__(self, artifact: Artifact, candidate_id: str, cases: Sequence[Case], seed: int,
                 phase: str) -> ScoredBatch: ...


class Reflect(Protocol):
    """Ask the reflector for a reply (retries and failure policy are the engine's)."""

    def __call__(self, artifact: Artifact, component: str, records: list[dict[str, Any]]) -> Any: ...


def iteration_calls(minibatch_size: int, dataset: Dataset) -> int:
    """Metric calls one iteration may spend: parent + child minibatch, child validation."""
    return 2 * min(minibatch_size, len(dataset.feedback)) + len(dataset.validation)


def run_iteration(state: SearchState, dataset: Dataset, reflect: Reflect, score: Scorer,
                  minibatch_size: int) -> Proposal:
    """One GEPA iteration. RNG draw order: parent, minibatch, paired seed."""
    iteration = state.iteration
    parent = state.select_parent()
    feedback = dataset.feedback
    indices = state.rng.sample(range(len(feedback)), min(minibatch_size, len(feedback)))
    minibatch = [feedback[i] for i in indices]
    paired_seed = draw_seed(state.rng)

    parent_batch = score(parent.artifact, parent.id, minibatch, paired_seed, "feedback-parent")
    components = parent.artifact.COMPONENTS
    component = components[parent.cursor]
    parent.cursor = (parent.cursor + 1) % len(components)

    records = build_records(minibatch, parent_batch.evaluations)
    if parent.view is None:  # redacted once per candidate, not once per iteration
        parent.view = reflector_view(parent.artifact)
    reply = reflect(parent.view, component, records)
    base: dict[str, Any] = dict(iteration=iteration, parent_id=parent.id, parent=parent.artifact,
                                component=component, minibatch=tuple(c.id for c in minibatch),
                                paired_seed=paired_seed, parent_batch=parent_batch, records=records,
                                reply=reply)
    try:
        child, rationale = apply_reply(parent.artifact, component, reply)
    except ReflectionRejected as exc:
        return Proposal(status="reflection_rejected", reason=f"reflection rejected: {exc}", **base)

    child_id = artifact_id(child)
    base.update(candidate_id=child_id, artifact=child, rationale=rationale)
    if child_id in state:
        return Proposal(status="duplicate", reason="candidate already in pool", **base)

    child_batch = score(child, child_id, minibatch, paired_seed, "feedback-child")
    if not math.fsum(child_batch.scores) > math.fsum(parent_batch.scores):
        return Proposal(status="rejected", reason="strict_minibatch_improvement", child_batch=child_batch, **base)

    validation = score(child, child_id, dataset.validation, state.validation_seed, "validation")
    # Survivors always join the pool: a lower validation mean may still own a Pareto instance.
    state.add(Candidate(child_id, child, parent.id, component, iteration, parent.cursor,
                        validation.evaluations, state.budget.used, rationale))
    return Proposal(status="accepted", reason="strict minibatch improvement", child_batch=child_batch,
                    validation_batch=validation, **base)
