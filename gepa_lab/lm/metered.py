"""One unit of work (a program run, an agent episode) under its own copy of an LM, with the
case's provider seed, measured: tokens and USD from the copy's usage records, wall-clock latency.

A reply the DSPy adapter cannot parse is a task failure (returned, with its usage), not an
exception; transient provider errors propagate so gepa_lab's retry layer sees them.
"""

from __future__ import annotations

import hashlib
import threading
import time
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

from gepa_lab.core.errors import describe
from gepa_lab.core.redact import treat_as_secret
from gepa_lab.lm.client import build_lm, transient_errors
from gepa_lab.lm.config import LMSettings, as_settings, settings_of
from gepa_lab.lm.usage import Usage, usage_of


class LMEndpointError(ConnectionError):
    """A request that failed transiently, named by its endpoint; still transient (a ConnectionError)."""


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


class LMCaller:
    """What an evaluator or reflector that pays for LM calls holds: the LM (built now, so a missing key
    or a bad setting fails before anything is spent) with its settings, the error types a retry may
    fix (`retryable_exceptions`, read by the engine) and the usage so far."""

    def __init__(self, lm: LMSettings | Mapping[str, Any] | Any, role: str):
        if lm is None or isinstance(lm, (LMSettings, Mapping)) or not hasattr(lm, "model"):
            self.settings = as_settings(lm, role)  # settings, the `lm.<role>` mapping, or None: the defaults
            self.lm = build_lm(self.settings, role)
        else:  # a ready LM object (a dspy.LM the caller built), used as it is; its key is a known secret
            self.lm, self.settings = lm, settings_of(lm, role)
            treat_as_secret(value=(getattr(lm, "kwargs", None) or {}).get("api_key"))
        self.retryable_exceptions = transient_errors()
        self.role = role
        self.usage = Usage()
        self._usage_lock = threading.Lock()  # evaluation workers count concurrently

    @cached_property
    def sends_seed(self) -> bool:
        """Whether the provider takes a sampling seed (its parameters, as dspy routes the request):
        asked once, as dspy works it out from litellm's tables on every access."""
        return "seed" in self.lm.supported_params

    def count(self, lm: Any) -> Usage:
        """Add the calls in `lm`'s history (a copy used for one unit of work) to `usage`; returns their usage."""
        used = usage_of(lm.history, self.settings)
        with self._usage_lock:
            self.usage = self.usage + used
        return used

    @contextmanager
    def endpoint(self) -> Iterator[None]:
        """Where this LM's requests run: a transient failure (rate limit, server error, deadline,
        connection) becomes one line naming the endpoint (never the key) and the settings to change."""
        try:
            yield
        except self.retryable_exceptions as exc:
            s = self.settings
            # where the requests went (lm=local: the server's URL); it holds no secret: settings refuse one
            where = (getattr(self.lm, "kwargs", None) or {}).get("api_base") or f"the provider's endpoint for {s.model}"
            raise LMEndpointError(f"{self.role} at {where} failed ({describe(exc)}); check {self.role}.api_base, "
                                  f"or raise {self.role}.timeout_s (deadline {s.timeout_s:g} s)") from exc

    def metered(self, seed: int, case_id: str, fn: Callable[[], Any]) -> Metered:
        """Run `fn()` with a copy of the LM as dspy's LM (carrying the case's provider seed when the
        provider takes one), collecting dspy's trace; its usage is counted."""
        import dspy
        from dspy.utils.exceptions import AdapterParseError

        # The case's provider seed under this evaluation seed (31 bits, what providers accept): parent
        # and child scored with the same paired seed send the same provider seed per case.
        provider_seed = int(hashlib.sha256(f"{seed}:{case_id}".encode()).hexdigest()[:8], 16) & 0x7FFFFFFF
        sent = self.sends_seed
        own = self.lm.copy(seed=provider_seed) if sent else self.lm.copy()
        value: Any = None
        error: Exception | None = None
        trace: list[Any] = []
        start = time.perf_counter()
        with dspy.context(lm=own, trace=trace), self.endpoint():
            try:
                value = fn()
            except AdapterParseError as exc:
                error = exc
        latency = (time.perf_counter() - start) * 1000.0
        return Metered(value, self.count(own), latency, provider_seed, sent, list(trace), error)
