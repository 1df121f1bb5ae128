"""What a run reports as it goes, and the `Tracker` protocol every sink implements.

The engine emits these values, in order, to its trackers (progress, MLflow); trackers observe and
never steer. The values are shared, never copied per tracker: treat them as read-only.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import cached_property
from typing import TYPE_CHECKING, Any, Protocol

from gepa_lab.core.artifacts import Artifact
from gepa_lab.core.contracts import Dataset, Evaluation, Summary
from gepa_lab.core.settings import SearchConfig

if TYPE_CHECKING:
    from gepa_lab.core.result import Result

@dataclass(frozen=True)
class ResumePoint:
    """Where a resumed run continues: the next iteration, and how many scored batches (and
    proposals) came before it. Trackers drop anything they wrote after that point."""

    iteration: int
    batches: int


@dataclass(frozen=True)
class RunInfo:
    experiment_id: str
    name: str  # the experiment's name (e.g. "recipe")
    algorithm: str
    started_at: str
    dataset: Dataset
    digests: dict[str, str]
    seed: Artifact
    seed_id: str
    search: SearchConfig
    config: dict[str, Any]  # the resolved configuration, as logged (params)
    submit: bool
    run_dir: str | None
    resume: ResumePoint | None = None  # set when this process continues an interrupted run
    simulated: bool = False  # the evaluator is a simulation (SkillCraft-sim): scores calibrate the harness, not an LM


@dataclass
class ScoredBatch:
    """One scoring call of the engine: an artifact on some cases with one seed."""

    index: int  # order of scored batches in the run
    # validation, feedback-parent, feedback-child, holdout-baseline, holdout-candidate,
    # holdout-transfer-baseline or holdout-transfer-candidate
    phase: str
    candidate_id: str
    seed: int
    evaluations: tuple[Evaluation, ...]

    @property
    def scores(self) -> list[float]:
        return [ev.score for ev in self.evaluations]

    @cached_property
    def summary(self) -> Summary:
        return Summary.of(self.evaluations)


@dataclass(frozen=True)
class CandidateInfo:
    """A pool member as it joins: the seed (iteration None) or an accepted child."""

    id: str
    artifact: Artifact
    parent_id: str | None
    component: str | None
    iteration: int | None
    validation: ScoredBatch
    metric_calls: int  # budget spent when it joined
    rationale: str = ""


@dataclass
class Proposal:
    """One iteration's proposal (a reflective mutation, or a merge of two pool members), what
    became of it, and every batch it scored."""

    iteration: int
    parent_id: str
    parent: Artifact
    component: str  # the components rewritten, joined with '+'
    status: str  # accepted | rejected | duplicate | reflection_rejected | skipped
    reason: str
    minibatch: tuple[str, ...]  # case ids, in minibatch order
    paired_seed: int
    parent_batch: ScoredBatch
    records: list[dict[str, Any]]  # exactly what the reflector was shown
    reply: Any
    candidate_id: str | None = None
    artifact: Artifact | None = None
    rationale: str = ""
    child_batch: ScoredBatch | None = None
    validation_batch: ScoredBatch | None = None
    other_parent_batch: ScoredBatch | None = None  # a merge's second parent on the minibatch
    parents: tuple[str, ...] = ()  # every parent: two for a merge
    components: tuple[str, ...] = ()
    kind: str = "reflection"  # reflection | merge

    def __post_init__(self) -> None:
        self.parents = self.parents or (self.parent_id,)
        self.components = self.components or tuple(self.component.split("+"))

    @property
    def parent_sum(self) -> float:
        return math.fsum(self.parent_batch.scores)

    @property
    def child_sum(self) -> float | None:
        return math.fsum(self.child_batch.scores) if self.child_batch is not None else None


EVENT_KINDS = {"accepted": "candidate_accepted", "rejected": "candidate_rejected", "duplicate": "candidate_duplicate",
               "reflection_rejected": "reflection_rejected", "skipped": "proposal_skipped"}


@dataclass
class IterationStats:
    iteration: int
    best_id: str
    best_validation_mean: float
    pool_size: int
    front_size: int
    metric_calls: int
    proposals: int  # proposals so far, this one included
    task_cost_usd: float = 0.0  # sum of the evaluations' `cost_usd` objective so far
    reflection_cost_usd: float = 0.0


class Tracker(Protocol):
    """A sink for a run's events (the fan-out also accepts objects that leave hooks out).

    Hooks, in the order the engine calls them: `start(run)`; then per scored batch
    `evaluation(batch)`, per pool member `candidate(info)`, per iteration `proposal(p)` and
    `iteration(stats)`; `round_end()` after each round of proposals is durably recorded (a tracker
    that hands data to another thread or process makes sure the round is handed over); run-level
    `note(kind, data)`; and at the end `finish(result)` (once per decision) or `fail(error)`.
    `links()` may name where the tracker put the run (e.g. an MLflow run id); the result records it.
    """

    def start(self, run: RunInfo) -> None: ...

    def evaluation(self, batch: ScoredBatch) -> None: ...

    def candidate(self, candidate: CandidateInfo) -> None: ...

    def proposal(self, proposal: Proposal) -> None: ...

    def iteration(self, stats: IterationStats) -> None: ...

    def round_end(self) -> None: ...

    def note(self, kind: str, data: dict[str, Any]) -> None: ...

    def finish(self, result: Result) -> None: ...

    def fail(self, error: BaseException) -> None: ...
