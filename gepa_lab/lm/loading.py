"""The program and the metric, from `module:attr` references (the config) or as objects (the
teleprompter), checked before anything is spent: the metric's signature, the program's inputs."""

from __future__ import annotations

import contextlib
import inspect
import pkgutil
from collections.abc import Callable, Sequence
from typing import Any


def load_object(spec: str, what: str) -> Any:
    """`package.module:attr` (or `package.module.attr`) -> the object; ValueError naming the fix."""
    if not isinstance(spec, str) or not spec.strip():
        raise ValueError(f"{what} must be '<module>:<attr>', got {spec!r}")
    try:
        return pkgutil.resolve_name(spec)
    except ImportError as exc:
        raise ValueError(f"{what} {spec!r}: cannot import {spec.partition(':')[0]} ({exc}); run from the directory "
                         "that holds it, or add that directory to PYTHONPATH") from exc
    except (AttributeError, ValueError) as exc:
        raise ValueError(f"{what} {spec!r}: {exc}") from None


def load_program(spec: Any) -> Any:
    """A fresh `dspy.Module`: a `dspy.Module` given as is (deep-copied), or one named by
    `<module>:<attr>` (an instance, deep-copied, or a factory returning one)."""
    import dspy

    obj = load_object(spec, "evaluator.program") if isinstance(spec, str) else spec
    if isinstance(obj, dspy.Module):
        return obj.deepcopy()
    if callable(obj) and isinstance(spec, str):
        made = obj()
        if isinstance(made, dspy.Module):
            return made
        raise ValueError(f"evaluator.program {spec!r} returned {type(made).__name__}, not a dspy.Module")
    raise ValueError(f"evaluator.program {spec!r} is {type(obj).__name__}, not a dspy.Module or a factory of one")


def load_metric(spec: Any) -> Callable[..., Any]:
    metric = load_object(spec, "evaluator.metric") if isinstance(spec, str) else spec
    if not callable(metric):
        raise ValueError(f"evaluator.metric {spec!r} is not callable")
    return metric  # type: ignore[no-any-return]


def metric_form(metric: Callable[..., Any], name: str) -> int:
    """5 when the metric takes dspy.GEPA's (gold, pred, trace, pred_name, pred_trace) (it is then
    also asked about each predictor), else 2 for `metric(gold, pred)`; a ValueError otherwise."""
    try:
        signature = inspect.signature(metric)
    except (TypeError, ValueError):  # no signature (a builtin): the short form
        return 2
    for form in (5, 2):
        with contextlib.suppress(TypeError):
            signature.bind(*[None] * form)
            return form
    raise ValueError(f"metric {name} takes {signature}; it must accept (gold, pred) or dspy.GEPA's "
                     "(gold, pred, trace, pred_name, pred_trace)")


def check_inputs(program: Any, inputs: Sequence[str], where: str = "evaluator.inputs") -> None:
    """The inputs must be what the program's `forward` takes: its required arguments, and no
    argument it does not know. A single predictor (`forward(**kwargs)`) takes its signature's input
    fields, all required (without a signature: not checked)."""
    # Read from the class (dspy warns whenever `forward` is looked up on an instance), without `self`.
    params = list(inspect.signature(type(program).forward).parameters.values())[1:]
    named = [p for p in params if p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)]
    takes, required = [p.name for p in named], [p.name for p in named if p.default is p.empty]
    if any(p.kind is p.VAR_KEYWORD for p in params) and not named:
        signature = getattr(program, "signature", None) or getattr(getattr(program, "predict", None), "signature", None)
        if signature is None:
            return
        takes = required = list(signature.input_fields)
    if [n for n in required if n not in inputs] or [n for n in inputs if n not in takes]:
        fix = ", ".join(n for n in takes if n in inputs or n in required)
        raise ValueError(f"{where} {list(inputs)} do not match {type(program).__name__}.forward({', '.join(takes)}): "
                         f"set {where} to [{fix}]")
