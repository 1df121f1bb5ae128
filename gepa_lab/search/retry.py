"""Retrying transient failures (timeouts, connection errors, 429 / 5xx, declared types) with
exponential backoff; anything else is raised at once."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any, TypeVar

from tenacity import Retrying, retry_if_exception, stop_after_attempt, wait_exponential

from gepa_lab.core.errors import declared_retryable, is_transient
from gepa_lab.core.settings import MAX_BACKOFF_S

T = TypeVar("T")


class RetryPolicy:
    """`policy(fn, *args)`: after a transient failure, up to `retries` more attempts waiting backoff,
    2·backoff, 4·backoff, … in between. The first attempt is a plain call: tenacity's machinery costs
    more than a cheap evaluator, and only a failure needs it."""

    def __init__(self, component: object, retries: int, backoff_s: float):
        self.declared = declared_retryable(component)
        self.backoff_s = backoff_s
        self._later = Retrying(stop=stop_after_attempt(retries),
                               # capped: doubling past an hour only overflows time.sleep
                               wait=wait_exponential(multiplier=2 * backoff_s, min=2 * backoff_s, max=MAX_BACKOFF_S),
                               retry=retry_if_exception(self.transient), reraise=True) if retries > 0 else None

    def transient(self, exc: BaseException) -> bool:
        return is_transient(exc, self.declared)

    def __call__(self, fn: Callable[..., T], *args: Any) -> T:
        try:
            return fn(*args)
        except Exception as exc:
            if self._later is None or not self.transient(exc):
                raise
        time.sleep(self.backoff_s)
        return self._later(fn, *args)
