"""Credential redaction and length capping for text that crosses the model boundary."""

from __future__ import annotations

import functools
import os
import re
import urllib.parse
from collections.abc import Mapping
from typing import Any

REDACTED = "[REDACTED]"
TRUNCATION_MARKER = "\n...[truncated]...\n"

# A name starts only at a token boundary (the lookbehind), so matching stays linear even on a
# long unbroken token such as base64 or a URL.
_NAME_START = r"(?<![A-Za-z0-9_.-])[A-Za-z0-9_.-]*?"
_NAME_REST = r"[A-Za-z0-9_.-]*"
_SECRET_NAME = _NAME_START + r"(?:SECRET|PASSWORD|PASSWD|API[_-]?KEY|ACCESS[_-]?KEY|PRIVATE[_-]?KEY)" + _NAME_REST
_TOKEN_NAME = _NAME_START + r"TOKEN" + _NAME_REST
# A value holds a letter or digit (`api_key="..."` is a placeholder in a hint, not a key), and
# `NAME= word` (a space after `=` but none before, then a plain word) is prose, as in dspy's hint
# "(api_key= on dspy.LM)"; `NAME = value`, `NAME: value` and `NAME= key_123` keep their value.
_SEP = r"(?:\s*:\s*|\s+=\s*|=(?!\s+[a-z]+\b)\s*)"
_VALUE = r"(?=[\"']?[^\s\"',;}&]*[A-Za-z0-9])(\"[^\"]*\"|'[^']*'|[^\s,;}&]+)"
# `tokens=1200` is a count the reflector should see, not a credential.
_NON_NUMERIC_VALUE = r"(\"[^\"]*\"|'[^']*'|(?![\d.,]+(?:[\s,;}&]|$))[^\s,;}&]+)"

# Order matters: URLs first, then header forms, then name=value pairs, then bare key shapes.
_URL = re.compile(r"(?i)(?<![A-Za-z0-9+.-])[a-z][a-z0-9+.-]*://[^\s\"'<>`]+")
_PATTERNS: list[tuple[re.Pattern[str], Any]] = [
    (_URL, lambda match: mask_url(match.group())),
    # Authorization: <any scheme> <credential> -> the whole value, to the quote or end of line
    (re.compile(r"(?i)(\"?authorization\"?\s*[:=]\s*\"?)[^\"\n]+"), r"\1" + REDACTED),
    (re.compile(r"(?i)\b(bearer\s+)[A-Za-z0-9._~+/=-]{12,}"), r"\1" + REDACTED),
    # NAME=value, NAME: value, "NAME": "value" for secret-like names
    (re.compile(r"(?i)(\"?" + _SECRET_NAME + r"\"?" + _SEP + ")" + _VALUE), r"\1" + REDACTED),
    (re.compile(r"(?i)(\"?" + _TOKEN_NAME + r"\"?" + _SEP + ")" + _NON_NUMERIC_VALUE), r"\1" + REDACTED),
    # --api-key value / --token=value
    (re.compile(r"(?i)(--(?:api[_-]?key|token|secret|password|passwd)(?:\s+|=))(\"[^\"]*\"|'[^']*'|\S+)"),
     r"\1" + REDACTED),
    # a provider's echo of the key it refused: "Incorrect API key provided: gsk_…"
    (re.compile(r"(?i)(\bapi[ _-]?key(?: provided| given| supplied| used| sent)?" + _SEP + ")" + _VALUE),
     r"\1" + REDACTED),
    (re.compile(r"\bsk-[A-Za-z0-9_-]{8,}"), REDACTED),
    (re.compile(r"\beyJ[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+"), REDACTED),
]


# Every pattern above needs one of these; text without any skips the substitutions.
_TRIGGER = re.compile(r"(?i)authorization|bearer|secret|passw|api[ _-]?key|access[_-]?key|private[_-]?key"
                      r"|token|sk-|eyJ|://")

# Query parameters that only tune a connection (drivers, SQLite, Azure's api-version): their values
# are shown. Any other parameter's value may be a credential (sig=, sslpassword=, key=) and is masked.
SAFE_PARAMETERS = frozenset({"sslmode", "sslrootcert", "sslcert", "connect_timeout", "application_name", "charset",
                             "target_session_attrs", "timeout", "mode", "cache", "uri", "immutable",
                             "check_same_thread", "api-version"})


def url_secrets(url: str) -> list[str]:
    """What in `url` may carry a credential: a password (an HTTP URL's whole user-info: basic auth,
    a token as user; a database URL's user is a role) and every query parameter outside
    SAFE_PARAMETERS."""
    try:
        parts = urllib.parse.urlsplit(url)
        user, password = parts.username, parts.password
    except ValueError:  # not a URL after all
        return []
    pairs = [pair.partition("=") for pair in parts.query.split("&") if pair]
    found = ["a password"] if password is not None else ["user-info"] if user and parts.scheme in _HTTP else []
    names = [urllib.parse.unquote_plus(name) if is_pair else None for name, is_pair, _ in pairs]
    return found + [f"the query parameter {n!r}" if n else "a query value" for n in names if n not in SAFE_PARAMETERS]


_HTTP = ("http", "https")
_USERINFO = re.compile(r"^([^:/?#]+://)([^/?#@:]*)(:[^/?#@]*)?@")
_PARAMETER = re.compile(r"([?&])([^=&#]+)(=[^&#]*)?")


