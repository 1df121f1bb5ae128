"""The GEPA search strategy: a round of k reflective proposals (docs/design.md §3 step 3).

`plan_round` draws everything a round needs from the run's single RNG, in a fixed order (per
proposal: parent, minibatch, paired seed) and from the state as it was when the round began.
`run_round` then runs the k proposals concurrently, each as a chain — score the parent, reflect,
score the child on the same minibatch with the same seed, score an improving child on
Validation — with every decision that links proposals taken in proposal order, so the outcome
never depends on timing or on the number of workers. With k = 1 a round is exactly one classic
GEPA iteration. Accepted children join the pool in proposal order when the round ends.
"""

from __future__ import annotations

import math
import threading
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol, TypeVar

from gepa_lab.core.artifacts import Artifact, artifact_id
from gepa_lab.core.contracts import Case, Dataset, Evaluation
from gepa_lab.core.errors import ReflectionRejected
from gepa_lab.core.events import Proposal, ScoredBatch
from gepa_lab.core.settings import SearchConfig
from gepa_lab.search.reflection import apply_reply, build_records, reflector_view
from gepa_lab.search.state import Candidate, SearchState, draw_seed

T = TypeVar("T")
R = TypeVar("R")


class Evaluate(Protocol):
    """Score an artifact on cases with a seed, spending budget (no events yet)."""

    def __call__(self, artifact: Artifact, candidate_id: str, cases: Sequence[Case], seed: int,
                 phase: str) -> tuple[Evaluation, ...]: ...


class Emit(Protocol):
    """Record a scored batch (index, cost, trackers), in a deterministic order."""

    def __call__(self, phase: str, candidate_id: str, seed: int, evaluations: tuple[Evaluation, ...]) -> ScoredBatch: ...


class Reflect(Protocol):
    """Ask the reflector for a reply (retries and failure policy are the engine's)."""

    def __call__(self, artifact: Artifact, component: str, records: list[dict[str, Any]]) -> Any: ...


Map = Callable[[Callable[[T], R], Iterable[T]], list[R]]


def iteration_calls(minibatch_size: int, dataset: Dataset) -> int:
    """Metric calls one proposal may spend: parent + child minibatch, child validation."""
    return 2 * min(minibatch_size, len(dataset.feedback)) + len(dataset.validation)


@dataclass
class Plan:
    """One proposal of a round, filled in as the round goes."""

    iteration: int
    parent: Candidate
    component: str
    minibatch: list[Case]
    paired_seed: int
    child_seed: int  # == paired_seed unless the (ablation) unpaired mode is on
    child_cursor: int  # the child inherits its parent's round-robin cursor
    parent_batch: ScoredBatch | None = None
    records: list[dict[str, Any]] = field(default_factory=list)
    reply: Any = None
    child: Artifact | None = None
    child_id: str | None = None
    rationale: str = ""
    status: str = ""
    reason: str = ""
    child_batch: ScoredBatch | None = None
    validation_batch: ScoredBatch | None = None
    parent_evals: tuple[Evaluation, ...] = ()
    child_evals: tuple[Evaluation, ...] = ()
    validation_evals: tuple[Evaluation, ...] = ()
    fresh: bool = False  # a new child (not rejected, not a duplicate): it gets scored

    @property
    def gain(self) -> float:
        """Child minus parent minibatch sum (exact sums: the comparison is strict)."""
        return math.fsum([e.score for e in self.child_evals]) - math.fsum([e.score for e in self.parent_evals])


def plan_round(state: SearchState, dataset: Dataset, config: SearchConfig, k: int) -> list[Plan]:
    """Draw the round's parents, minibatches and seeds (RNG order per proposal: parent,
    minibatch, paired seed[, child seed when unpaired])."""
    feedback = dataset.feedback
    def pick() -> Candidate:
        return state.best() if config.parent_selection == "best" else state.select_parent()

    same = pick() if config.proposal_parents == "same" else None
    plans = []
    for j in range(k):
        parent = same or pick()
        minibatch = [feedback[i] for i in state.rng.sample(range(len(feedback)), min(config.minibatch_size,
                                                                                     len(feedback)))]
        paired_seed = draw_seed(state.rng)
        child_seed = paired_seed if config.paired_seeds else draw_seed(state.rng)
        components = parent.artifact.COMPONENTS
        component = components[parent.cursor]
        parent.cursor = (parent.cursor + 1) % len(components)
        plans.append(Plan(state.iteration + j, parent, component, minibatch, paired_seed, child_seed, parent.cursor))
    return plans


