"""Sinks that observe a run: progress display, MLflow. (The run record is `gepa_lab.runs`.)

`Trackers` fans the engine's events out to every tracker in order; a tracker may implement only
the hooks it needs.
"""

from __future__ import annotations

from typing import Any

from gepa_lab.core.events import (
    CandidateInfo,
    IterationStats,
    Proposal,
    RunInfo,
    ScoredBatch,
    Tracker,
)
from gepa_lab.core.result import Result

HOOKS = ("start", "evaluation", "candidate", "proposal", "iteration", "round_end", "note", "finish", "fail")


class Trackers:
    def __init__(self, trackers: list[Tracker] | tuple[Tracker, ...]):
        self.members = list(trackers)
        # Bound methods per hook, looked up once: the hot path calls them every batch.
        self._hooks: dict[str, list[Any]] = {
            hook: [m for t in self.members if (m := getattr(t, hook, None)) is not None] for hook in HOOKS
        }

    def wants(self, hook: str) -> bool:
        """Whether any tracker observes `hook` (values nobody observes are not built)."""
        return bool(self._hooks[hook])

    def start(self, run: RunInfo) -> None:
        for hook in self._hooks["start"]:
            hook(run)

    def evaluation(self, batch: ScoredBatch) -> None:
        for hook in self._hooks["evaluation"]:
            hook(batch)

    def candidate(self, candidate: CandidateInfo) -> None:
        for hook in self._hooks["candidate"]:
            hook(candidate)

    def proposal(self, proposal: Proposal) -> None:
        for hook in self._hooks["proposal"]:
            hook(proposal)

    def iteration(self, stats: IterationStats) -> None:
        for hook in self._hooks["iteration"]:
            hook(stats)

    def round_end(self) -> None:
        """A round of proposals is durably recorded (before the decision stage)."""
        for hook in self._hooks["round_end"]:
            hook()

    def note(self, kind: str, data: dict[str, Any]) -> None:
        for hook in self._hooks["note"]:
            hook(kind, data)

    def finish(self, result: Result) -> None:
        for hook in self._hooks["finish"]:
            hook(result)

    def fail(self, error: BaseException) -> None:
        for hook in self._hooks["fail"]:
            hook(error)

    def links(self) -> dict[str, str]:
        """Where trackers put the run (e.g. {"mlflow_run_id": ...}), for the result."""
        out: dict[str, str] = {}
        for tracker in self.members:
            method = getattr(tracker, "links", None)
            if callable(method):
                out.update(method())
        return out
