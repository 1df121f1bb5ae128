"""Artifact kinds: the text the search evolves. The engine only sees named components.

Artifacts are immutable values (list fields are stored as tuples), so the engine hands the same
object to evaluators, reflectors and trackers without copying it.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, fields, replace
from typing import Any, ClassVar, Protocol, runtime_checkable

MAX_ARTIFACT_CHARS = 65_536
_ID = "_gepa_lab_id"

ComponentValue = str | tuple[str, ...]


@runtime_checkable
class Artifact(Protocol):
    kind: ClassVar[str]
    # Mutable components in round-robin order.
    COMPONENTS: ClassVar[tuple[str, ...]]

    def to_dict(self) -> dict[str, Any]: ...

    def validate(self) -> None: ...


def _size(values: list[ComponentValue]) -> int:
    # Characters (code points), as a rune count would be.
    total = 0
    for v in values:
        total += sum(len(x) for x in v) if isinstance(v, (list, tuple)) else len(v)
    return total


def _freeze(artifact: Any, *names: str) -> None:
    """Store list fields as tuples: an evaluator cannot edit a pool member in place."""
    for name in names:
        value = getattr(artifact, name)
        if isinstance(value, list):
            object.__setattr__(artifact, name, tuple(value))


def _require(value: str, message: str) -> None:
    if not isinstance(value, str) or not value.strip():
        raise ValueError(message)


def _check_size(artifact: Any) -> None:
    if _size(list(artifact.to_dict().values())) > MAX_ARTIFACT_CHARS:
        raise ValueError(f"spec exceeds {MAX_ARTIFACT_CHARS} characters")


@dataclass(frozen=True)
class SkillSpec:
    """A reusable agent skill. The name is never mutated."""

    kind: ClassVar[str] = "skill"
    COMPONENTS: ClassVar[tuple[str, ...]] = ("steps", "pitfalls", "when_to_use", "description")

    name: str
    description: str
    when_to_use: str
    steps: tuple[str, ...] = ()
    pitfalls: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        _freeze(self, "steps", "pitfalls")

    def to_dict(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "description": self.description,
            "when_to_use": self.when_to_use,
            "steps": list(self.steps),
            "pitfalls": list(self.pitfalls),
        }

    def validate(self) -> None:
        _require(self.name, "name is required")
        _require(self.description, "description is required")
        _require(self.when_to_use, "when_to_use is required")
        for name in ("steps", "pitfalls"):
            value = getattr(self, name)
            if not isinstance(value, tuple) or not all(isinstance(v, str) for v in value):
                raise ValueError(f"{name} must be a list of strings")
        if not self.steps:
            raise ValueError("at least one step is required")
        _check_size(self)
        for i, step in enumerate(self.steps):
            if not isinstance(step, str) or not step.strip():
                raise ValueError(f"step {i} is empty")

    def render_markdown(self) -> str:
        """SKILL.md form (front matter + sections) for publishing and display."""
        one_line = " ".join(self.description.split())
        lines = ["---", f"name: {self.name}", f"description: {one_line}", "---", "",
                 f"# {self.name}", "", "## When to use", "", self.when_to_use.strip(), "", "## Steps", ""]
        lines += [f"{i}. {s}" for i, s in enumerate(self.steps, 1)]
        if self.pitfalls:
            lines += ["", "## Pitfalls", ""] + [f"- {p}" for p in self.pitfalls]
        return "\n".join(lines) + "\n"


@dataclass(frozen=True)
class PromptArtifact:
    kind: ClassVar[str] = "prompt"
    COMPONENTS: ClassVar[tuple[str, ...]] = ("text",)
    text: str

    def to_dict(self) -> dict[str, Any]:
        return {"text": self.text}

    def validate(self) -> None:
        _require(self.text, "text is required")
        _check_size(self)


@dataclass(frozen=True)
class ToolDescription:
    kind: ClassVar[str] = "tool_description"
    COMPONENTS: ClassVar[tuple[str, ...]] = ("description",)
    description: str
    name: str = ""

    def to_dict(self) -> dict[str, Any]:
        return {"name": self.name, "description": self.description}

    def validate(self) -> None:
        _require(self.description, "description is required")
        _check_size(self)


@dataclass(frozen=True)
class RoutingPolicy:
    kind: ClassVar[str] = "routing_policy"
    COMPONENTS: ClassVar[tuple[str, ...]] = ("policy",)
    policy: str

    def to_dict(self) -> dict[str, Any]:
        return {"policy": self.policy}

    def validate(self) -> None:
        _require(self.policy, "policy is required")
        _check_size(self)


KINDS: dict[str, type] = {
    cls.kind: cls for cls in (SkillSpec, PromptArtifact, ToolDescription, RoutingPolicy)
}


def artifact_dict(artifact: Artifact) -> dict[str, Any]:
    """Fields plus kind: the canonical serialised form."""
    return {"kind": artifact.kind, **artifact.to_dict()}


def artifact_id(artifact: Artifact) -> str:
    """Identity = sha256 of the canonical JSON (kind included, keys sorted). Computed once per
    object: artifacts are immutable."""
    cached = getattr(artifact, "__dict__", {}).get(_ID)
    if cached is not None:
        return str(cached)
    text = json.dumps(artifact_dict(artifact), sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    value = hashlib.sha256(text.encode("utf-8")).hexdigest()
    try:
        object.__setattr__(artifact, _ID, value)  # not a field: equality, repr and replace() ignore it
    except (AttributeError, TypeError):  # an artifact class without an instance dict
        pass
    return value


def artifact_from_dict(data: dict[str, Any], kind: str | None = None) -> Artifact:
    """Build an artifact from its dict form; a `kind` key (or argument) picks the class."""
    data = dict(data)
    kind = data.pop("kind", None) or kind or "skill"
    if kind not in KINDS:
        raise ValueError(f"unknown artifact kind {kind!r}; expected one of {sorted(KINDS)}")
    cls = KINDS[kind]
    allowed = {f.name for f in fields(cls)}
    unknown = set(data) - allowed
    if unknown:
        raise ValueError(f"{kind} artifact has unknown field(s) {sorted(unknown)}; allowed: {sorted(allowed)}")
    try:
        artifact = cls(**data)
    except TypeError as exc:
        raise ValueError(f"{kind} artifact is missing required fields: {exc}") from exc
    for f in fields(cls):
        value = getattr(artifact, f.name)
        is_list = f.name in ("steps", "pitfalls")
        if is_list and not (isinstance(value, tuple) and all(isinstance(v, str) for v in value)):
            raise ValueError(f"{kind} artifact field {f.name!r} must be a list of strings")
        if not is_list and not isinstance(value, str):
            raise ValueError(f"{kind} artifact field {f.name!r} must be a string")
    return artifact


def get_component(artifact: Artifact, component: str) -> ComponentValue:
    if component not in artifact.COMPONENTS:
        raise ValueError(f"unsupported component {component!r} for {artifact.kind}")
    value: ComponentValue = getattr(artifact, component)
    return value


def with_component(artifact: Artifact, component: str, value: ComponentValue) -> Artifact:
    if component not in artifact.COMPONENTS:
        raise ValueError(f"unsupported component {component!r} for {artifact.kind}")
    return replace(artifact, **{component: value})  # type: ignore[type-var]

