"""One unit of work (a program run, an agent episode) under its own copy of an LM, with the
case's provider seed, measured: tokens and USD from the copy's usage records, wall-clock latency.

A reply the DSPy adapter cannot parse is a task failure (returned, with its usage), not an
exception; transient provider errors propagate so gepa_lab's retry layer sees them.
"""

from __future__ import annotations

import hashlib
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from gepa_lab.lm.client import accepts_seed, lm_and_settings, transient_errors
from gepa_lab.lm.config import LMSettings
from gepa_lab.lm.usage import Usage, UsageMeter, usage_of


def case_seed(seed: int, case_id: str) -> int:
    """The provider seed of one case under one evaluation seed (31 bits, what providers accept):
    parent and child scored with the same paired seed send the same provider seed per case."""
    digest = hashlib.sha256(f"{seed}:{case_id}".encode()).digest()
    return int.from_bytes(digest[:4], "big") & 0x7FFFFFFF


@dataclass
class Metered:
    value: Any
    usage: Usage
    latency_ms: float
    provider_seed: int
    seed_sent: bool
    trace: list[Any] = field(default_factory=list)  # dspy's (predictor, inputs, outputs) records
    parse_error: Exception | None = None  # the model's reply did not fit the adapter's format

    def objectives(self) -> dict[str, float]:
        u = self.usage
        return {"tokens": float(u.tokens), "prompt_tokens": float(u.prompt_tokens),
                "completion_tokens": float(u.completion_tokens), "cost_usd": u.cost_usd,
                "latency_ms": round(self.latency_ms, 3), "lm_calls": float(u.calls)}


def metered(lm: Any, settings: LMSettings, provider_seed: int, fn: Callable[[], Any]) -> Metered:
    """Run `fn()` with `lm` (a copy carrying the seed) as dspy's LM, collecting dspy's trace."""
    import dspy
    from dspy.utils.exceptions import AdapterParseError

    sent = accepts_seed(settings.model)
    own = lm.copy(seed=provider_seed) if sent else lm.copy()
    value: Any = None
    error: Exception | None = None
    trace: list[Any] = []
    start = time.perf_counter()
    try:
        with dspy.context(lm=own, trace=trace):
            try:
                value = fn()
            except AdapterParseError as exc:
                error = exc
    finally:
        latency = (time.perf_counter() - start) * 1000.0
    return Metered(value, usage_of(own.history, settings), latency, provider_seed, sent, list(trace), error)


class LMCaller:
    """What an evaluator or reflector that pays for LM calls holds: the LM (built now, so a missing key
    or a bad setting fails before anything is spent) with its settings, the error types a retry may
    fix (`retryable_exceptions`, read by the engine) and the usage so far."""

    def __init__(self, lm: LMSettings | Mapping[str, Any] | Any, role: str):
        self.lm, self.settings = lm_and_settings(lm, role)
        self.retryable_exceptions = transient_errors()
        self.meter = UsageMeter()

    @property
    def usage(self) -> Usage:
        return self.meter.total

    def metered(self, seed: int, case_id: str, fn: Callable[[], Any]) -> Metered:
        """`fn()` under a copy of the LM with the case's provider seed; its usage is counted."""
        run = metered(self.lm, self.settings, case_seed(seed, case_id), fn)
        self.meter.add(run.usage)
        return run
