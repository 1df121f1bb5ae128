"""The reflector's reply as an object: what the engine applies (`gepa_lab.search.reflection`) and
what a sampling reflector checks before it settles on one of its samples."""

from __future__ import annotations

import json
import re
from typing import Any

import json_repair

from gepa_lab.core.errors import ReflectionRejected

_FENCE = re.compile(r"^\s*```[a-zA-Z]*\s*\n?|\n?\s*```\s*$")


def parse_reply(reply: str | dict[str, Any] | None) -> dict[str, Any]:
    """Tolerates a ```json fence, prose around the object and trailing commas."""
    if reply is None:
        raise ReflectionRejected("empty reflection response")
    if isinstance(reply, dict):
        return reply
    if not isinstance(reply, str):
        raise ReflectionRejected(f"reflection response must be text or an object, got {type(reply).__name__}")
    text = _FENCE.sub("", reply.strip()).strip()
    if not text:
        raise ReflectionRejected("empty reflection response")
    start, end = text.find("{"), text.rfind("}")
    if start < 0 or end < start:
        raise ReflectionRejected("parse reflection response: no JSON object found")
    for candidate in dict.fromkeys((text, text[start : end + 1])):  # the whole text, then the object in it
        try:
            value = json.loads(candidate)
        except json.JSONDecodeError:
            try:
                value = json_repair.loads(candidate)
            except Exception:  # the repair library is best-effort; any failure is a parse failure
                value = None
        if isinstance(value, dict) and value:
            return value
    raise ReflectionRejected("parse reflection response: no JSON object found")
