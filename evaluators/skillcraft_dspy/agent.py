"""The real agent: a `dspy.ReAct` over a family's tools, with the artifact rendered as its
instructions (SKILL.md for skills)."""

from __future__ import annotations

import itertools
from typing import Any

from gepa_lab import Artifact

PREAMBLE = ("You complete tasks by calling the tools. The skill below is your guide for this kind of task: "
            "follow it.")


def render_instructions(artifact: Artifact) -> str:
    """The agent's instructions: the preamble plus SKILL.md (skills) or one section per text."""
    markdown = getattr(artifact, "render_markdown", None)
    if callable(markdown):
        body = str(markdown())
    else:
        body = "\n\n".join(f"## {name}\n\n" + ("\n".join(value) if isinstance(value, (list, tuple)) else str(value))
                             for name, value in artifact.to_dict().items())
    return f"{PREAMBLE}\n\n{body.strip()}\n"


def make_agent(artifact: Artifact, tools: list[Any], max_iters: int) -> Any:
    import dspy

    signature = dspy.Signature({"task": (str, dspy.InputField(desc="the task statement")),
                                "summary": (str, dspy.OutputField(desc="one sentence: what was written, and where"))},
                               render_instructions(artifact))
    return dspy.ReAct(signature, tools=tools, max_iters=max_iters)


def trajectory_steps(trajectory: dict[str, Any]) -> list[tuple[str, str, Any]]:
    """(thought, tool name, args) per step of a ReAct trajectory."""
    steps = itertools.takewhile(lambda i: f"tool_name_{i}" in trajectory, itertools.count())
    return [(str(trajectory.get(f"thought_{i}", "")), str(trajectory[f"tool_name_{i}"]),
             trajectory.get(f"tool_args_{i}")) for i in steps]
