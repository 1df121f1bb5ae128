"""The reflection boundary: what the reflector may see, and how its reply becomes a child.

Only Feedback minibatch records cross the boundary, each with exactly the keys of
RECORD_KEYS, real case ids replaced by `case-N`, every text field capped and redacted.
A reply that cannot be used is a `ReflectionRejected`, which the search records and survives.
"""

from __future__ import annotations

from collections.abc import Sequence
from functools import lru_cache
from typing import Any

from gepa_lab.core.artifacts import Artifact, artifact_from_dict, get_component, with_component
from gepa_lab.core.contracts import Case, Evaluation
from gepa_lab.core.errors import ReflectionRejected
from gepa_lab.core.redact import prepare_field
from gepa_lab.core.reply import parse_reply

FIELD_MAX_CHARS = 4000
RECORD_KEYS = ("case_id", "input", "expected", "score", "output", "feedback", "trace")


@lru_cache(maxsize=8192)
def _case_field(text: str) -> str:
    # A case's input and expected never change: prepared once, not once per minibatch.
    return prepare_field(text, FIELD_MAX_CHARS)


def build_records(cases: Sequence[Case], evaluations: Sequence[Evaluation]) -> list[dict[str, Any]]:
    """Reflection records for a Feedback minibatch, in minibatch order."""
    return [{"case_id": f"case-{n}", "input": _case_field(case.input), "expected": _case_field(case.expected or ""),
             "score": float(ev.score), "output": prepare_field(ev.output, FIELD_MAX_CHARS),
             "feedback": prepare_field(ev.feedback, FIELD_MAX_CHARS), "trace": prepare_field(ev.trace, FIELD_MAX_CHARS)}
            for n, (case, ev) in enumerate(zip(cases, evaluations, strict=True), start=1)]


def reflector_view(artifact: Artifact) -> Artifact:
    """The artifact as the reflector may see it (every text bounded and redacted). The child is
    still built from the real parent, with only the selected component replaced."""
    return artifact_from_dict({key: [prepare_field(v, FIELD_MAX_CHARS) for v in value]
                               if isinstance(value, (list, tuple)) else prepare_field(value, FIELD_MAX_CHARS)
                               for key, value in artifact.to_dict().items()}, artifact.kind)


def _clean_component(value: Any, current: Any, component: str) -> str | tuple[str, ...]:
    if isinstance(current, tuple):
        if isinstance(value, str):
            value = value.splitlines()
        if not isinstance(value, list):
            raise ReflectionRejected(f"invalid reflected candidate: {component} must be a list of strings")
        return tuple(str(v).strip() for v in value if isinstance(v, (str, int, float)) and str(v).strip())
    if not isinstance(value, str):
        raise ReflectionRejected(f"invalid reflected candidate: {component} must be a string")
    return value.strip()


def apply_replies(parent: Artifact, replies: dict[str, Any]) -> tuple[Artifact, str]:
    """Child = parent with each chosen component taken from its reply (only that component of
    each reply). Returns (child, rationale)."""
    child, rationales = parent, []
    for component, reply in replies.items():
        current = get_component(parent, component)
        data = parse_reply(reply)
        if component not in data:
            raise ReflectionRejected(f"reflection response has no {component!r} field")
        child = with_component(child, component, _clean_component(data[component], current, component))
        rationales.append(prepare_field(str(data.get("rationale", "")), FIELD_MAX_CHARS))
    try:
        child.validate()
    except ValueError as exc:
        raise ReflectionRejected(f"invalid reflected candidate: {exc}") from exc
    if child == parent:
        raise ReflectionRejected("reflection did not change the selected component")
    return child, "\n".join(r for r in rationales if r)


def apply_reply(parent: Artifact, component: str, reply: str | dict[str, Any] | None) -> tuple[Artifact, str]:
    return apply_replies(parent, {component: reply})
