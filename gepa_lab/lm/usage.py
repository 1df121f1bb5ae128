"""Tokens and USD of LM calls, read from the LM's own usage records (`dspy.LM.history`).

Tokens are always counted. USD: the configured `usd_per_1k_tokens` if set, else the cost litellm
reported for the call, else litellm's local price map for the model, else 0 (a local or stub
model has no price). A reply served from dspy's cache carries no usage and costs nothing.
"""

from __future__ import annotations

import math
import threading
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from gepa_lab.lm.config import LMSettings


@dataclass(frozen=True)
class Usage:
    calls: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cost_usd: float = 0.0

    @property
    def tokens(self) -> int:
        return self.prompt_tokens + self.completion_tokens

    def __add__(self, other: Usage) -> Usage:
        return Usage(self.calls + other.calls, self.prompt_tokens + other.prompt_tokens,
                     self.completion_tokens + other.completion_tokens, self.cost_usd + other.cost_usd)


def _count(value: Any) -> int:
    return int(value) if isinstance(value, (int, float)) and not isinstance(value, bool) and value > 0 else 0


def call_cost(settings: LMSettings, model: str, prompt_tokens: int, completion_tokens: int,
              reported: Any = None) -> float:
    if not prompt_tokens and not completion_tokens:
        return 0.0
    if settings.usd_per_1k_tokens is not None:
        return (prompt_tokens + completion_tokens) / 1000.0 * settings.usd_per_1k_tokens
    if isinstance(reported, (int, float)) and not isinstance(reported, bool) and math.isfinite(reported):
        return max(0.0, float(reported))
    try:  # litellm's price for the tokens (its local cost map); 0 for a model it does not know
        import litellm

        prompt_cost, completion_cost = litellm.cost_per_token(
            model=model, prompt_tokens=prompt_tokens, completion_tokens=completion_tokens)
        total = float(prompt_cost) + float(completion_cost)
    except Exception:  # unknown model, or a provider litellm cannot price: no price
        return 0.0
    return total if math.isfinite(total) and total >= 0 else 0.0


def usage_of(history: Iterable[Mapping[str, Any]], settings: LMSettings) -> Usage:
    """The usage of the calls in a `dspy.LM.history` (use a fresh `lm.copy()` per unit of work:
    copies do not share history, so concurrent cases never mix their counts)."""
    total = Usage()
    for entry in history:
        usage = entry.get("usage") or {}
        prompt, completion = _count(usage.get("prompt_tokens")), _count(usage.get("completion_tokens"))
        cost = call_cost(settings, str(entry.get("model") or settings.model), prompt, completion, entry.get("cost"))
        total = total + Usage(1, prompt, completion, cost)
    return total


class UsageMeter:
    """A thread-safe running total (evaluation workers add to it concurrently)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._total = Usage()

    def add(self, usage: Usage) -> None:
        with self._lock:
            self._total = self._total + usage

    @property
    def total(self) -> Usage:
        with self._lock:
            return self._total