def run_round(plans: list[Plan], state: SearchState, dataset: Dataset, config: SearchConfig, evaluate: Evaluate,
              emit: Emit, reflect: Reflect, map_: Map) -> list[Proposal]:
    """Each proposal runs as its own chain (parent minibatch, reflection, child minibatch and,
    when every improving child is accepted, validation), chains concurrently. The one decision
    that links proposals — is this child a duplicate of an earlier one? — waits for the earlier
    proposals' replies, in proposal order. Batches are recorded in proposal order; with one
    proposal, as soon as they are paid for."""
    immediate = len(plans) == 1
    decided = [threading.Event() for _ in plans] if not immediate else []
    pool_ids = {c.id for c in state.pool}
    validate_in_chain = config.accept_top is None

    def validate(plan: Plan) -> None:
        assert plan.child is not None and plan.child_id is not None
        plan.validation_evals = evaluate(plan.child, plan.child_id, dataset.validation, state.validation_seed,
                                         "validation")
        if immediate:
            record(plan)

    def chain(j: int) -> None:
        plan = plans[j]
        try:
            plan.parent_evals = evaluate(plan.parent.artifact, plan.parent.id, plan.minibatch, plan.paired_seed,
                                         "feedback-parent")
            if immediate:  # a reflection that fails next must not leave paid evaluations unrecorded
                record(plan)
            plan.records = build_records(plan.minibatch, plan.parent_evals)
            if plan.parent.view is None:  # redacted once per candidate, not once per proposal
                plan.parent.view = reflector_view(plan.parent.artifact)
            plan.reply = reflect(plan.parent.view, plan.component, plan.records)
            try:
                plan.child, plan.rationale = apply_reply(plan.parent.artifact, plan.component, plan.reply)
                plan.child_id = artifact_id(plan.child)
            except ReflectionRejected as exc:
                plan.status, plan.reason = "reflection_rejected", f"reflection rejected: {exc}"
        finally:
            if j:
                decided[j - 1].wait()
            if plan.child_id is not None and not plan.status:
                earlier = {p.child_id for p in plans[:j] if p.fresh}
                if plan.child_id in pool_ids or plan.child_id in earlier:
                    plan.status, plan.reason = "duplicate", "candidate already in pool"
                else:
                    plan.fresh = True
            if decided:
                decided[j].set()
        if not plan.fresh:
            return
        assert plan.child is not None and plan.child_id is not None
        plan.child_evals = evaluate(plan.child, plan.child_id, plan.minibatch, plan.child_seed, "feedback-child")
        if immediate:
            record(plan)
        if validate_in_chain and plan.gain > 0:  # strictly greater minibatch sum
            validate(plan)

    def record(plan: Plan) -> None:
        """Record whatever this proposal has paid for and not yet recorded, in phase order."""
        if plan.parent_batch is None and plan.parent_evals:
            plan.parent_batch = emit("feedback-parent", plan.parent.id, plan.paired_seed, plan.parent_evals)
        if plan.child_batch is None and plan.child_evals:
            assert plan.child_id is not None
            plan.child_batch = emit("feedback-child", plan.child_id, plan.child_seed, plan.child_evals)
        if plan.validation_batch is None and plan.validation_evals:
            assert plan.child_id is not None
            plan.validation_batch = emit("validation", plan.child_id, state.validation_seed, plan.validation_evals)

    try:
        map_(chain, range(len(plans)))
    finally:
        for plan in plans:
            record(plan)
    live = [p for p in plans if p.fresh]
    improving = [p for p in live if p.gain > 0]
    chosen = _select(improving, config.accept_top)
    if not validate_in_chain:  # the round's gains decide which children are validated
        map_(validate, chosen)
        for plan in chosen:
            record(plan)
    for plan in live:
        if plan not in improving:
            plan.status, plan.reason = "rejected", "strict_minibatch_improvement"
        elif plan not in chosen:
            plan.status, plan.reason = "rejected", f"round_acceptance: {config.accept_top} larger gain(s) in the round"
    for plan in chosen:  # they join the pool in proposal order
        assert plan.child is not None and plan.child_id is not None
        # Survivors always join the pool: a lower validation mean may still own a Pareto instance.
        state.add(Candidate(plan.child_id, plan.child, plan.parent.id, plan.component, plan.iteration,
                            plan.child_cursor, plan.validation_evals, state.budget.used, plan.rationale))
        plan.status, plan.reason = "accepted", "strict minibatch improvement"
    return [_proposal(plan) for plan in plans]


def _select(improving: list[Plan], top: int | None) -> list[Plan]:
    """All improving children, or the `top` with the largest minibatch gain (ties: earlier first),
    kept in proposal order."""
    if top is None or len(improving) <= top:
        return improving
    ranked = sorted(range(len(improving)), key=lambda i: (-improving[i].gain, i))[:top]
    return [improving[i] for i in sorted(ranked)]


def _proposal(plan: Plan) -> Proposal:
    assert plan.parent_batch is not None
    return Proposal(iteration=plan.iteration, parent_id=plan.parent.id, parent=plan.parent.artifact,
                    component=plan.component, status=plan.status, reason=plan.reason,
                    minibatch=tuple(c.id for c in plan.minibatch), paired_seed=plan.paired_seed,
                    parent_batch=plan.parent_batch, records=plan.records, reply=plan.reply,
                    candidate_id=plan.child_id, artifact=plan.child, rationale=plan.rationale,
                    child_batch=plan.child_batch, validation_batch=plan.validation_batch)
