"""The engine's settings. These dataclasses are also the Hydra structured configs of the groups
`search`, `evaluation`, `reflection` and `promotion` (registered once in `gepa_lab.config`):
one definition per setting, validated on construction.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from gepa_lab.core.errors import ConfigError


def _int(value: Any, name: str, minimum: int, hint: str = "") -> None:
    if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
        raise ConfigError(f"{name} must be an integer >= {minimum}{hint} (got {value!r})")


def _number(value: Any, name: str, low: float, high: float = math.inf, *, optional: bool = False,
            open_low: bool = False) -> None:
    if value is None and optional:
        return
    ok = not isinstance(value, bool) and isinstance(value, (int, float)) and math.isfinite(value)
    ok = ok and (value > low if open_low else value >= low) and value <= high
    if not ok:
        bound = f"> {low:g}" if open_low else (f"between {low:g} and {high:g}" if high < math.inf else f">= {low:g}")
        suffix = " (or null for no limit)" if optional else ""
        raise ConfigError(f"{name} must be a number {bound}{suffix} (got {value!r})")


@dataclass
class SearchConfig:
    """The search (docs/design.md §3). Budgets end the search; the stop reason names which."""

    max_iterations: int | None = 10  # None: only the budgets end the search
    max_metric_calls: int = 1000  # one metric call = one case evaluated, of any split
    minibatch_size: int = 3
    random_seed: int = 1
    max_cost_usd: float | None = None  # task + reflection USD; None: no money budget
    time_limit_s: float | None = None  # wall time of the search; None: no limit

    def __post_init__(self) -> None:
        self.validate()

    def validate(self) -> None:
        if self.max_iterations is not None:
            _int(self.max_iterations, "search.max_iterations", 0, " (0 scores the seed only; null: no cap)")
        _int(self.max_metric_calls, "search.max_metric_calls", 1)
        _int(self.minibatch_size, "search.minibatch_size", 1)
        if isinstance(self.random_seed, bool) or not isinstance(self.random_seed, int):
            raise ConfigError(f"search.random_seed must be an integer (got {self.random_seed!r})")
        _number(self.max_cost_usd, "search.max_cost_usd", 0.0, optional=True, open_low=True)
        _number(self.time_limit_s, "search.time_limit_s", 0.0, optional=True, open_low=True)


@dataclass
class EvaluationSettings:
    """How cases are evaluated: workers, per-case timeout, retries of transient failures."""

    workers: int = 1  # results are identical for every value
    backend: str = "thread"  # thread | process
    timeout_s: float | None = None  # per evaluator call; None: no limit
    max_retries: int = 2  # transient failures only (timeouts, connection errors, 429 / 5xx)
    retry_backoff_s: float = 0.5  # doubles per retry
    max_consecutive_failures: int = 10  # abort after this many transiently failed cases in a row

    def __post_init__(self) -> None:
        self.validate()

    def validate(self) -> None:
        _int(self.workers, "evaluation.workers", 1)
        if self.backend not in ("thread", "process"):
            raise ConfigError(f"evaluation.backend must be 'thread' or 'process' (got {self.backend!r})")
        _number(self.timeout_s, "evaluation.timeout_s", 0.0, optional=True, open_low=True)
        _int(self.max_retries, "evaluation.max_retries", 0)
        _number(self.retry_backoff_s, "evaluation.retry_backoff_s", 0.0)
        _int(self.max_consecutive_failures, "evaluation.max_consecutive_failures", 1)


@dataclass
class ReflectionSettings:
    """Retries of transient reflector failures (provider errors, rate limits)."""

    max_retries: int = 2  # then the search stops with stop_reason=reflector_error
    retry_backoff_s: float = 1.0  # doubles per retry

    def __post_init__(self) -> None:
        self.validate()

    def validate(self) -> None:
        _int(self.max_retries, "reflection.max_retries", 0)
        _number(self.retry_backoff_s, "reflection.retry_backoff_s", 0.0)


@dataclass
class PromotionPolicy:
    """The holdout rules a winner must pass to be promotion-eligible (docs/design.md §4)."""

    min_holdout_improvement: float = 0.0
    critical_tolerance: float = 0.0  # a critical holdout case may drop by at most this much

    def __post_init__(self) -> None:
        self.validate()

    def validate(self) -> None:
        _number(self.min_holdout_improvement, "promotion.min_holdout_improvement", 0.0, 1.0)
        _number(self.critical_tolerance, "promotion.critical_tolerance", 0.0, 1.0)
