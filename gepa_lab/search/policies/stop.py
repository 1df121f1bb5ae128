"""Stop conditions beyond the budgets (`search/stop`): any number may be chosen; the first that
fires before a round names the stop reason. The budgets (metric calls, money, iterations, time)
are the ledger's and always apply."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, ClassVar, Protocol

if TYPE_CHECKING:
    from gepa_lab.search.state import Pool


@dataclass(frozen=True)
class SearchView:
    """What a stop condition may look at before a round."""

    pool: Pool
    proposals: int  # made so far
    run_dir: Path | None


class StopCondition(Protocol):
    draws: ClassVar[str]

    def reason(self, view: SearchView) -> str | None: ...


class NoImprovement:
    """Stop once the best validation mean has not improved for `proposals` proposals."""

    draws = "none"

    def __init__(self, proposals: int = 20):
        if isinstance(proposals, bool) or not isinstance(proposals, int) or proposals < 1:
            raise ValueError(f"search.stop.no_improvement.proposals must be an integer >= 1 (got {proposals!r})")
        self.proposals = proposals

    def reason(self, view: SearchView) -> str | None:
        since = view.proposals - view.pool.best().joined_after
        return "no_improvement" if since >= self.proposals else None


class ScoreThreshold:
    """Stop once the best validation mean reaches `threshold`."""

    draws = "none"

    def __init__(self, threshold: float = 1.0):
        if isinstance(threshold, bool) or not isinstance(threshold, (int, float)) or not 0 < threshold <= 1:
            raise ValueError(f"search.stop.score_threshold.threshold must be in (0, 1] (got {threshold!r})")
        self.threshold = float(threshold)

    def reason(self, view: SearchView) -> str | None:
        return "score_threshold" if view.pool.best().mean >= self.threshold else None


class StopFile:
    """Stop when a file named `name` appears in the run directory (`touch <run dir>/STOP`): the run
    then decides on what it has, as if a budget had ended it."""

    draws = "none"

    def __init__(self, name: str = "STOP"):
        if not name or "/" in name:
            raise ValueError(f"search.stop.stop_file.name must be a plain file name (got {name!r})")
        self.name = name

    def reason(self, view: SearchView) -> str | None:
        return "stop_file" if view.run_dir is not None and (view.run_dir / self.name).exists() else None
