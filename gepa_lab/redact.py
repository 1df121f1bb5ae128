"""Credential redaction and length capping for text that crosses the model boundary."""

from __future__ import annotations

import re

REDACTED = "[REDACTED]"
TRUNCATION_MARKER = "\n...[truncated]...\n"

_SECRET_NAME = r"[A-Za-z0-9_.-]*(?:TOKEN|SECRET|PASSWORD|PASSWD|API[_-]?KEY|ACCESS[_-]?KEY|PRIVATE[_-]?KEY)[A-Za-z0-9_.-]*"

# Order matters: header forms before the generic bearer rule, pairs before bare keys.
_PATTERNS: list[tuple[re.Pattern[str], str]] = [
    # Authorization: Bearer xyz / "authorization": "Basic xyz"
    (re.compile(r"(?i)(\"?authorization\"?\s*[:=]\s*\"?)(?:bearer\s+|basic\s+)?[^\s\",}]+"), r"\1" + REDACTED),
    (re.compile(r"(?i)\b(bearer\s+)[A-Za-z0-9._~+/=-]{12,}"), r"\1" + REDACTED),
    # NAME=value, NAME: value, "NAME": "value" for secret-like names
    (re.compile(r"(?i)(\"?" + _SECRET_NAME + r"\"?\s*[:=]\s*)(\"[^\"]*\"|'[^']*'|[^\s,;}&]+)"), r"\1" + REDACTED),
    # --api-key value / --token=value
    (re.compile(r"(?i)(--(?:api[_-]?key|token|secret|password|passwd)(?:\s+|=))(\"[^\"]*\"|'[^']*'|\S+)"), r"\1" + REDACTED),
    (re.compile(r"\bsk-[A-Za-z0-9_-]{8,}"), REDACTED),
    (re.compile(r"\beyJ[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+"), REDACTED),
]


def redact(text: str) -> str:
    for pattern, replacement in _PATTERNS:
        text = pattern.sub(replacement, text)
    return text


def cap_chars(text: str, limit: int, marker: str = TRUNCATION_MARKER) -> str:
    """Keep head 3/4 and tail 1/4 of the room left after the marker; result ≤ limit chars."""
    if len(text) <= limit:
        return text
    room = limit - len(marker)
    head = room * 3 // 4
    tail = room - head
    return text[:head] + marker + (text[-tail:] if tail else "")


def cap_bytes(text: str, limit: int, marker: str = TRUNCATION_MARKER) -> str:
    """Same as cap_chars but bounded in UTF-8 bytes, cutting on character boundaries."""
    data = text.encode("utf-8")
    if len(data) <= limit:
        return text
    room = limit - len(marker.encode("utf-8"))
    head = data[: room * 3 // 4].decode("utf-8", errors="ignore")
    tail_budget = room - len(head.encode("utf-8"))
    tail = data[len(data) - tail_budget :].decode("utf-8", errors="ignore") if tail_budget > 0 else ""
    return head + marker + tail


def prepare_field(text: str, limit: int = 4000) -> str:
    """Bound first (cheap regex work), redact, then bound again (redaction may lengthen)."""
    text = text.strip()
    return cap_chars(redact(cap_chars(text, limit)), limit)
