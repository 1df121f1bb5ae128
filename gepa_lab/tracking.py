"""What a run reports, and the one interface every sink (run record, MLflow, progress) implements.

The engine never writes files or talks to MLflow itself: it emits these records to a
`Tracker`, and `Trackers` fans them out.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

from gepa_lab.contracts import Dataset, Evaluation, Summary

if TYPE_CHECKING:
    from gepa_lab.engine import Result


@dataclass(frozen=True)
class RunInfo:
    experiment_id: str
    algorithm: str
    started_at: str
    dataset: Dataset
    digests: dict[str, str]
    seed_artifact: dict[str, Any]
    seed_id: str
    config: dict[str, Any]
    submit: bool
    run_dir: str | None
    resumed: bool = False  # a resumed run continues the same record / MLflow run


@dataclass(frozen=True)
class CandidateInfo:
    """A pool member: the seed (iteration None) or an accepted child."""

    id: str
    artifact: dict[str, Any]
    parent_id: str | None
    component: str | None
    iteration: int | None
    rationale: str = ""


@dataclass(frozen=True)
class EvaluationRecord:
    index: int  # global order of evaluation batches in the run
    phase: str  # validation | feedback-parent | feedback-child | holdout-baseline | holdout-candidate
    candidate_id: str
    seed: int
    evaluations: list[Evaluation]
    summary: Summary


@dataclass(frozen=True)
class Proposal:
    """One iteration's reflective proposal and what became of it."""

    iteration: int
    parent_id: str
    component: str
    status: str  # accepted | rejected | duplicate | reflection_rejected
    reason: str
    minibatch: list[str]
    paired_seed: int
    parent_scores: list[float]
    records: list[dict[str, Any]]
    reply: Any
    candidate_id: str | None = None
    artifact: dict[str, Any] | None = None
    parent_artifact: dict[str, Any] | None = None
    rationale: str = ""
    child_scores: list[float] = field(default_factory=list)
    validation: Summary | None = None

    @property
    def event_kind(self) -> str:
        return {
            "accepted": "candidate_accepted",
            "rejected": "candidate_rejected",
            "duplicate": "candidate_duplicate",
            "reflection_rejected": "reflection_rejected",
        }[self.status]


@dataclass(frozen=True)
class IterationStats:
    iteration: int
    best_id: str
    best_validation_mean: float
    pool_size: int
    front_size: int
    metric_calls: int
    task_cost_usd: float = 0.0  # sum of the evaluations' `cost_usd` objective so far
    reflection_cost_usd: float = 0.0


class Tracker(Protocol):
    def start(self, run: RunInfo) -> None: ...

    def candidate(self, candidate: CandidateInfo) -> None: ...

    def evaluation(self, record: EvaluationRecord) -> None: ...

    def proposal(self, proposal: Proposal) -> None: ...

    def iteration(self, stats: IterationStats) -> None: ...

    def finish(self, result: Result) -> None: ...

    def fail(self, error: BaseException) -> None: ...

    # Optional hooks: `note(kind, data)` for run-level events (e.g. reflector_failed) and
    # `checkpoint(payload)` just before a checkpoint is saved (a tracker may add to it).


class Trackers:
    """Fan-out to several trackers, in order. A tracker may implement only some hooks."""

    def __init__(self, trackers: list[Any]):
        self.members = list(trackers)

    def _each(self, hook: str, *args: Any) -> None:
        for tracker in self.members:
            method = getattr(tracker, hook, None)
            if method is not None:
                method(*args)

    def start(self, run: RunInfo) -> None:
        self._each("start", run)

    def candidate(self, candidate: CandidateInfo) -> None:
        self._each("candidate", candidate)

    def evaluation(self, record: EvaluationRecord) -> None:
        self._each("evaluation", record)

    def proposal(self, proposal: Proposal) -> None:
        self._each("proposal", proposal)

    def iteration(self, stats: IterationStats) -> None:
        self._each("iteration", stats)

    def finish(self, result: Result) -> None:
        self._each("finish", result)

    def fail(self, error: BaseException) -> None:
        self._each("fail", error)

    def note(self, kind: str, data: dict[str, Any]) -> None:
        self._each("note", kind, data)

    def checkpoint(self, payload: dict[str, Any]) -> None:
        self._each("checkpoint", payload)
