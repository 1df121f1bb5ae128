"""The ledger: what a run may spend and has spent — metric calls (with the holdout comparison
reserved), task and reflection money, reflection tokens (the budget stop policies read it)."""

from __future__ import annotations

import math
import threading
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from gepa_lab.core.contracts import Evaluation
from gepa_lab.core.errors import GepaLabError


class CostCapReached(GepaLabError):
    """The money cap cannot cover the next case (during the search: it ends with `cost_budget`)."""

    partial: tuple[Any, ...] | None = None  # a batch cut short by the cap: recorded all the same

    def __init__(self, phase: str, spent: float, price: float, cap: float):
        where = {"validation": "scoring the seed on Validation"}.get(phase, f"the {phase} phase")
        super().__init__(f"cost budget ${cap:g} cannot cover {where}: ${spent:.4f} spent, about ${price:.4f} per "
                         "case, with the holdout comparison reserved (raise search.max_cost_usd and resume)")
        self.phase = phase


def _cost(evaluations: Sequence[Evaluation]) -> float:
    return math.fsum(ev.objectives.get("cost_usd", 0.0) for ev in evaluations)


@dataclass
class Ledger:
    max_calls: int
    reserve: int  # metric calls kept back for the holdout comparison
    max_cost_usd: float | None = None
    declared_price: float | None = None  # USD per case the evaluator declares, until one is observed
    used: int = 0
    task_cost_usd: float = 0.0  # nominal: cached results count too, so a resume replays exactly
    reflection_cost_usd: float = 0.0
    reflection_tokens: int = 0
    task_tokens: int = 0  # the evaluations' `tokens` objective (LM evaluators report it), nominal like the cost
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False, compare=False)

    def spend(self, calls: int) -> None:
        """Charged before the evaluator is called: a call that fails still consumed its cases."""
        with self._lock:
            self.used += calls

    def add_task_cost(self, evaluations: Sequence[Evaluation]) -> None:
        if reported := [o for ev in evaluations if (o := ev.objectives)]:
            self.task_cost_usd += math.fsum(o.get("cost_usd", 0.0) for o in reported)
            self.task_tokens += int(sum(o.get("tokens", 0.0) for o in reported))

    def add_reflection(self, cost_usd: float, tokens: int) -> None:
        self.reflection_cost_usd += max(0.0, cost_usd)
        self.reflection_tokens += max(0, tokens)

    def price(self, unrecorded: Sequence[Evaluation] = ()) -> float:
        """Observed USD per evaluated case, or the declared price before any."""
        return (self.task_cost_usd + _cost(unrecorded)) / self.used if self.used else self.declared_price or 0.0

    def check_cost(self, remaining: int, phase: str, unrecorded: Sequence[Evaluation], searching: bool) -> None:
        """Before paying for a case: during the search the holdout reserve stays affordable; while
        the seed is scored its whole validation must still fit. `unrecorded`: this batch's
        evaluations so far (not yet in task_cost_usd)."""
        cap = self.max_cost_usd
        if cap is None:
            return
        price = self.price(unrecorded)
        spent = self.task_cost_usd + self.reflection_cost_usd + _cost(unrecorded)
        need = price if phase.startswith("holdout") else price * ((1 if searching else remaining) + self.reserve)
        if spent + need > cap + 1e-12:
            raise CostCapReached(phase, spent, price, cap)

    def calls_left(self) -> int:
        """Metric calls the search may still spend (the holdout comparison kept back)."""
        return max(0, self.max_calls - self.used - self.reserve)

    def proposals_affordable(self, per_proposal: int, proposals_made: int) -> int | None:
        """Proposals the money cap still affords (each at the observed price per case plus the mean
        reflection cost so far), the holdout comparison kept affordable; None: no cap, or no price yet."""
        if self.max_cost_usd is None:
            return None
        spent = self.task_cost_usd + self.reflection_cost_usd
        one = self.price() * per_proposal + self.reflection_cost_usd / max(1, proposals_made)
        return int((self.max_cost_usd - spent - self.price() * self.reserve) // one) if one > 0 else None

    def snapshot(self) -> dict[str, Any]:
        return {"metric_calls": self.used, "task_cost_usd": self.task_cost_usd,
                "reflection_cost_usd": self.reflection_cost_usd, "reflection_tokens": self.reflection_tokens,
                "task_tokens": self.task_tokens}

    def restore(self, snapshot: dict[str, Any]) -> None:
        self.used = int(snapshot["metric_calls"])
        self.task_cost_usd = float(snapshot["task_cost_usd"])
        self.reflection_cost_usd = float(snapshot["reflection_cost_usd"])
        self.reflection_tokens = int(snapshot["reflection_tokens"])
        self.task_tokens = int(snapshot.get("task_tokens", 0))  # absent from records written before it
