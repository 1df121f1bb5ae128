"""Sinks that observe a run: progress display, MLflow. (The run record is `gepa_lab.runs`.)

`Trackers` fans the engine's events out to every tracker in order (`HOOKS`: the `Tracker`
protocol's event hooks, gepa_lab.core.events); a tracker may implement only the hooks it needs.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from gepa_lab.core.events import Tracker

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

    def __getattr__(self, hook: str) -> Callable[..., None]:
        """`trackers.<hook>(...)` calls that hook of every tracker that has it, in order."""
        if hook not in HOOKS:
            raise AttributeError(hook)
        methods = self._hooks[hook]

        def fan_out(*args: Any) -> None:
            for method in methods:
                method(*args)

        setattr(self, hook, fan_out)  # built once: the hot path calls it every batch
        return fan_out

    def links(self) -> dict[str, str]:
        """Where trackers put the run (e.g. {"mlflow_run_id": ...}), for the result."""
        return {k: v for t in self.members if callable(m := getattr(t, "links", None)) for k, v in m().items()}
