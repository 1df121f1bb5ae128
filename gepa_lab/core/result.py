"""The outcome of a run: the promotion decision and the `Result` that `optimize` returns and
`result.json` holds."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field, fields
from typing import Any

from gepa_lab.core.artifacts import Artifact, artifact_dict, artifact_from_dict
from gepa_lab.core.contracts import Summary

ELIGIBLE_REASON = "holdout requirements satisfied"


@dataclass(frozen=True)
class RuleOutcome:
    rule: str
    passed: bool  # False only when the rule failed (a skipped rule does not block)
    detail: str
    status: str = "passed"  # passed | failed | skipped
    value: float | None = None  # what was measured
    threshold: float | None = None  # what it was held against


@dataclass(frozen=True)
class PromotionDecision:
    eligible: bool
    reason: str  # the first failing rule's detail, else ELIGIBLE_REASON
    rules: tuple[RuleOutcome, ...] = ()
    delta: float | None = None  # mean paired holdout delta (per-case means over repeats)
    interval: tuple[float, float] | None = None  # bootstrap interval of `delta`


@dataclass(frozen=True)
class PoolEntry:
    """One pool member's lineage and validation scores (in validation-split order)."""

    id: str
    parent_id: str | None
    component: str | None
    iteration: int | None  # None: the seed
    metric_calls: int  # budget spent when it joined the pool
    validation_scores: tuple[float, ...]
    parents: tuple[str, ...] = ()  # every parent: two for a merge (GEPA+Merge)

    @property
    def validation_mean(self) -> float:
        return sum(self.validation_scores) / len(self.validation_scores) if self.validation_scores else 0.0


@dataclass
class Result:
    algorithm: str
    experiment_id: str
    best: Artifact
    best_id: str
    seed_id: str
    baseline_validation: Summary
    candidate_validation: Summary
    baseline_holdout: Summary
    candidate_holdout: Summary
    candidate_count: int
    metric_calls: int
    stop_reason: str
    promotion_eligible: bool
    promotion_reason: str
    promotion_rules: list[dict[str, Any]]
    seeds: dict[str, Any]  # random, validation and holdout seeds (every repeat)
    dataset: dict[str, Any]
    submission_reason: str | None = None
    revision: dict[str, Any] | None = None
    holdout_cases: list[dict[str, Any]] = field(default_factory=list)
    cost_usd: dict[str, float] = field(default_factory=dict)
    reflection_tokens: int = 0  # from the reflection LM's usage
    task_tokens: int = 0  # the task LM's, summed over every evaluation the run paid for (objective `tokens`)
    transfer: dict[str, Any] | None = None  # the transfer check: evaluator, holdout seed, means, delta
    proposals: int = 0
    pool: list[PoolEntry] = field(default_factory=list)
    validation_case_ids: list[str] = field(default_factory=list)
    links: dict[str, str] = field(default_factory=dict)  # where trackers put the run (e.g. MLflow)
    holdout_interval: list[float] | None = None  # [low, high] of the mean holdout delta
    confidence: float | None = None  # of `holdout_interval`
    holdout_repeats: int = 1
    skipped_proposals: int = 0  # parents already perfect on their minibatch (search.skip_perfect_parents)
    decision_number: int = 1  # a finished search decided again gets the next number
    decision_paid_evaluations: int = 0  # evaluator calls this decision paid for (the rest came from the record)
    warnings: list[str] = field(default_factory=list)  # pre-flight: what weakens the evidence (duplicates, ...)
    # Decisions taken on this holdout split before this one, wherever (the look ledger; None: no holdout).
    holdout_reuse: int | None = None
    holdout_distinct: int | None = None  # distinct holdout inputs the decision counted (None: no holdout)

    @property
    def holdout_delta(self) -> float:
        return self.candidate_holdout.score - self.baseline_holdout.score

    def to_dict(self) -> dict[str, Any]:
        return {**asdict(self), "best": artifact_dict(self.best), "holdout_delta": self.holdout_delta}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Result:
        """A recorded result read back (`to_dict`'s inverse)."""
        values = {f.name: data[f.name] for f in fields(cls) if f.name in data}
        values["best"] = artifact_from_dict(data["best"])
        for name in ("baseline_validation", "candidate_validation", "baseline_holdout", "candidate_holdout"):
            values[name] = Summary(**data[name])
        values["pool"] = [PoolEntry(**{**p, "validation_scores": tuple(p["validation_scores"]),
                                       "parents": tuple(p.get("parents", ()))}) for p in data.get("pool", [])]
        return cls(**values)
