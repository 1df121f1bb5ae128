"""The round scheduler: the only code that knows about concurrency and ordering.

A round's k proposals run as concurrent chains (k = 1: in line). The steps that link proposals
take turns in proposal order; every batch is recorded in proposal order; acceptance and pool
updates are applied in proposal order when the round ends. So a round's outcome never depends on
timing or on the number of workers, and k = 1 is exactly the classic GEPA loop.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor, wait
from contextlib import contextmanager, nullcontext
from functools import partial
from typing import Any

from gepa_lab.core.contracts import Evaluation
from gepa_lab.core.events import Proposal, ScoredBatch
from gepa_lab.search.proposal import Plan, Steps, propose, to_proposal, validate
from gepa_lab.search.state import Candidate

STEPS_IN_ORDER = ("choose", "dedupe")

Emit = Callable[[str, str, int, tuple[Evaluation, ...]], ScoredBatch]


class _Turns:
    """Per ordered step, one event per proposal: proposal j takes its turn after j - 1's."""

    def __init__(self, k: int):
        self._done = {step: [threading.Event() for _ in range(k)] for step in STEPS_IN_ORDER}

    @contextmanager
    def turn(self, j: int, step: str) -> Iterator[None]:
        if j:
            self._done[step][j - 1].wait()
        try:
            yield
        finally:
            self._done[step][j].set()

    def release(self, j: int) -> None:
        """A chain that ended early (a rejection, a failure) lets later proposals pass."""
        for events in self._done.values():
            events[j].set()


class Scheduler:
    def __init__(self, workers: int):
        self._pool = ThreadPoolExecutor(workers, thread_name_prefix="gepa-proposal") if workers > 1 else None

    def close(self) -> None:
        if self._pool is not None:
            self._pool.shutdown(wait=False, cancel_futures=True)

    def _map(self, fn: Callable[[Any], None], items: list[Any]) -> None:
        if self._pool is None or len(items) <= 1:
            for item in items:
                fn(item)
            return
        futures = [self._pool.submit(fn, item) for item in items]
        wait(futures)  # every chain settles before the first failure is raised: nothing still runs
        for future in futures:
            future.result()

    def run_round(self, plans: list[Plan], steps: Steps, emit: Emit, accept_top: int | None) -> list[Proposal]:
        steps.fresh_ids.clear()  # the round's new children, for the duplicate check
        # Chains run one after the other need no turns: they are taken in proposal order anyway.
        turns = _Turns(len(plans)) if self._pool is not None and len(plans) > 1 else None

        def chain(j: int) -> None:
            if turns is None:
                return propose(plans[j], steps, lambda step: nullcontext())
            try:
                propose(plans[j], steps, partial(turns.turn, j))
            finally:
                turns.release(j)

        try:
            self._map(chain, list(range(len(plans))))
        finally:
            for plan in plans:  # whatever was paid for is recorded, in proposal order
                _record(plan, steps, emit)
        judged = [p for p in plans if p.verdict is not None]
        chosen = _select([p for p in judged if p.verdict is not None and p.verdict.accepted], accept_top)
        if not steps.validate_in_chain:  # the round's gains decided which children are validated
            try:
                self._map(lambda plan: validate(plan, steps), chosen)
            finally:
                for plan in chosen:
                    _record(plan, steps, emit)
        for plan in judged:
            assert plan.verdict is not None
            if plan in chosen:  # they join the pool in proposal order
                _join(plan, steps)
            elif plan.verdict.accepted:
                plan.status, plan.reason = "rejected", f"round_acceptance: {accept_top} larger gain(s) in the round"
            else:
                plan.status, plan.reason = "rejected", plan.verdict.reason
        return [to_proposal(plan) for plan in plans]


def _join(plan: Plan, steps: Steps) -> None:
    assert plan.child is not None and plan.child_id is not None and plan.verdict is not None
    # Survivors always join the pool: a lower validation mean may still hold a front.
    steps.pool.add(Candidate(plan.child_id, plan.child, tuple(p.id for p in plan.parents), plan.components,
                             plan.iteration, plan.child_cursor, plan.validation_evals, steps.metric_calls(),
                             plan.rationale, joined_after=plan.iteration + 1))
    plan.status, plan.reason = "accepted", f"{plan.verdict.reason}: minibatch gain {plan.verdict.gain:+.4f}"


def _select(improving: list[Plan], top: int | None) -> list[Plan]:
    """All improving children, or the `top` with the largest gain by the acceptance rule (ties:
    earlier first), kept in proposal order."""
    if top is None or len(improving) <= top:
        return improving
    ranked = sorted(improving, key=lambda p: p.verdict.gain, reverse=True)[:top]  # type: ignore[union-attr]
    return [p for p in improving if p in ranked]  # (a stable sort: ties keep the earlier)


def _record(plan: Plan, steps: Steps, emit: Emit) -> None:
    """Record whatever this proposal has paid for and not yet recorded, in phase order."""
    for role, parent, evaluations in zip(("parent", "other"), plan.parents, plan.parent_evals, strict=False):
        if role not in plan.batches:
            plan.batches[role] = emit("feedback-parent", parent.id, plan.paired_seed, evaluations)
    if plan.child_evals and "child" not in plan.batches:
        plan.batches["child"] = emit("feedback-child", plan.child_id or "", plan.child_seed, plan.child_evals)
    if plan.validation_evals and "validation" not in plan.batches:
        plan.batches["validation"] = emit("validation", plan.child_id or "", steps.validation_seed,
                                          plan.validation_evals)
