"""One proposal, step by step (docs/design.md §3): score its parents on the minibatch, make the
child (reflection rewrites the first parent's component; a merge's child is made when it is
planned), dedupe, score the child, ask the acceptance policy. The steps run in sequence; the two
that depend on earlier proposals of the same round (choosing the component, and the duplicate
check) wait for their turn, so a round's outcome never depends on timing (`scheduler.py` owns the
concurrency).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass, field, replace
from typing import Any

from gepa_lab.core.artifacts import Artifact, artifact_id
from gepa_lab.core.contracts import Case, Evaluation
from gepa_lab.core.errors import ReflectionRejected
from gepa_lab.core.events import Proposal, ScoredBatch
from gepa_lab.search.policies import Acceptance, ComponentSelector, Verdict
from gepa_lab.search.reflection import apply_replies, build_records, reflector_view
from gepa_lab.search.state import Candidate, Pool


@dataclass(eq=False)
class Plan:
    """One proposal of a round, filled in as its steps run."""

    iteration: int
    parents: tuple[Candidate, ...]  # a merge has two
    minibatch: list[Case]
    paired_seed: int
    child_seed: int  # == paired_seed unless the (ablation) unpaired mode is on
    kind: str = "reflection"  # the proposal source
    child: Artifact | None = None  # a merge's child exists from the start
    components: tuple[str, ...] = ()
    child_cursor: int = 0
    parent_evals: tuple[tuple[Evaluation, ...], ...] = ()  # per parent
    child_evals: tuple[Evaluation, ...] = ()
    validation_evals: tuple[Evaluation, ...] = ()
    records: list[dict[str, Any]] = field(default_factory=list)
    reply: Any = None
    child_id: str | None = None
    rationale: str = ""
    status: str = ""
    reason: str = ""
    verdict: Verdict | None = None  # the acceptance policy's, once the child is scored
    batches: dict[str, ScoredBatch] = field(default_factory=dict)  # recorded so far, by role

    @property
    def bar(self) -> tuple[Evaluation, ...]:
        """What the child is judged against: its parent's minibatch scores (a merge: the better
        parent's; ties: the first)."""
        return max(self.parent_evals, key=lambda evals: math.fsum(ev.score for ev in evals))


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


def propose(plan: Plan, steps: Steps, turn: Turns) -> None:
    for p in plan.parents:  # one at a time: what was paid for is recorded even if the next one fails
        plan.parent_evals += (steps.evaluate(p.artifact, p.id, plan.minibatch, plan.paired_seed, "feedback-parent"),)
    if plan.child is None and not _reflect(plan, steps, turn):
        return
    assert plan.child is not None
    plan.child_id = artifact_id(plan.child)
    with turn("dedupe"):
        if plan.child_id in steps.pool or plan.child_id in steps.fresh_ids:
            plan.status, plan.reason = "duplicate", "candidate already in pool"
            return
        steps.fresh_ids.add(plan.child_id)
    plan.child_evals = steps.evaluate(plan.child, plan.child_id, plan.minibatch, plan.child_seed, "feedback-child")
    plan.verdict = steps.acceptance.judge(plan.bar, plan.child_evals)
    if steps.validate_in_chain and plan.verdict.accepted:
        validate(plan, steps)


def _reflect(plan: Plan, steps: Steps, turn: Turns) -> bool:
    """The reflective child of the first parent; False when the proposal ends here."""
    parent, evals = plan.parents[0], plan.parent_evals[0]
    with turn("choose"):  # the parent's cursor moves in proposal order
        plan.components = steps.component.choose(parent, evals)
        plan.child_cursor = parent.cursor
    if steps.skip_perfect:  # no child could pass: even one scoring 1.0 on every minibatch case
        verdict = steps.acceptance.judge(evals, [replace(ev, score=1.0) for ev in evals])
        if not verdict.accepted:
            plan.status, plan.reason = "skipped", f"perfect_parent: a child scoring 1.0 would fail {verdict.reason}"
            return False
    plan.records = build_records(plan.minibatch, evals)
    if parent.view is None:  # redacted once per candidate, not once per proposal
        parent.view = reflector_view(parent.artifact)
    replies = {c: steps.reflect(parent.view, c, plan.records) for c in plan.components}
    plan.reply = replies[plan.components[0]] if len(replies) == 1 else replies
    try:
        plan.child, plan.rationale = apply_replies(parent.artifact, replies)
    except ReflectionRejected as exc:
        plan.status, plan.reason = "reflection_rejected", f"reflection rejected: {exc}"
        return False
    return True


def validate(plan: Plan, steps: Steps) -> None:
    assert plan.child is not None and plan.child_id is not None
    plan.validation_evals = steps.evaluate(plan.child, plan.child_id, steps.validation, steps.validation_seed,
                                           "validation")


def to_proposal(plan: Plan) -> Proposal:
    b, parent = plan.batches, plan.parents[0]
    return Proposal(iteration=plan.iteration, parent_id=parent.id, parent=parent.artifact,
                    component="+".join(plan.components), status=plan.status, reason=plan.reason,
                    minibatch=tuple(c.id for c in plan.minibatch), paired_seed=plan.paired_seed,
                    parent_batch=b["parent"], records=plan.records, reply=plan.reply, candidate_id=plan.child_id,
                    artifact=plan.child, rationale=plan.rationale, child_batch=b.get("child"),
                    validation_batch=b.get("validation"), other_parent_batch=b.get("other"),
                    parents=tuple(p.id for p in plan.parents), components=plan.components, kind=plan.kind)
