"""Cases as `dspy.Example`s, and a metric's verdict as (score, feedback).

A case's `input` is a JSON object holding the program's input fields, or (for a program with one
input) the input text itself. Its `expected` is a JSON object of label fields, or a plain value
stored under `label` (default `answer`). Metadata fields ride along for the metric (they never
reach the reflector). `examples_to_cases` goes the other way for the teleprompter.
"""

from __future__ import annotations

import contextlib
import json
import math
from collections.abc import Sequence
from typing import Any

from gepa_lab.core.artifacts import canonical_json
from gepa_lab.core.contracts import Case


def _object(text: str | None) -> dict[str, Any] | None:
    with contextlib.suppress(ValueError):
        if text and text.lstrip().startswith("{") and isinstance(value := json.loads(text), dict):
            return value
    return None


def case_inputs(case: Case, inputs: Sequence[str]) -> dict[str, Any]:
    data = _object(case.input)
    if data is not None and all(name in data for name in inputs):
        return {name: data[name] for name in inputs}
    if len(inputs) == 1:  # a single input missing from a JSON object: the input text itself
        return {inputs[0]: case.input}
    missing = [name for name in inputs if data is None or name not in data]
    raise ValueError(f"case {case.id!r} has no input field(s) {missing}: its input must be a JSON object with "
                     f"the fields {list(inputs)} (evaluator.inputs)")


def to_example(case: Case, inputs: Sequence[str], label: str) -> Any:
    import dspy

    labels = _object(case.expected)  # a JSON object of label fields, else the plain value under `label`
    if labels is None and case.expected is not None:
        labels = {label: case.expected}
    fields = {**case.metadata, **(labels or {}), **case_inputs(case, inputs)}
    return dspy.Example(**fields).with_inputs(*inputs)


def verdict(value: Any, where: str) -> tuple[float, str]:
    """A metric's return value -> (score in [0, 1], feedback). Accepts a number (bool included)
    or an object / mapping with `score` and optional `feedback` (dspy.Prediction as dspy.GEPA's
    feedback metrics return)."""
    score, feedback = value, ""  # a number (a bool is one: an int)
    if isinstance(value, dict):
        score, feedback = value.get("score"), value.get("feedback", "")
    elif not isinstance(value, (int, float)) and hasattr(value, "score"):
        score, feedback = value.score, getattr(value, "feedback", "") or ""
    if not isinstance(score, (int, float)) or not math.isfinite(score) or not 0.0 <= score <= 1.0:
        raise ValueError(f"{where} must return a score in [0, 1] (a number, or an object with .score and "
                         f".feedback), got {value!r}")
    return float(score), feedback if isinstance(feedback, str) else str(feedback)


def example_inputs(examples: Sequence[Any], where: str) -> list[str]:
    """The input field names the examples declare (`dspy.Example(...).with_inputs(...)`): the same
    for every example, or a ValueError naming the first that differs."""
    if not examples:
        raise ValueError(f"{where} is empty")
    inputs: list[str] = []
    for i, example in enumerate(examples):
        if not callable(getattr(example, "inputs", None)):
            raise ValueError(f"{where}[{i}] is {type(example).__name__}, not a dspy.Example")
        keys = sorted(getattr(example, "_input_keys", None) or ())
        if not keys:
            raise ValueError(f"{where}[{i}] declares no input fields: build it as dspy.Example(...).with_inputs("
                             f"{', '.join(repr(k) for k in list(example.keys())[:2])})")
        if inputs and keys != inputs:
            raise ValueError(f"{where}[{i}] has inputs {keys} but the examples before it have {inputs}: "
                             "every example needs the same with_inputs(...)")
        inputs = keys
    return inputs


def examples_to_cases(examples: Sequence[Any], split: str, inputs: Sequence[str]) -> list[Case]:
    """Examples as cases (`<split>-<n>`): the inputs as a JSON object, every other field as the
    expected JSON object; what the evaluator turns back into the same examples."""
    cases = []
    for i, example in enumerate(examples):
        data = example.toDict()
        try:
            text = canonical_json({k: data[k] for k in inputs})
            labels = {k: v for k, v in data.items() if k not in inputs}
            expected = canonical_json(labels) if labels else None
        except TypeError as exc:
            raise ValueError(f"{split}[{i}]: every field must be JSON data (text, numbers, lists, mappings): "
                             f"{exc}") from None
        cases.append(Case(f"{split}-{i:04d}", text, expected))
    return cases
