"""Tokens and USD of LM calls, read from the LM's own usage records (`dspy.LM.history`).

Tokens are always counted. USD: the configured `usd_per_1k_tokens` if set, else the cost dspy
recorded for the call (litellm's local price map, for the model the reply names or else the one
requested), else 0 (a local or stub model has no price). A reply served from dspy's cache
carries no usage and costs nothing.
"""

from __future__ import annotations

import math
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


def _amount(value: Any) -> float:
    """A count or a price as recorded: a finite number >= 0, anything else 0."""
    ok = isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)
    return max(0.0, float(value)) if ok else 0.0


def call_cost(settings: LMSettings, tokens: int, reported: Any = None) -> float:
    if settings.usd_per_1k_tokens is not None:
        return tokens / 1000.0 * settings.usd_per_1k_tokens
    return _amount(reported) if tokens else 0.0


def usage_of(history: Iterable[Mapping[str, Any]], settings: LMSettings) -> Usage:
    """The usage of the calls in a `dspy.LM.history` (use a fresh `lm.copy()` per unit of work:
    copies do not share history, so concurrent cases never mix their counts)."""
    total = Usage()
    for entry in history:
        usage = entry.get("usage") or {}
        prompt, completion = int(_amount(usage.get("prompt_tokens"))), int(_amount(usage.get("completion_tokens")))
        total = total + Usage(1, prompt, completion, call_cost(settings, prompt + completion, entry.get("cost")))
    return total