def mask_url(url: str) -> str:
    """`url` for messages and records: what `url_secrets` names masked, the rest (host, path, a
    database user, the harmless parameters) kept."""
    if not url_secrets(url):
        return url
    head, mark, fragment = url.partition("#")
    http = head.lower().startswith(("http:", "https:"))
    head = _USERINFO.sub(lambda m: f"{m[1]}{'' if http else m[2] + ':'}{REDACTED}@" if http or m[3] else m[0], head)
    # a parameter outside the safe ones, name and value (a bare `?abc` may be a token): masked whole
    head = _PARAMETER.sub(lambda m: m[0] if m[3] and urllib.parse.unquote_plus(m[2]) in SAFE_PARAMETERS
                          else m[1] + REDACTED, head)
    return head + mark + fragment


# Environment variables whose values are credentials whatever their shape (gsk_…, AIza…, hex):
# OPENAI_API_KEY, GH_TOKEN, AWS_SECRET_ACCESS_KEY, PGPASSWORD, ...
_SECRET_ENV = re.compile(r"(?i)API_?KEY|TOKEN|SECRET|PASSWORD|PASSWD|CREDENTIAL|ACCESS_KEY|PRIVATE_KEY")
# Shorter values of a variable that only *looks* secret (TOKENIZERS_PARALLELISM=false, MAX_TOKENS=2048)
# are left alone: replacing them would blank ordinary words.
_MIN_SECRET_CHARS = 8
_MIN_KNOWN_CHARS = 4  # a known secret shorter than this is no key (a test's "k"): it would blank letters
# Known secrets, redacted whatever their (real) length: the variables an LM's `api_key_env` names (declared
# when the LM is built) and the credentials gepa-lab's stores read.
_secret_env_names: set[str] = {"PGPASSWORD", "MLFLOW_TRACKING_PASSWORD", "MLFLOW_TRACKING_TOKEN"}
_secret_given: set[str] = set()  # keys handed over directly (a caller's `dspy.LM(api_key=...)`)
# The secret values, longest first (a key that contains another is replaced whole), as one pattern;
# a known secret shorter than _MIN_SECRET_CHARS only as a whole word. Read when a run starts and
# when a variable is declared secret, not per call: reading the environment costs ~20 µs, and
# reflection records are redacted several times per proposal.
_secret_values: list[str] = []
_secret_pattern: re.Pattern[str] | None = None


def read_secrets() -> None:
    """Read the secret environment variables' values again (a run's start: a sweep or a test may
    have changed them)."""
    global _secret_values, _secret_pattern
    known = {value for name, value in os.environ.items() if name in _secret_env_names} | _secret_given
    _secret_values = sorted({value for value in known if len(value.strip()) >= _MIN_KNOWN_CHARS} | {
        value for name, value in os.environ.items() if len(value) >= _MIN_SECRET_CHARS and _secret_name(name)},
        key=len, reverse=True)
    _secret_pattern = re.compile("|".join(
        re.escape(v) if len(v) >= _MIN_SECRET_CHARS else rf"(?<![A-Za-z0-9_]){re.escape(v)}(?![A-Za-z0-9_])"
        for v in _secret_values)) if _secret_values else None


def treat_as_secret(env_name: str | None = None, value: Any = None) -> None:
    """Redact the value of this environment variable too (e.g. an LM's `api_key_env`, whatever its
    name), or this value, whatever its length."""
    _secret_env_names.update([env_name] if env_name else [])
    _secret_given.update([value] if isinstance(value, str) and value.strip() else [])
    read_secrets()


@functools.lru_cache(maxsize=1024)
def _secret_name(name: str) -> bool:
    return _SECRET_ENV.search(name) is not None


def redact(text: str, *, shapes: bool = True) -> str:
    """Credentials out of `text`: the values of secret environment variables, wherever they appear,
    and (`shapes`) whatever looks like a credential (URL passwords and query values, headers,
    NAME=value pairs, key shapes)."""
    if _secret_pattern is not None and any(value in text for value in _secret_values):
        text = _secret_pattern.sub(REDACTED, text)
    if not shapes or not _TRIGGER.search(text):
        return text
    for pattern, replacement in _PATTERNS:
        text = pattern.sub(replacement, text)
    return text


read_secrets()


def without_known_secrets(value: Any) -> Any:
    """A reply (text, or JSON-like data) without the values of secret variables: a model that echoes
    its key must not put it into a candidate or the record. Key shapes stay (an ordinary instruction
    may say `token: the page cursor`)."""
    if isinstance(value, str):
        return redact(value, shapes=False)
    if isinstance(value, Mapping):
        return {key: without_known_secrets(item) for key, item in value.items()}
    return [without_known_secrets(item) for item in value] if isinstance(value, (list, tuple)) else value


def cap_chars(text: str, limit: int, marker: str = TRUNCATION_MARKER) -> str:
    """Keep head 3/4 and tail 1/4 of the room left after the marker; result ≤ limit chars."""
    if len(text) <= limit:
        return text
    room = limit - len(marker)
    head = room * 3 // 4
    return text[:head] + marker + text[len(text) - (room - head):]


def prepare_field(text: str, limit: int = 4000) -> str:
    """Bound first (cheap regex work), redact, then bound again (redaction may lengthen)."""
    return cap_chars(redact(cap_chars(text.strip(), limit)), limit) if text else text
