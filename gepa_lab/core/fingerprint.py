"""What names a component's configuration: part of the run identity and of the evaluation cache
key, so a changed evaluator or reflector never reuses another's results or resumes another's run."""

from __future__ import annotations

import inspect
import json
from typing import Any


def _value(value: Any) -> Any:
    """A parameter as JSON: plain values as they are, functions and classes by their qualified
    name (stable across processes); anything else is left out (None)."""
    if callable(value) and hasattr(value, "__qualname__"):
        return f"{getattr(value, '__module__', '')}.{value.__qualname__}"
    try:
        json.dumps(value, sort_keys=True)
    except (TypeError, ValueError):
        return None
    return value


def fingerprint(component: object) -> str:
    """`component.fingerprint()` when it defines one; else its class and the values of its
    constructor's parameters it keeps as attributes of the same name (a counter the component
    updates while it runs is not a parameter, so it never changes the fingerprint)."""
    custom = getattr(component, "fingerprint", None)
    if callable(custom):
        return str(custom())
    cls = type(component)
    name = f"{cls.__module__}.{cls.__qualname__}"
    try:
        params = inspect.signature(cls.__init__).parameters
    except (TypeError, ValueError):
        return name
    config = {p: _value(getattr(component, p)) for p in params if p != "self" and hasattr(component, p)}
    config = {k: v for k, v in config.items() if v is not None}
    return f"{name} {json.dumps(config, sort_keys=True)}" if config else name
