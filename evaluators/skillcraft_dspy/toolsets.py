"""The SkillCraft-sim tools as functions a real LM agent calls (`dspy.Tool` reads their names,
docstrings and type hints), with every call recorded the way the simulator records its own.

A family's tools are described in its family.yaml (`tools`: name, typed parameters, description)
and served by its world's `Tools` (the simulator's, with its seeded rate limits): the same
faults hit the real agent under the same seed, so a paired parent / child comparison meets the
same faults. `write_file` and `claim_done` are the generic tools; what the agent writes is kept
for grading.
"""

from __future__ import annotations

import inspect
import json
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from evaluators.skillcraft.family import ToolCall, ToolSpec, get_family
from evaluators.skillcraft.rng import Draws
from evaluators.skillcraft.tools import ToolReply, claim_done, write_file

CONVERT: dict[str, Callable[[Any], Any]] = {"str": str, "int": int, "float": float}
UNRECORDED = frozenset({"content"})  # what a written file holds is kept in `writes`, not in the call


@dataclass
class Toolset:
    """One agent run's tools and what happened through them."""

    functions: list[Callable[..., Any]] = field(default_factory=list)
    calls: list[ToolCall] = field(default_factory=list)
    writes: list[tuple[str, str]] = field(default_factory=list)  # (path, content), in order
    claimed: bool = False
    context_tokens: int = 0  # what the results added to the agent's context (the simulator's measure)

    def written(self, path: str) -> str | None:
        """The last content written to `path`, if any."""
        return next((content for where, content in reversed(self.writes) if where == path), None)

    def write_file(self, path: str, content: str) -> ToolReply:
        self.writes.append((path, content))
        return write_file(path, content)

    def claim_done(self) -> ToolReply:
        self.claimed = True
        return claim_done()


GENERIC = (ToolSpec("write_file", (("path", "str"), ("content", "str")), {},
                    "Write `content` (text, e.g. a JSON document) to the file `path`."),
           ToolSpec("claim_done", (), {}, "Declare the task complete, after the output file is written and checked."))


def tool_function(spec: ToolSpec, serve: Callable[..., ToolReply], toolset: Toolset) -> Callable[..., Any]:
    """A typed, documented function named like the tool: it converts its arguments to their
    declared types, calls `serve` with them in order and records the call in `toolset`."""
    signature = inspect.Signature(
        [inspect.Parameter(name, inspect.Parameter.POSITIONAL_OR_KEYWORD, annotation=kind,
                           default=spec.defaults.get(name, inspect.Parameter.empty)) for name, kind in spec.params],
        return_annotation="dict")

    def tool(*args: Any, **kwargs: Any) -> dict[str, Any]:
        bound = signature.bind(*args, **kwargs)
        bound.apply_defaults()
        values = {name: CONVERT[kind](bound.arguments[name]) for name, kind in spec.params}
        result, status, tokens = serve(*values.values())
        recorded = {k: v for k, v in values.items() if k not in UNRECORDED}
        toolset.calls.append(ToolCall(spec.name, json.dumps(recorded, sort_keys=True, separators=(",", ":")), status))
        toolset.context_tokens += tokens
        return result

    tool.__name__ = tool.__qualname__ = spec.name
    tool.__doc__ = spec.doc
    tool.__signature__ = signature  # type: ignore[attr-defined]
    tool.__annotations__ = {name: kind for name, kind in spec.params} | {"return": "dict"}
    return tool


def build_toolset(family: str, world: Any, task: Any, draws: Draws) -> Toolset:
    """The family's tools and the generic ones, for one agent run on `task`."""
    spec = get_family(family)
    api = spec.hooks.Tools(world, draws, float(getattr(task, "fault_rate", 0.0)))
    toolset = Toolset()
    toolset.functions = [tool_function(t, getattr(api, t.name), toolset) for t in spec.tools]
    toolset.functions += [tool_function(t, getattr(toolset, t.name), toolset) for t in GENERIC]
    return toolset
