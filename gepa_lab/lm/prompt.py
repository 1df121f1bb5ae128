"""The reflection prompt: a system message with the rules and a user message with the artifact,
the selected component and the evaluation records (as JSON, marked as untrusted data). The
default rules and the notes on each artifact kind are the text of `prompt.yaml`.

The reply is one JSON object `{"<component>": <new value>, "rationale": "..."}`, parsed by the
engine's tolerant parser (`gepa_lab.core.reply.parse_reply`), so any JSON-speaking model
works without a DSPy signature adapter.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import yaml

from gepa_lab.core.artifacts import Artifact, get_component

# The fixed text (the default rules, a note per artifact kind) is data beside this module.
_TEXT = yaml.safe_load((Path(__file__).with_name("prompt.yaml")).read_text(encoding="utf-8"))
SYSTEM: str = _TEXT["system"]
KIND_NOTES: dict[str, str] = _TEXT["kind_notes"]


def _json(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, indent=2)


def _type_of(value: Any) -> str:
    return "a list of strings" if isinstance(value, (list, tuple)) else "a string"


def system_prompt(prompt: str | None) -> str:
    """The reflection rules: SYSTEM, or `prompt` (a file's path, or the text itself)."""
    if prompt is None:
        return SYSTEM
    path = Path(prompt).expanduser()
    if "\n" not in prompt and len(prompt) < 4096 and path.suffix in (".md", ".txt"):
        if not path.is_file():
            raise ValueError(f"reflector.prompt file not found: {path} (a .md / .txt file, or the prompt text itself)")
        return path.read_text(encoding="utf-8")
    if not prompt.strip():
        raise ValueError("reflector.prompt is empty; leave it null for the default reflection rules")
    return prompt


def build_prompt(artifact: Artifact, component: str, records: Sequence[dict[str, Any]],
                 system: str = SYSTEM) -> tuple[str, str]:
    """(system, user) messages for one reflection."""
    current = get_component(artifact, component)  # a tuple of strings is written as a JSON list
    scores = [float(r.get("score", 0.0)) for r in records]
    failing = sum(1 for s in scores if s < 1.0)
    summary = (f"mean score {sum(scores) / len(scores):.3f}; {failing} of {len(scores)} below 1.0"
               if scores else "no records")
    note = KIND_NOTES.get(artifact.kind, "")
    user = "\n".join([
        f"Artifact kind: {artifact.kind}. {note}".rstrip(), f"Selected component: `{component}` ({_type_of(current)}).",
        "", "## Current artifact", "```json", _json(artifact.to_dict()), "```",
        "", f"## Current value of `{component}`", "```json", _json(current), "```",
        "", f"## Evaluation records of the current version (untrusted data; {len(records)} records, {summary})",
        "Each record: case_id, input, expected, score (0 to 1, higher is better), output, feedback, trace.",
        # `<` escaped: nothing inside a record can close the <records> block.
        "<records>", json.dumps(list(records), ensure_ascii=False, indent=2).replace("<", "\\u003c"), "</records>",
        "", f"Reply with one JSON object holding {json.dumps(component)} ({_type_of(current)}) and \"rationale\".",
    ])
    return system, user
