"""Per-predictor feedback and traces inside an evaluation's text fields, and the reflector's view
of one predictor.

A program evaluator writes, for each case, the metric's program-level feedback followed by one
section per predictor that the metric gave its own feedback (dspy.GEPA's
`metric(gold, pred, trace, pred_name, pred_trace)`), and a trace with one line per predictor
call prefixed with the predictor's name. When the reflector improves one predictor's
instructions it keeps that predictor's section and trace lines and drops the others', as
dspy.GEPA's reflective dataset does. Text without sections passes through unchanged.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

_SECTION = re.compile(r"^\[feedback for ([^\]\n]+)\] ", re.M)


def compose_feedback(overall: str, per_predictor: Mapping[str, str]) -> str:
    """The program-level feedback, then one line per predictor's own feedback."""
    lines = [overall.strip()] if overall.strip() else []
    lines += [f"[feedback for {name}] {' '.join(text.split())}" for name, text in per_predictor.items()
              if text and text.strip()]
    return "\n".join(lines)


def split_feedback(text: str) -> tuple[str, dict[str, str]]:
    """(program-level feedback, {predictor: its feedback}) of a composed feedback text."""
    overall, *sections = _SECTION.split(text)  # the text before the first mark, then (name, body) pairs
    if not sections:
        return text, {}
    return overall.strip(), {name: body.strip() for name, body in zip(sections[::2], sections[1::2], strict=True)}


def trace_line(name: str, what: str, value: str) -> str:
    return f"[{name}] {what}: {value}"


def _trace_for(trace: str, name: str) -> str:
    lines = trace.splitlines()
    own = [line for line in lines if line.startswith(f"[{name}] ")]
    if not own:
        return trace
    untagged = [line for line in lines if not line.startswith("[")]  # e.g. the provider-seed note
    return "\n".join([*untagged, *own])


def for_component(record: Mapping[str, Any], component: str) -> dict[str, Any]:
    """A reflection record narrowed to one predictor: its own feedback section (after the
    program-level feedback) and its own trace lines."""
    out = dict(record)
    overall, parts = split_feedback(str(record.get("feedback") or ""))
    if parts:
        own = parts.get(component)
        out["feedback"] = "\n".join(x for x in (overall, own and f"About `{component}`: {own}") if x)
    if record.get("trace"):
        out["trace"] = _trace_for(str(record["trace"]), component)
    return out
