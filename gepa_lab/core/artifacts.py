"""Artifact kinds: the text the search evolves. The engine only sees named components.

Artifacts are immutable values (list fields are stored as tuples), so the engine hands the same
object to evaluators, reflectors and trackers without copying it.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, fields, replace
from types import MappingProxyType
from typing import Any, ClassVar, Protocol, runtime_checkable

MAX_ARTIFACT_CHARS = 65_536
_ID = "_gepa_lab_id"

ComponentValue = str | tuple[str, ...]


@runtime_checkable
class Artifact(Protocol):
    kind: ClassVar[str]

    # Mutable components in round-robin order: a class attribute for fixed kinds, per instance
    # for `texts` (always read through the instance).
    @property
    def COMPONENTS(self) -> tuple[str, ...]: ...

    def to_dict(self) -> dict[str, Any]: ...

    def validate(self) -> None: ...


def _require(value: str, message: str) -> None:
    if not isinstance(value, str) or not value.strip():
        raise ValueError(message)


def _check_size(artifact: Any) -> None:
    # Characters (code points), as a rune count would be.
    size = sum(sum(map(len, v)) if isinstance(v, (list, tuple)) else len(v) for v in artifact.to_dict().values())
    if size > MAX_ARTIFACT_CHARS:
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
        for name in ("steps", "pitfalls"):  # stored as tuples: an evaluator cannot edit a pool member in place
            if isinstance(getattr(self, name), list):
                object.__setattr__(self, name, tuple(getattr(self, name)))

    def to_dict(self) -> dict[str, Any]:
        return {"name": self.name, "description": self.description, "when_to_use": self.when_to_use,
                "steps": list(self.steps), "pitfalls": list(self.pitfalls)}

    def validate(self) -> None:
        for name in ("name", "description", "when_to_use"):
            _require(getattr(self, name), f"{name} is required")
        for name in ("steps", "pitfalls"):
            value = getattr(self, name)
            if not isinstance(value, tuple) or not all(isinstance(v, str) for v in value):
                raise ValueError(f"{name} must be a list of strings")
        if not self.steps:
            raise ValueError("at least one step is required")
        _check_size(self)
        for i, step in enumerate(self.steps):
            _require(step, f"step {i} is empty")

    def render_markdown(self) -> str:
        """SKILL.md form (front matter + sections) for publishing and display."""
        one_line = " ".join(self.description.split())
        lines = ["---", f"name: {self.name}", f"description: {one_line}", "---", "",
                 f"# {self.name}", "", "## When to use", "", self.when_to_use.strip(), "", "## Steps", ""]
        lines += [f"{i}. {s}" for i, s in enumerate(self.steps, 1)]
        if self.pitfalls:
            lines += ["", "## Pitfalls", ""] + [f"- {p}" for p in self.pitfalls]
        return "\n".join(lines) + "\n"


class _OneText:
    """A kind whose one component is a required text."""

    COMPONENTS: ClassVar[tuple[str, ...]]

    def to_dict(self) -> dict[str, Any]:
        return {name: getattr(self, name) for name in self.COMPONENTS}

    def validate(self) -> None:
        _require(getattr(self, self.COMPONENTS[0]), f"{self.COMPONENTS[0]} is required")
        _check_size(self)


@dataclass(frozen=True)
class PromptArtifact(_OneText):
    kind: ClassVar[str] = "prompt"
    COMPONENTS: ClassVar[tuple[str, ...]] = ("text",)
    text: str


@dataclass(frozen=True)
class ToolDescription(_OneText):
    kind: ClassVar[str] = "tool_description"
    COMPONENTS: ClassVar[tuple[str, ...]] = ("description",)
    description: str
    name: str = ""

    def to_dict(self) -> dict[str, Any]:
        return {"name": self.name, "description": self.description}


@dataclass(frozen=True)
class RoutingPolicy(_OneText):
    kind: ClassVar[str] = "routing_policy"
    COMPONENTS: ClassVar[tuple[str, ...]] = ("policy",)
    policy: str


_RESERVED_NAMES = frozenset({"kind"})  # the canonical dict form holds `kind` beside the texts


@dataclass(frozen=True, eq=False)
class TextsArtifact:
    """Named texts, e.g. one instruction per DSPy predictor (name -> text). Every name is a
    component, in the mapping's order (the round-robin order).

    Built from a mapping or (name, text) pairs; stored as a tuple of pairs and exposed as a
    read-only mapping (`texts`). Equality and identity are those of the mapping: order only sets
    the round-robin.
    """

    kind: ClassVar[str] = "texts"
    pairs: tuple[tuple[str, str], ...]

    def __init__(self, texts: Mapping[str, str] | Iterable[tuple[str, str]] = ()):
        items = texts.items() if isinstance(texts, Mapping) else texts
        pairs = tuple((name, text) for name, text in items)
        for name, text in pairs:
            if not isinstance(name, str) or not name.strip():
                raise ValueError(f"texts artifact names must be non-empty strings, got {name!r}")
            if name in _RESERVED_NAMES:
                raise ValueError(f"texts artifact name {name!r} is reserved")
            if not isinstance(text, str):
                raise ValueError(f"texts artifact text {name!r} must be a string")
        names = [name for name, _ in pairs]
        if len(set(names)) != len(names):
            raise ValueError(f"texts artifact names must be unique, got {names}")
        object.__setattr__(self, "pairs", pairs)

    @property
    def COMPONENTS(self) -> tuple[str, ...]:
        return tuple(name for name, _ in self.pairs)

    @property
    def texts(self) -> Mapping[str, str]:
        return MappingProxyType(dict(self.pairs))

    def __eq__(self, other: object) -> bool:
        return isinstance(other, TextsArtifact) and dict(self.pairs) == dict(other.pairs)

    def __hash__(self) -> int:
        return hash(frozenset(self.pairs))

    def __reduce__(self) -> tuple[Any, ...]:
        return (TextsArtifact, (self.pairs,))

    def to_dict(self) -> dict[str, Any]:
        return dict(self.pairs)

    def validate(self) -> None:
        if not self.pairs:
            raise ValueError("a texts artifact needs at least one named text")
        for name, text in self.pairs:
            _require(text, f"text {name!r} is empty")
        _check_size(self)

    def text(self, name: str) -> str:
        return self.texts[name]

    def with_text(self, name: str, text: str) -> TextsArtifact:
        """A copy with one text replaced (order kept)."""
        if name not in self.COMPONENTS:
            raise ValueError(f"unsupported component {name!r} for texts")
        return TextsArtifact(tuple((n, text if n == name else t) for n, t in self.pairs))


KINDS: dict[str, type] = {cls.kind: cls for cls in (SkillSpec, PromptArtifact, ToolDescription, RoutingPolicy,
                                                    TextsArtifact)}


_CANONICAL = json.JSONEncoder(  # built once: json.dumps with options builds one per call
    sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def canonical_json(value: Any) -> str:
    """One byte-exact JSON form per value: the basis of every digest and identity hash."""
    return _CANONICAL.encode(value)


def sha256_hex(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def artifact_dict(artifact: Artifact) -> dict[str, Any]:
    """Fields plus kind: the canonical serialised form."""
    return {"kind": artifact.kind, **artifact.to_dict()}


def artifact_id(artifact: Artifact) -> str:
    """Identity = sha256 of the canonical JSON (kind included, keys sorted). Computed once per
    object: artifacts are immutable."""
    cached = getattr(artifact, "__dict__", {}).get(_ID)
    if cached is not None:
        return str(cached)
    value = sha256_hex(canonical_json(artifact_dict(artifact)))
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
    if cls is TextsArtifact:  # every key is a name (its constructor checks names and texts)
        return TextsArtifact(data)
    allowed = {f.name for f in fields(cls)}
    unknown = set(data) - allowed
    if unknown:
        raise ValueError(f"{kind} artifact has unknown field(s) {sorted(unknown)}; allowed: {sorted(allowed)}")
    try:
        artifact = cls(**data)
    except TypeError as exc:
        raise ValueError(f"{kind} artifact is missing required fields: {exc}") from exc
    for f in fields(cls):
        value, is_list = getattr(artifact, f.name), f.name in ("steps", "pitfalls")
        if not (isinstance(value, tuple) and all(isinstance(v, str) for v in value) if is_list
                else isinstance(value, str)):
            raise ValueError(f"{kind} artifact field {f.name!r} must be a {'list of strings' if is_list else 'string'}")
    return artifact


def get_component(artifact: Artifact, component: str) -> ComponentValue:
    if component not in artifact.COMPONENTS:
        raise ValueError(f"unsupported component {component!r} for {artifact.kind}")
    return artifact.text(component) if isinstance(artifact, TextsArtifact) else getattr(artifact, component)


def with_component(artifact: Artifact, component: str, value: ComponentValue) -> Artifact:
    if component not in artifact.COMPONENTS:
        raise ValueError(f"unsupported component {component!r} for {artifact.kind}")
    if isinstance(artifact, TextsArtifact):
        if not isinstance(value, str):
            raise ValueError(f"texts component {component!r} must be a string")
        return artifact.with_text(component, value)
    return replace(artifact, **{component: value})  # type: ignore[type-var]
