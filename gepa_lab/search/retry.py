"""Retrying transient failures (timeouts, connection errors, 429 / 5xx, declared types) with
exponential backoff; anything else is raised at once."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

from tenacity import Retrying, retry_if_exception, stop_after_attempt, wait_exponential

from gepa_lab.core.errors import declared_retryable, is_transient

T = TypeVar("T")


class RetryPolicy:
    """`policy(fn, *args)`: up to `retries` more attempts after a transient failure, waiting
    backoff, 2·backoff, 4·backoff, … in between."""

    def __init__(self, component: object, retries: int, backoff_s: float):
        self.declared = declared_retryable(component)
        self._retrying = Retrying(stop=stop_after_attempt(retries + 1),
                                  wait=wait_exponential(multiplier=backoff_s, exp_base=2, min=backoff_s),
                                  retry=retry_if_exception(self.transient), reraise=True)

    def transient(self, exc: BaseException) -> bool:
        return is_transient(exc, self.declared)

    def __call__(self, fn: Callable[..., T], *args: Any) -> T:
        return self._retrying(fn, *args)
