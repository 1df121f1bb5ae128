"""Building `dspy.LM` objects from `LMSettings`, and which of their errors are transient.

dspy (0.6 s) and litellm (3.5 s, on the first request) are imported here, lazily: only when an LM
is built. The API key is read from the environment variable the settings name, once, and handed
to dspy; it is never stored on our objects, logged or recorded.

Who retries (docs/real_models.md): a request that fails with a rate limit, a server error, a
timeout or a dropped connection is retried first by dspy, `num_retries` times (default 0), then by
gepa_lab (`evaluation.max_retries` for the task LM, `reflection.max_retries` for the reflection
LM) because `transient_errors()` declares those error types retryable. litellm's own retries are
always off (dspy passes `num_retries=0` to it).
"""

from __future__ import annotations

import logging
import os
import warnings
from typing import Any
from urllib.parse import urlsplit

from gepa_lab.core.errors import ConfigError
from gepa_lab.core.redact import treat_as_secret
from gepa_lab.lm.config import LMSettings
from gepa_lab.lm.server import LOCAL, current

NO_KEY = "EMPTY"  # what a server without authentication gets (vLLM's convention; Ollama ignores it)


def read_api_key(settings: LMSettings, role: str = "lm") -> str:
    """The key from the variable `api_key_env` names. Unset: a one-line ConfigError, except for a
    server on this machine (api_base on 127.0.0.1 / localhost), which gets no key."""
    name = settings.api_key_env
    if name is None:
        return NO_KEY
    treat_as_secret(name)  # a provider's error may echo the key, whatever its shape
    key = os.environ.get(name, "")
    if not key.strip():
        base = settings.api_base
        if base == LOCAL or (base and urlsplit(base).hostname in ("127.0.0.1", "localhost", "::1")):
            logging.getLogger("gepa_lab.lm").info("%s: %s is not set; sending no key to the local server %s",
                                                  role, name, settings.api_base)
            return NO_KEY
        raise ConfigError(f"{role}: the API key variable {name} is not set; export {name}=... (the key), or set "
                          f"{role}.api_key_env to the variable that holds it (null for a server without keys)")
    return key


def build_lm(settings: LMSettings, role: str = "lm", **extra: Any) -> Any:
    """A `dspy.LM` for these settings (the key read from the environment now)."""
    settings.validate(role)
    key = read_api_key(settings, role)
    import dspy

    for name in ("LiteLLM", "LiteLLM Router", "LiteLLM Proxy"):  # one INFO line per request otherwise
        logging.getLogger(name).setLevel(logging.WARNING)
    # dspy warns on every reply cut at max_tokens: for a short-answer task that is a wrong answer,
    # graded as such, not a line per case on the console.
    logging.getLogger("dspy.clients.lm").setLevel(logging.ERROR)

    base = current(role)["url"] if settings.api_base == LOCAL else settings.api_base
    try:
        return dspy.LM(settings.model, api_key=key, temperature=settings.temperature, max_tokens=settings.max_tokens,
                       num_retries=settings.num_retries, cache=settings.cache, engine=settings.engine,
                       timeout=settings.timeout_s, **({"api_base": base} if base else {}), **extra)
    except (TypeError, ValueError) as exc:
        raise ConfigError(f"{role}: dspy refused the LM settings: {' '.join(str(exc).split())}") from exc


def transient_errors() -> tuple[type[BaseException], ...]:
    """dspy's LM error types a retry may fix: rate limits (429), server errors (5xx), timeouts,
    transport failures. dspy wraps litellm's exceptions in these, so the core's status-code check
    does not see them: evaluators and reflectors declare them as `retryable_exceptions`."""
    from dspy.utils import exceptions as e

    return (e.LMRateLimitError, e.LMServerError, e.LMTimeoutError, e.LMTransportError)



def chat(lm: Any, messages: list[dict[str, str]], **extra: Any) -> str:
    """One chat completion by `lm` (a `dspy.LM`) on a messages list, without a DSPy adapter: the
    reply's text ('' when there is none)."""
    with warnings.catch_warnings():
        # dspy 3.4 prefers lm15 Requests, which send `max_completion_tokens`; the messages form
        # sends `max_tokens`, which every OpenAI-compatible server accepts.
        warnings.filterwarnings("ignore", message="Passing OpenAI-style message", category=DeprecationWarning)
        outputs = lm(messages=messages, **extra)
    first = outputs[0] if outputs else ""
    text = first.get("text") if isinstance(first, dict) else first
    return text if isinstance(text, str) else ""
