"""Credential redaction and length capping for text that crosses the model boundary."""

from __future__ import annotations

import functools
import os
import re

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

# Order matters: header forms first, then name=value pairs, then bare key shapes.
_PATTERNS: list[tuple[re.Pattern[str], str]] = [
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
    # the password in a URL's userinfo: scheme://user:password@host
    (re.compile(r"(?i)((?<![A-Za-z0-9+.-])[a-z][a-z0-9+.-]*://[^/\s:@]*:)[^/\s@]+@"), r"\1" + REDACTED + "@"),
    (re.compile(r"\bsk-[A-Za-z0-9_-]{8,}"), REDACTED),
    (re.compile(r"\beyJ[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+"), REDACTED),
]


# Every pattern above needs one of these words; text without any skips the substitutions.
_TRIGGER = re.compile(r"(?i)authorization|bearer|secret|passw|api[ _-]?key|access[_-]?key|private[_-]?key"
                      r"|token|sk-|eyJ|://[^/\s:@]*:[^/\s@]+@")

# Environment variables whose values are credentials whatever their shape (gsk_…, AIza…, hex):
# OPENAI_API_KEY, GH_TOKEN, AWS_SECRET_ACCESS_KEY, PGPASSWORD, ...
_SECRET_ENV = re.compile(r"(?i)API_?KEY|TOKEN|SECRET|PASSWORD|PASSWD|CREDENTIAL|ACCESS_KEY|PRIVATE_KEY")
_MIN_SECRET_CHARS = 8  # shorter values (TOKENIZERS_PARALLELISM=false, a flag "1") would blank ordinary words
_secret_env_names: set[str] = set()
# The secret variables' values, longest first (a key that contains another is replaced whole). Read
# when a run starts and when a variable is declared secret, not per call: reading the environment
# costs ~20 µs, and reflection records are redacted several times per proposal.
_secret_values: list[str] = []


def read_secrets() -> None:
    """Read the secret environment variables' values again (a run's start: a sweep or a test may
    have changed them)."""
    global _secret_values
    _secret_values = sorted({value for name, value in os.environ.items() if len(value) >= _MIN_SECRET_CHARS
                             and (name in _secret_env_names or _secret_name(name))}, key=len, reverse=True)


def treat_as_secret(env_name: str) -> None:
    """Redact the value of this environment variable too (e.g. an LM's `api_key_env`, whatever its name)."""
    _secret_env_names.add(env_name)
    read_secrets()


@functools.lru_cache(maxsize=1024)
def _secret_name(name: str) -> bool:
    return _SECRET_ENV.search(name) is not None


def redact(text: str) -> str:
    """Credentials out of `text`: the values of secret environment variables, wherever they appear,
    and whatever looks like a credential (headers, NAME=value pairs, key shapes, URL passwords)."""
    for value in _secret_values:
        if value in text:
            text = text.replace(value, REDACTED)
    if not _TRIGGER.search(text):
        return text
    for pattern, replacement in _PATTERNS:
        text = pattern.sub(replacement, text)
    return text


read_secrets()


def cap_chars(text: str, limit: int, marker: str = TRUNCATION_MARKER) -> str:
    """Keep head 3/4 and tail 1/4 of the room left after the marker; result ≤ limit chars."""
    if len(text) <= limit:
        return text
    room = limit - len(marker)
    head = room * 3 // 4
    tail = room - head
    return text[:head] + marker + (text[-tail:] if tail else "")


def prepare_field(text: str, limit: int = 4000) -> str:
    """Bound first (cheap regex work), redact, then bound again (redaction may lengthen)."""
    if not text:
        return text
    text = text.strip()
    return cap_chars(redact(cap_chars(text, limit)), limit)
