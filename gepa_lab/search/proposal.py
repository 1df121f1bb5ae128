"""One proposal, step by step (docs/design.md §3): a reflective mutation of one parent, or a merge
of two pool members (GEPA+Merge). The steps run in sequence; the two that depend on earlier
proposals of the same round (choosing the component, and the duplicate check) wait for their
turn, so a round's outcome never depends on timing (`scheduler.py` owns the concurrency).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass, field
from typing import Any

from gepa_lab.core.artifacts import Artifact, artifact_id
from gepa_lab.core.contracts import Case, Evaluation
from gepa_lab.core.errors import ReflectionRejected
from gepa_lab.core.events import Proposal, ScoredBatch
from gepa_lab.search.policies import Acceptance, ComponentSelector
from gepa_lab.search.reflection import apply_replies, build_records, reflector_view
from gepa_lab.search.state import Candidate, Pool


@dataclass
class Plan:
    """One proposal of a round, filled in as its steps run."""

    iteration: int
    parent: Candidate
    minibatch: list[Case]
    paired_seed: int
    child_seed: int  # == paired_seed unless the (ablation) unpaired mode is on
    other: Candidate | None = None  # a merge's second parent
    child: Artifact | None = None  # a merge's child exists from the start
    components: tuple[str, ...] = ()
    child_cursor: int = 0
    parent_evals: tuple[Evaluation, ...] = ()
    other_evals: tuple[Evaluation, ...] = ()
    child_evals: tuple[Evaluation, ...] = ()
    validation_evals: tuple[Evaluation, ...] = ()
    records: list[dict[str, Any]] = field(default_factory=list)
    reply: Any = None
    child_id: str | None = None
    rationale: str = ""
    status: str = ""
    reason: str = ""
    fresh: bool = False  # a new child (not rejected, not a duplicate): it gets scored
    batches: dict[str, ScoredBatch] = field(default_factory=dict)  # recorded so far, by role

    @property
    def is_merge(self) -> bool:
        return self.other is not None

    @property
    def bar(self) -> float:
        """What the child's minibatch sum is held against: its parent's (a merge: the better one's)."""
        sums = [math.fsum(ev.score for ev in evals) for evals in (self.parent_evals, self.other_evals) if evals]
        return max(sums)

    @property
    def gain(self) -> float:
        return math.fsum(ev.score for ev in self.child_evals) - self.bar


Turns = Callable[[str], AbstractContextManager[None]]  # `with turn(step):` waits for the earlier proposals


@dataclass
class Steps:
    """What the steps need from the run: scoring and reflection (the engine's), the policies, the
    pool and the round's fresh children (read and written only in the `dedupe` turn)."""

    evaluate: Callable[..., tuple[Evaluation, ...]]  # (artifact, candidate id, cases, seed, phase)
    reflect: Callable[[Artifact, str, list[dict[str, Any]]], Any]
    component: ComponentSelector
    acceptance: Acceptance
    pool: Pool
    validation: Sequence[Case]
    validation_seed: int
    skip_perfect: bool
    validate_in_chain: bool  # False when the round's gains decide which children are validated
    metric_calls: Callable[[], int]  # spent so far: recorded on a candidate as it joins
    fresh_ids: set[str] = field(default_factory=set)


def accepts(steps: Steps, plan: Plan) -> bool:
    if plan.is_merge:  # GEPA+Merge: at least as good as the better parent, on Feedback cases only
        return math.fsum(ev.score for ev in plan.child_evals) >= plan.bar
    return steps.acceptance.accepts(plan.parent_evals, plan.child_evals)


def reflective(plan: Plan, steps: Steps, turn: Turns) -> None:
    parent = plan.parent
    plan.parent_evals = steps.evaluate(parent.artifact, parent.id, plan.minibatch, plan.paired_seed,
                                       "feedback-parent")
    with turn("choose"):  # the parent's cursor moves in proposal order
        plan.components = steps.component.choose(parent, plan.parent_evals)
        plan.child_cursor = parent.cursor
    if steps.skip_perfect and all(ev.score >= 1.0 for ev in plan.parent_evals):
        plan.status, plan.reason = "skipped", "perfect_parent: every minibatch score is already 1.0"
        return
    plan.records = build_records(plan.minibatch, plan.parent_evals)
    if parent.view is None:  # redacted once per candidate, not once per proposal
        parent.view = reflector_view(parent.artifact)
    replies = {c: steps.reflect(parent.view, c, plan.records) for c in plan.components}
    plan.reply = replies[plan.components[0]] if len(replies) == 1 else replies
    try:
        plan.child, plan.rationale = apply_replies(parent.artifact, replies)
    except ReflectionRejected as exc:
        plan.status, plan.reason = "reflection_rejected", f"reflection rejected: {exc}"
        return
    _score_child(plan, steps, turn)


def merge(plan: Plan, steps: Steps, turn: Turns) -> None:
    assert plan.other is not None and plan.child is not None
    plan.parent_evals = steps.evaluate(plan.parent.artifact, plan.parent.id, plan.minibatch, plan.paired_seed,
                                       "feedback-parent")
    plan.other_evals = steps.evaluate(plan.other.artifact, plan.other.id, plan.minibatch, plan.paired_seed,
                                      "feedback-parent")
    _score_child(plan, steps, turn)


def _score_child(plan: Plan, steps: Steps, turn: Turns) -> None:
    assert plan.child is not None
    plan.child_id = artifact_id(plan.child)
    with turn("dedupe"):
        if plan.child_id in steps.pool or plan.child_id in steps.fresh_ids:
            plan.status, plan.reason = "duplicate", "candidate already in pool"
            return
        plan.fresh = True
        steps.fresh_ids.add(plan.child_id)
    plan.child_evals = steps.evaluate(plan.child, plan.child_id, plan.minibatch, plan.child_seed, "feedback-child")
    if steps.validate_in_chain and accepts(steps, plan):
        validate(plan, steps)


def validate(plan: Plan, steps: Steps) -> None:
    assert plan.child is not None and plan.child_id is not None
    plan.validation_evals = steps.evaluate(plan.child, plan.child_id, steps.validation, steps.validation_seed,
                                           "validation")


def to_proposal(plan: Plan) -> Proposal:
    b = plan.batches
    return Proposal(iteration=plan.iteration, parent_id=plan.parent.id, parent=plan.parent.artifact,
                    component="+".join(plan.components), status=plan.status, reason=plan.reason,
                    minibatch=tuple(c.id for c in plan.minibatch), paired_seed=plan.paired_seed,
                    parent_batch=b["parent"], records=plan.records, reply=plan.reply, candidate_id=plan.child_id,
                    artifact=plan.child, rationale=plan.rationale, child_batch=b.get("child"),
                    validation_batch=b.get("validation"), other_parent_batch=b.get("other"),
                    parents=(plan.parent.id, plan.other.id) if plan.other else (plan.parent.id,),
                    components=plan.components, kind="merge" if plan.is_merge else "reflection")
