"""A feedback metric for the arithmetic word problems, in dspy.GEPA's form: a
`dspy.Prediction(score=..., feedback=...)` that says what went wrong.

score 1: the answer is exactly the expected number; 0.5: the right number wrapped in other text
(units, words); 0: a wrong number or none. The feedback names the error, how far off a wrong
number is, and the intended steps (from the case's `solution` metadata, which the metric sees and
the reflector does not).
"""

from __future__ import annotations

import re
from fractions import Fraction
from typing import Any

_NUMBER = re.compile(r"-?\d[\d,]*(?:\.\d+)?")


def parse_number(text: str) -> Fraction | None:
    """The last number in `text` (thousands separators allowed), exactly."""
    found = _NUMBER.findall(text or "")
    return Fraction(found[-1].replace(",", "")) if found else None  # the pattern admits only decimals


def _plain(value: Fraction) -> str:
    return str(value.numerator) if value.denominator == 1 else str(float(value))


def grade(answer: str, expected: str, solution: str = "") -> tuple[float, str]:
    want = parse_number(expected)
    if want is None:
        raise ValueError(f"expected answer {expected!r} holds no number")
    text = (answer or "").strip()
    got = parse_number(text)
    steps = f" The intended steps: {solution}" if solution else ""
    if got is None:
        return 0.0, (f"Wrong: the answer {text[:80]!r} holds no number; the answer must be the final number "
                     f"(expected {_plain(want)}).{steps}")
    if got != want:
        off = got - want
        return 0.0, (f"Wrong: answered {_plain(got)}, expected {_plain(want)} (off by {_plain(abs(off))}, "
                     f"{'too high' if off > 0 else 'too low'}). Check every intermediate result and which "
                     f"quantities are added, subtracted, multiplied or divided.{steps}")
    bare = re.fullmatch(rf"\$?\s*{_NUMBER.pattern}\s*", text) is not None
    if not bare:
        return 0.5, (f"Right number ({_plain(want)}) but the answer field holds extra text {text[:80]!r}; "
                     "the answer must be the number alone, without units or words.")
    return 1.0, f"Correct: {_plain(want)}."


def metric(example: Any, prediction: Any, trace: Any = None, pred_name: Any = None, pred_trace: Any = None) -> Any:
    import dspy

    score, feedback = grade(str(getattr(prediction, "answer", "") or ""), str(example.answer),
                            str(example.get("solution", "") or ""))
    return dspy.Prediction(score=score, feedback=feedback)
