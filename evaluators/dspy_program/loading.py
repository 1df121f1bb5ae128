"""`module:attr` references from the config: the program (a `dspy.Module` instance or a factory
returning one) and the metric."""

from __future__ import annotations

import importlib
import inspect
from collections.abc import Callable
from typing import Any


def load_object(spec: str, what: str) -> Any:
    """`package.module:attr` (or `package.module.attr`) -> the object; ValueError naming the fix."""
    if not isinstance(spec, str) or not spec.strip():
        raise ValueError(f"{what} must be '<module>:<attr>', got {spec!r}")
    module_name, sep, attr = spec.partition(":")
    if not sep:
        module_name, _, attr = spec.rpartition(".")
    if not module_name or not attr:
        raise ValueError(f"{what} must be '<module>:<attr>', got {spec!r}")
    try:
        obj: Any = importlib.import_module(module_name)
    except ImportError as exc:
        raise ValueError(f"{what} {spec!r}: cannot import {module_name}: {exc}") from exc
    for part in attr.split("."):
        if not hasattr(obj, part):
            raise ValueError(f"{what} {spec!r}: {module_name} has no attribute {attr!r}")
        obj = getattr(obj, part)
    return obj


def load_program(spec: str) -> Any:
    """A fresh `dspy.Module`: the referenced instance (deep-copied) or what the factory returns."""
    import dspy

    obj = load_object(spec, "evaluator.program")
    if isinstance(obj, dspy.Module):
        return obj.deepcopy()
    if callable(obj):
        made = obj()
        if isinstance(made, dspy.Module):
            return made
        raise ValueError(f"evaluator.program {spec!r} returned {type(made).__name__}, not a dspy.Module")
    raise ValueError(f"evaluator.program {spec!r} is {type(obj).__name__}, not a dspy.Module or a factory of one")


def load_metric(spec: str) -> Callable[..., Any]:
    metric = load_object(spec, "evaluator.metric")
    if not callable(metric):
        raise ValueError(f"evaluator.metric {spec!r} is not callable")
    return metric  # type: ignore[no-any-return]


def metric_arity(metric: Callable[..., Any]) -> int:
    """How many positional arguments the metric takes, of dspy.GEPA's (gold, pred, trace,
    pred_name, pred_trace); at least 2."""
    try:
        params = list(inspect.signature(metric).parameters.values())
    except (TypeError, ValueError):
        return 2
    if any(p.kind is p.VAR_POSITIONAL for p in params):
        return 5
    positional = [p for p in params if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    return max(2, min(5, len(positional)))
