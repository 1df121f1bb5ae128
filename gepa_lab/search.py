"""The GEPA search strategy: one reflective proposal per iteration (DESIGN §3 step 3).

The state is a plain value (pool, score rows, cursors, RNG, budget, counters) so it can be
checkpointed and resumed; `run_iteration` is the only thing that advances it.
"""

from __future__ import annotations

import math
import random
from dataclasses import dataclass, field
from typing import Any, Protocol

from gepa_lab.artifacts import Artifact, artifact_dict, artifact_id
from gepa_lab.contracts import Case, Dataset, Evaluation, Reflector, Summary
from gepa_lab.pareto import instance_fronts, prune_dominated, select_parent
from gepa_lab.reflection import (
    ReflectionRejected,
    ReflectionSettings,
    apply_reply,
    build_records,
    call_reflector,
    reflector_view,
)
from gepa_lab.tracking import CandidateInfo, IterationStats, Proposal

SEED_BITS = 63


def draw_seed(rng: random.Random) -> int:
    return rng.getrandbits(SEED_BITS)


@dataclass
class Candidate:
    id: str
    artifact: Artifact
    parent_id: str | None
    component: str | None
    iteration: int | None
    cursor: int  # index into artifact.COMPONENTS of the next component to mutate
    validation: list[Evaluation]
    rationale: str = ""

    @property
    def scores(self) -> list[float]:
        return [ev.score for ev in self.validation]

    @property
    def mean(self) -> float:
        return math.fsum(self.scores) / len(self.scores)

    def info(self) -> CandidateInfo:
        return CandidateInfo(self.id, artifact_dict(self.artifact), self.parent_id, self.component,
                             self.iteration, self.rationale)


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
    pool: list[Candidate] = field(default_factory=list)
    iteration: int = 0  # next iteration to run
    stop_reason: str | None = None

    def ids(self) -> set[str]:
        return {c.id for c in self.pool}

    def get(self, candidate_id: str) -> Candidate:
        return next(c for c in self.pool if c.id == candidate_id)

    def score_matrix(self) -> dict[str, list[float]]:
        return {c.id: c.scores for c in self.pool}

    def best(self) -> Candidate:
        # Strict '>' keeps the earliest candidate on ties, so the seed wins ties.
        best = self.pool[0]
        for cand in self.pool[1:]:
            if cand.mean > best.mean:
                best = cand
        return best

    def front_size(self) -> int:
        matrix = self.score_matrix()
        return len(prune_dominated(matrix, instance_fronts(matrix)))


class Scorer(Protocol):
    """What the search needs from the engine: score an artifact on cases (spending budget)."""

    def __call__(self, artifact: Artifact, candidate_id: str, cases: list[Case], seed: int,
                 phase: str) -> list[Evaluation]: ...


def iteration_calls(minibatch_size: int, dataset: Dataset) -> int:
    """Metric calls one iteration may spend: parent + child minibatch, child validation."""
    return 2 * min(minibatch_size, len(dataset.feedback)) + len(dataset.validation)


def run_iteration(
    state: SearchState,
    dataset: Dataset,
    reflector: Reflector,
    score: Scorer,
    minibatch_size: int,
    reflection: ReflectionSettings | None = None,
) -> Proposal:
    """One GEPA iteration. RNG draw order: parent, minibatch, paired seed."""
    iteration = state.iteration
    parent = state.get(select_parent(state.score_matrix(), state.rng))
    batch_size = min(minibatch_size, len(dataset.feedback))
    indices = state.rng.sample(range(len(dataset.feedback)), batch_size)
    minibatch = [dataset.feedback[i] for i in indices]
    paired_seed = draw_seed(state.rng)

    parent_evals = score(parent.artifact, parent.id, minibatch, paired_seed, "feedback-parent")
    components = parent.artifact.COMPONENTS
    component = components[parent.cursor]
    parent.cursor = (parent.cursor + 1) % len(components)

    records = build_records(minibatch, parent_evals)
    base: dict[str, Any] = dict(
        iteration=iteration,
        parent_id=parent.id,
        component=component,
        minibatch=[c.id for c in minibatch],
        paired_seed=paired_seed,
        parent_scores=[e.score for e in parent_evals],
        records=records,
        parent_artifact=artifact_dict(parent.artifact),
    )
    reply = call_reflector(reflector, reflector_view(parent.artifact), component, records,
                           reflection or ReflectionSettings())
    base["reply"] = reply
    try:
        child, rationale = apply_reply(parent.artifact, component, reply)
    except ReflectionRejected as exc:
        return Proposal(status="reflection_rejected", reason=f"reflection rejected: {exc}", **base)

    child_id = artifact_id(child)
    base.update(candidate_id=child_id, artifact=artifact_dict(child), rationale=rationale)
    if child_id in state.ids():
        return Proposal(status="duplicate", reason="candidate already in pool", **base)

    child_evals = score(child, child_id, minibatch, paired_seed, "feedback-child")
    base["child_scores"] = [e.score for e in child_evals]
    parent_sum = math.fsum(base["parent_scores"])
    child_sum = math.fsum(base["child_scores"])
    if not child_sum > parent_sum:
        return Proposal(status="rejected", reason="strict_minibatch_improvement", **base)

    validation = score(child, child_id, dataset.validation, state.validation_seed, "validation")
    # Survivors always join the pool: a lower validation mean may still own a Pareto instance.
    state.pool.append(
        Candidate(child_id, child, parent.id, component, iteration, parent.cursor, validation, rationale)
    )
    return Proposal(status="accepted", reason="strict minibatch improvement", validation=Summary.of(validation), **base)


def iteration_stats(state: SearchState, task_cost_usd: float = 0.0, reflection_cost_usd: float = 0.0) -> IterationStats:
    best = state.best()
    return IterationStats(
        iteration=state.iteration,
        best_id=best.id,
        best_validation_mean=best.mean,
        pool_size=len(state.pool),
        front_size=state.front_size(),
        metric_calls=state.budget.used,
        task_cost_usd=task_cost_usd,
        reflection_cost_usd=reflection_cost_usd,
    )

