"""The managed directory agents load artifacts from: `<root>/<canonical name>/`.

Only approval, rollback and the sweeper write here (through `service`), each while holding the
artifact's lock. Files are written atomically (temp file + rename), so an agent never reads half
a file. Beside the artifact file, `revision.json` names the revision that is live.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from gepa_lab.core.artifacts import SkillSpec, TextsArtifact, ToolDescription, artifact_from_dict
from gepa_lab.runs.files import write_text_atomic

DEFAULT_PUBLISH_ROOT = "published"
REVISION_FILE = "revision.json"
FILE_NAMES = {"skill": "SKILL.md", "prompt": "PROMPT.md", "tool_description": "TOOL.md",
              "routing_policy": "POLICY.md", "texts": "TEXTS.json"}


def render(body: dict[str, Any]) -> tuple[str, str]:
    """(file name, text) of an artifact as published: SKILL.md with front matter for skills."""
    artifact = artifact_from_dict(body)
    file_name = FILE_NAMES[artifact.kind]
    if isinstance(artifact, SkillSpec):
        return file_name, artifact.render_markdown()
    if isinstance(artifact, ToolDescription):
        return file_name, f"---\nname: {' '.join(artifact.name.split())}\n---\n\n{artifact.description.rstrip()}\n"
    if isinstance(artifact, TextsArtifact):  # name -> text, e.g. one instruction per DSPy predictor
        return file_name, json.dumps(artifact.to_dict(), indent=2, ensure_ascii=False) + "\n"
    return file_name, getattr(artifact, artifact.COMPONENTS[0]).rstrip() + "\n"  # prompt, routing policy


Snapshot = dict[Path, str | None]


def restore(saved: Snapshot) -> None:
    for path, text in saved.items():
        if text is None:
            if path.exists():  # False too where a file stands in for a directory of the path
                path.unlink()
        else:
            write_text_atomic(path, text, durable=True)


def publish(path: Path, text: str, meta: dict[str, Any], saved: list[Snapshot]) -> None:
    """Write the artifact file and `revision.json` beside it, first adding what they hold now to
    `saved`, so that a failed decision can put it back."""
    files = {path: text, path.with_name(REVISION_FILE): json.dumps(meta, indent=2, sort_keys=True) + "\n"}
    saved.append({p: (p.read_text(encoding="utf-8") if p.is_file() else None) for p in files})
    for file, content in files.items():
        write_text_atomic(file, content, durable=True)
