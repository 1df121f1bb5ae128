"""A finished search's outcome: the promotion decision on the paired holdout comparison, and the
`Result` that `optimize` returns (and `result.json` records)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict
from typing import Any

from gepa_lab.core.contracts import Evaluation, Summary
from gepa_lab.core.result import PoolEntry, Result
from gepa_lab.search.ledger import Ledger
from gepa_lab.search.preflight import Request
from gepa_lab.search.promotion import assess_promotion, case_means, transfer_delta
from gepa_lab.search.state import SearchState, validation_seeds

ALGORITHM = "gepa"


def build_result(request: Request, experiment_id: str, state: SearchState, ledger: Ledger, holdout_seeds: list[int],
                 base_repeats: Sequence[Sequence[Evaluation]], cand_repeats: Sequence[Sequence[Evaluation]],
                 transfer: tuple[Sequence[Evaluation], Sequence[Evaluation]] | None) -> Result:
    """`base_repeats` / `cand_repeats`: the seed's and the winner's holdout evaluations, one tuple
    per holdout repeat (the same objects when the winner is the seed); `transfer`: theirs under the
    transfer evaluator (None without one, or when the seed won)."""
    assert state.stop_reason is not None
    dataset, policy = request.dataset, request.promotion
    best, seed = state.pool.best(), state.pool.members[0]
    quality = getattr(request.evaluator, "quality_objective", None)
    transfer_evaluator = type(request.transfer).__name__ if request.transfer is not None else None
    decision = assess_promotion(
        best_is_seed=best.id == seed.id, holdout=dataset.holdout, baseline=base_repeats, candidate=cand_repeats,
        policy=policy, validation=best.validation, quality_objective=quality if isinstance(quality, str) else None,
        transfer=transfer, bootstrap_seed=holdout_seeds[0] if holdout_seeds else 0,
        transfer_evaluator=transfer_evaluator)
    base_cases, cand_cases = case_means(base_repeats), case_means(cand_repeats)

    def summary(means: list[Any]) -> Summary:  # per holdout case (means over repeats), not per evaluation
        return Summary.of([Evaluation(c.id, m.score, objectives=m.objectives)
                           for c, m in zip(dataset.holdout, means, strict=True)])

    seeds: dict[str, Any] = {"random_seed": request.config.random_seed, "validation_seed": state.validation_seed}
    if request.config.validation_repeats > 1:
        seeds["validation_seeds"] = validation_seeds(state.validation_seed, request.config.validation_repeats)
    if holdout_seeds:
        seeds["holdout_seed"] = holdout_seeds[0]
    if len(holdout_seeds) > 1:
        seeds["holdout_seeds"] = list(holdout_seeds)
    return Result(
        ALGORITHM, experiment_id, best.artifact, best.id, seed.id, Summary.of(seed.validation),
        Summary.of(best.validation), summary(base_cases), summary(cand_cases), len(state.pool), ledger.used,
        state.stop_reason, decision.eligible, decision.reason, [asdict(r) for r in decision.rules], seeds,
        {"id": dataset.id, "version": dataset.version, "digests": dataset.digests()},
        holdout_cases=[{"case_id": c.id, "critical": c.critical, "baseline": b.score, "candidate": k.score,
                        "delta": k.score - b.score}
                       for c, b, k in zip(dataset.holdout, base_cases, cand_cases, strict=True)],
        cost_usd={"task": ledger.task_cost_usd, "reflection": ledger.reflection_cost_usd},
        reflection_tokens=ledger.reflection_tokens, task_tokens=ledger.task_tokens,
        transfer=_transfer_record(transfer_evaluator, transfer, holdout_seeds),
        proposals=state.proposals, skipped_proposals=state.skipped,
        pool=[PoolEntry(c.id, c.parent_id, c.component, c.iteration, c.metric_calls, tuple(c.scores), c.parents)
              for c in state.pool.members],
        validation_case_ids=[c.id for c in dataset.validation], holdout_repeats=policy.holdout_repeats,
        holdout_interval=list(decision.interval) if decision.interval is not None else None,
        confidence=policy.confidence if decision.interval is not None else None,
        holdout_distinct=dataset.distinct("holdout") if dataset.holdout else None)


def _transfer_record(evaluator: str | None, transfer: tuple[Sequence[Evaluation], Sequence[Evaluation]] | None,
                     holdout_seeds: Sequence[int]) -> dict[str, Any] | None:
    """`result.json` `transfer`: None without a transfer evaluator; None values when the seed won."""
    if evaluator is None:
        return None
    if transfer is None:
        return {"evaluator": evaluator, "holdout_seed": None, "baseline": None, "candidate": None, "delta": None}
    return {"evaluator": evaluator, "holdout_seed": holdout_seeds[0], "baseline": Summary.of(transfer[0]).score,
            "candidate": Summary.of(transfer[1]).score, "delta": transfer_delta(transfer)}


def promotion_outcome(result: Result, submit: bool) -> dict[str, Any]:
    """`promotion.json`: what a CI job needs to know about a finished run, in one small file."""
    revision = result.revision or {}
    return {"experiment_id": result.experiment_id, "decision": result.decision_number,
            "eligible": result.promotion_eligible, "reason": result.promotion_reason, "submit": submit,
            "submission_reason": result.submission_reason, "revision_id": revision.get("revision_id"),
            "revision_status": revision.get("status"), "artifact_id": result.best_id,
            "holdout_delta": result.holdout_delta}
