"""Progress over the metric budget: a tqdm bar on a terminal, plain log lines otherwise."""

from __future__ import annotations

import logging
import sys
from typing import Any

from gepa_lab.core.errors import ConfigError
from gepa_lab.core.events import IterationStats, RunInfo, ScoredBatch
from gepa_lab.core.settings import SearchConfig

log = logging.getLogger("gepa_lab.progress")
MODES = ("auto", "bar", "log", "off")


class ProgressTracker:
    _search: SearchConfig  # the run's (set by start)

    def __init__(self, mode: str = "auto"):
        if mode not in MODES:
            raise ConfigError(f"progress must be one of {', '.join(MODES)} (got {mode!r})")
        self.mode = ("bar" if sys.stderr.isatty() else "log") if mode == "auto" else mode
        self._bar: Any = None

    def start(self, run: RunInfo) -> None:
        self._search = run.search
        if self.mode == "bar":
            from tqdm import tqdm

            self._bar = tqdm(total=run.search.max_metric_calls, unit="call", desc="gepa", dynamic_ncols=True)
        elif self.mode == "log":
            log.info("run %s%s started: budget %d metric calls", run.experiment_id[:8],
                     " (resumed)" if run.resume else "", run.search.max_metric_calls)

    def evaluation(self, batch: ScoredBatch) -> None:
        if self._bar is not None:
            self._bar.update(len(batch.evaluations))

    def iteration(self, stats: IterationStats) -> None:
        spend = stats.task_cost_usd + stats.reflection_cost_usd
        if self._bar is not None:
            self._bar.n = stats.metric_calls  # absolute, so a resumed run shows the true position
            self._bar.set_postfix(iter=stats.iteration, pool=stats.pool_size,
                                  best=f"{stats.best_validation_mean:.4f}", usd=f"{spend:.4f}")
        elif self.mode == "log":
            limit = self._search.max_iterations
            log.info("iteration %d%s: pool %d, best validation %.4f, %d/%d metric calls, $%.4f",
                     stats.iteration + 1, "" if limit is None else f"/{limit}", stats.pool_size,
                     stats.best_validation_mean, stats.metric_calls, self._search.max_metric_calls, spend)

    def _close(self) -> None:
        if self._bar is not None:
            self._bar.close()
            self._bar = None

    def finish(self, result: Any) -> None:
        if self._bar is not None:  # the run is complete: end at 100 % of what it used, not of the budget
            self._bar.total = self._bar.n = result.metric_calls
            self._bar.refresh()
        self._close()

    def fail(self, error: BaseException) -> None:
        self._close()
