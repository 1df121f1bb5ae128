"""Stop policies (`search/stop`): checked before every round, in order — the budgets first
(`max_iterations`, `metric_budget`, `cost_budget`, `time_limit`: from the search settings), then
the configured conditions (any number). The first that names a reason ends the search. A budget
may instead return how many proposals the round can still afford (it then shrinks the round)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, ClassVar, Protocol

from gepa_lab.core.settings import check_int, check_number

if TYPE_CHECKING:
    from gepa_lab.search.ledger import Ledger
    from gepa_lab.search.state import Pool


@dataclass(slots=True)
class SearchView:
    """What a stop policy may look at before a round."""

    pool: Pool
    proposals: int  # made so far
    run_dir: Path | None
    iteration: int = 0  # the next one
    elapsed_s: float = 0.0
    ledger: Ledger | None = None
    proposal_calls: int = 1  # metric calls one proposal may spend


class StopCondition(Protocol):
    draws: ClassVar[str]

    def reason(self, view: SearchView) -> str | int | None: ...


@dataclass
class MaxIterations:
    """`search.max_iterations`: at most this many proposals in the run."""

    iterations: int
    draws: ClassVar[str] = "none"

    def reason(self, view: SearchView) -> str | int | None:
        return max(0, self.iterations - view.iteration) or "max_iterations"


class MetricBudget:
    """`search.max_metric_calls`: a round's proposals must fit, the holdout comparison reserved."""

    draws = "none"

    def reason(self, view: SearchView) -> str | int | None:
        assert view.ledger is not None
        return view.ledger.calls_left() // view.proposal_calls or "metric_budget"


class CostBudget:
    """`search.max_cost_usd`: a round's proposals (at the observed prices) and the holdout
    comparison must fit."""

    draws = "none"

    def reason(self, view: SearchView) -> str | int | None:
        assert view.ledger is not None
        k = view.ledger.proposals_affordable(view.proposal_calls, view.proposals)
        return None if k is None else k if k > 0 else "cost_budget"


@dataclass
class TimeLimit:
    """`search.time_limit_s`: the search's wall time, summed over resumes."""

    seconds: float
    draws: ClassVar[str] = "none"

    def reason(self, view: SearchView) -> str | int | None:
        return "time_limit" if view.elapsed_s >= self.seconds else None


class NoImprovement:
    """Stop once the best validation mean has not improved for `proposals` proposals."""

    draws = "none"

    def __init__(self, proposals: int = 20):
        check_int(proposals, "search.stop.no_improvement.proposals", 1)
        self.proposals = proposals

    def reason(self, view: SearchView) -> str | int | None:
        since = view.proposals - view.pool.best().joined_after
        return "no_improvement" if since >= self.proposals else None


class ScoreThreshold:
    """Stop once the best validation mean reaches `threshold`."""

    draws = "none"

    def __init__(self, threshold: float = 1.0):
        check_number(threshold, "search.stop.score_threshold.threshold", 0.0, 1.0, open_low=True)
        self.threshold = float(threshold)

    def reason(self, view: SearchView) -> str | int | None:
        return "score_threshold" if view.pool.best().mean >= self.threshold else None


class StopFile:
    """Stop when a file named `name` appears in the run directory (`touch <run dir>/STOP`): the run
    then decides on what it has, as if a budget had ended it."""

    draws = "none"

    def __init__(self, name: str = "STOP"):
        if not name or "/" in name:
            raise ValueError(f"search.stop.stop_file.name must be a plain file name (got {name!r})")
        self.name = name

    def reason(self, view: SearchView) -> str | int | None:
        return "stop_file" if view.run_dir is not None and (view.run_dir / self.name).exists() else None
