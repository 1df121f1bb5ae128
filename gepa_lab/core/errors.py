"""What can go wrong in a run, and which failures are worth a retry.

A failure is either *transient* (a timeout, a dropped connection, an HTTP 429 or 5xx from an LM
provider, or an exception type the evaluator / reflector declares retryable) and retried, or a
*bug* and the run stops at once with one line that names it. Bugs are never scored 0 and never
retried: a broken evaluator must not quietly steer the search.
"""

from __future__ import annotations

import argparse
import os
import signal
import sys
from collections.abc import Callable, Iterable
from typing import NoReturn

from gepa_lab.core.redact import redact


class GepaLabError(Exception):
    """An error the command line reports as one line (exit code 1)."""


class ConfigError(GepaLabError, ValueError):
    """A bad configuration value or command-line argument (exit code 2)."""


class ResumeError(GepaLabError, ValueError):
    """A run directory that cannot be resumed (or reused) as asked."""


class AlreadyDone(ResumeError):
    """A resume that asks for nothing the record does not already hold: not a failure (the
    command line prints it and exits 0), nothing is paid or written."""


class ProtocolError(GepaLabError, TypeError):
    """An evaluator, reflector or submitter that does not implement its protocol's methods."""


class EvaluatorContractError(GepaLabError, RuntimeError):
    """The evaluator broke its contract (wrong count, unknown / duplicate / missing case id, bad
    score or objective); the run stops."""


class EvaluatorError(GepaLabError, RuntimeError):
    """The evaluator raised an exception that is not transient: a bug; the run stops."""


class ReflectorError(GepaLabError, RuntimeError):
    """The reflector raised an exception that is not transient: a bug; the run stops."""


class ReflectorUnavailable(GepaLabError, RuntimeError):
    """Transient reflector failures (the provider down) outlasted the retries: the run stops at its
    last round end, resumable once the provider is back."""


class RunAborted(GepaLabError, RuntimeError):
    """Too many evaluations in a row failed transiently: a run where everything fails must not
    report success."""


class TrackingError(GepaLabError, RuntimeError):
    """A tracker could not start (bad URI, unreachable server): nothing has been spent yet."""


class ReflectionRejected(Exception):
    """A reflector reply that yields no usable child: recorded as a rejection, not fatal."""


# HTTP statuses worth retrying: request timeout, rate limit, server errors.
_TRANSIENT_STATUS = frozenset({408, 429})

# Connection / timeout exception types of LM client libraries (module -> names).
_CLIENT_TRANSIENT = {"openai": ("APIConnectionError", "APITimeoutError"), "requests": ("ConnectionError", "Timeout"),
                     "httpx": ("TransportError", "TimeoutException"),
                     "litellm": ("APIConnectionError", "Timeout", "RateLimitError", "ServiceUnavailableError",
                                 "InternalServerError")}


def _status_code(exc: BaseException) -> int | None:
    """The HTTP status an LM client attached to its exception (openai, litellm, httpx style)."""
    for holder in (exc, getattr(exc, "response", None)):
        code = getattr(holder, "status_code", None)
        if isinstance(code, int):
            return code
    return None


def _client_transient_types() -> tuple[type[BaseException], ...]:
    """Connection / timeout exception types of LM client libraries, if they are loaded. Looked up
    in sys.modules so classifying an error never imports a heavy library."""
    found = [getattr(sys.modules[module], name, None)
             for module, names in _CLIENT_TRANSIENT.items() if module in sys.modules for name in names]
    return tuple(kind for kind in found if isinstance(kind, type) and issubclass(kind, BaseException))


def is_transient(exc: BaseException, declared: Iterable[type[BaseException]] = ()) -> bool:
    """True for failures a retry may fix; everything else is a bug."""
    if isinstance(exc, (TimeoutError, ConnectionError, *declared)):
        return True
    if (code := _status_code(exc)) is not None:
        return code in _TRANSIENT_STATUS or 500 <= code < 600
    return isinstance(exc, _client_transient_types())


def declared_retryable(component: object) -> tuple[type[BaseException], ...]:
    """The exception types an evaluator or reflector declares transient (`retryable_exceptions`)."""
    value = getattr(component, "retryable_exceptions", ())
    kinds = (value,) if isinstance(value, type) else tuple(value or ())
    for kind in kinds:
        if not (isinstance(kind, type) and issubclass(kind, BaseException)):
            raise TypeError(f"{type(component).__name__}.retryable_exceptions must hold exception types, got {kind!r}")
    return kinds


def describe(exc: BaseException) -> str:
    """`Type: message` on one line, credentials redacted (a provider's error may echo the key)."""
    text = redact(" ".join(str(exc).split()))
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__


def one_line_parser(tool: str) -> type[argparse.ArgumentParser]:
    """The ArgumentParser of a `python -m <tool>` command: a usage error is one line on stderr
    (`<tool>: error: …`) and exit 2, not argparse's usage block."""

    class OneLineParser(argparse.ArgumentParser):
        def error(self, message: str) -> NoReturn:
            print(f"{tool}: error: {message} (see python -m {tool} --help)", file=sys.stderr)
            raise SystemExit(2)

    return OneLineParser


def fail(tool: str, message: str, code: int) -> int:
    """A command's error: one line on stderr (`<tool>: error: …`); returns the exit code."""
    print(f"{tool}: error: {redact(' '.join(message.split()))}", file=sys.stderr)
    return code


def reader_left() -> NoReturn:
    """The reader of stdout left early (`… | head`): end quietly with exit 141, as Unix tools do."""
    os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())  # nothing left to flush there
    raise SystemExit(128 + signal.SIGPIPE) from None


def run_main(main: Callable[[], int]) -> NoReturn:
    """`raise SystemExit(main())` for a `python -m` tool, ending quietly when its reader left."""
    try:
        code = main()
        sys.stdout.flush()  # what is still buffered meets a closed pipe here, not at interpreter exit
    except BrokenPipeError:
        reader_left()
    raise SystemExit(code)
