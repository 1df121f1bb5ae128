"""The family contract and the family registry.

A family is a subpackage `evaluators/skillcraft/<name>/`: code for what is specific to it (its
world and tools, task, agent moves and rubric: the `Hooks` below) and `family.yaml` for its
tables (behaviours, topic words, count nouns, the reference skill, the real agent's tool
descriptions, feedback notes), validated on load. Its seed skill and cases are its dataset
(datasets/skillcraft/<name>/). `get_family(name)` imports only that family, once. What every
family shares lives here: the value types, the scales, reading a case's task, and the shared
behaviours (behaviours.yaml). How to add a family: docs/skillcraft_sim.md §2.
"""

from __future__ import annotations

import json
from collections import OrderedDict
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from functools import cache
from importlib import import_module
from pathlib import Path
from types import SimpleNamespace
from typing import Any, Protocol, TypeVar, cast

import yaml

from evaluators.skillcraft.concepts import Concept, words
from gepa_lab import Case

T = TypeVar("T")
FAMILY_NAMES = ("catfacts", "pokemon", "recipe", "weather", "worldbank")
HERE = Path(__file__).resolve().parent
# Difficulty scales and the split layout every family follows (docs/skillcraft_sim.md §3).
SCALES = ("e1", "e2", "e3", "m1", "m2", "h1")
SCALE_LEVELS = {s: i for i, s in enumerate(SCALES)}
SPLIT_SCALES = {"feedback": ("e1", "e2"), "validation": ("e3", "m1"), "holdout": ("m2", "h1")}
CASES_PER_SCALE = 10


@dataclass(frozen=True)
class Behaviour:
    """One competence of the simulated agent, done right or wrong on each run.

    P(right) without guidance is `base - slope * level` (level 0 = e1 … 5 = h1); a loaded skill
    whose step or pitfall addresses `concept` lifts it towards `top - 0.002 * level`, scaled by
    adherence (docs/skillcraft_sim.md §4.1, §4.3)."""

    name: str
    summary: str
    base: float
    slope: float
    top: float
    concept: Concept


@dataclass(frozen=True)
class Check:
    """One rubric check of the written artifact against the ground truth."""

    name: str
    passed: bool
    critical: bool
    message: str = ""  # why it failed, in words (feedback text)


def best(values: dict[str, Any]) -> str | None:
    """The name with the highest number (the first listed wins a tie; values that are no number are passed over)."""
    return max((n for n, v in values.items() if isinstance(v, (int, float))), key=values.__getitem__, default=None)


def number(x: Any) -> bool:
    """An int or a float (a bool is neither, in an artifact)."""
    return isinstance(x, (int, float)) and not isinstance(x, bool)


def part(data: Any, key: str, kind: type[T]) -> T:
    """`data[key]` when `data` is a dict holding a `kind` (list, dict) there, else an empty one: how a
    rubric reads a part of an artifact of any shape."""
    value = data.get(key) if isinstance(data, dict) else None
    return value if isinstance(value, kind) else kind()


def first(items: list[Any], n: int) -> str:
    """The first `n` items, comma-separated, with "…" when there are more (rubric messages)."""
    return ", ".join(map(str, items[:n])) + (", …" if len(items) > n else "")


def absent(where: str, parts: str, message: str = "") -> list[Check]:
    """The failed checks `<where>.<part>` of something the artifact lacks (a part marked "!" is
    critical); the first one says it is missing."""
    return [Check(f"{where}.{p.rstrip('!')}", False, p.endswith("!"), "" if i else message or f"{where}: missing from "
                  "the artifact") for i, p in enumerate(parts.split())]


def memo(cache: dict[Any, Any], key: Any, make: Callable[[], T], size: int | None = None) -> T:
    """`cache[key]`, made on a miss (for what is pure: a reply, a parse); beyond `size` entries the oldest
    leaves. Evaluation threads share these caches: a sized one is an OrderedDict, whose `popitem` evicts
    in one step (deleting `next(iter(cache))` could raise while another thread inserts), and the value
    is returned as made or read, never looked up again after another thread may have evicted it."""
    value = cache.get(key, _MISS)
    if value is _MISS:
        value = cache[key] = make()
        if size is not None and len(cache) > size:
            cast("OrderedDict[Any, Any]", cache).popitem(last=False)
    return cast(T, value)


_MISS = object()


def same(name: str, got: Any, want: Any) -> Check:
    """The non-critical check that `got` equals `want`: "<name> is <got>, expected <want>"."""
    return Check(name, got == want, False, f"{name} is {got}, expected {want}")


@dataclass
class ToolCall:
    tool: str
    args: str  # canonical JSON of the arguments: identical calls compare equal
    status: str  # ok | empty | rate_limited | not_found | error | written


@dataclass
class Episode:
    """What one agent run produced (before grading)."""

    artifact: dict[str, Any] | None
    artifact_text: str
    calls: list[ToolCall]
    tokens: int
    latency_ms: float
    loaded: bool
    claim_done: bool
    agent_error: str = ""
    notes: list[str] = field(default_factory=list)  # extra feedback lines (errors, waste)
    missing_hint: str = ""  # why no artifact exists, when none does


@dataclass(frozen=True)
class Task:
    """What every family's task has, and all the generic machinery reads; a family's task
    subclasses it with its own fields (`common` fills these from the case)."""

    level: int  # 0 (e1) … 5 (h1)
    fault_rate: float
    output_file: str
    expected: dict[str, Any]  # the artifact a flawless agent writes
    task_tokens: int
    entities: frozenset[str]  # lower-case names the task involves (scope)
    task_words: frozenset[str]  # stems a relevant description should contain


def common(case: Case, params: dict[str, Any], default_output: str, truth: Callable[[], Any],
           errors: tuple[type[Exception], ...] = (ValueError,)) -> dict[str, Any]:
    """The `Task` fields that come straight from a case whose scale `reading_task` has checked; the
    expected artifact is the case's (JSON), or `truth()` for a case without one (one of `errors`
    becomes a ValueError naming the case)."""
    try:
        expected = json.loads(case.expected) if case.expected else truth()
    except errors as exc:
        raise ValueError(f"case {case.id!r}: expected is not JSON: {exc}") from exc
    return {"level": SCALE_LEVELS[case.metadata["scale"]], "fault_rate": float(params.get("fault_rate", 0.0)),
            "output_file": str(params.get("output_file", default_output)), "expected": expected,
            "task_tokens": len(case.input) // 4}


# The hooks a family's modules define: evaluators/skillcraft/<name>/<module>.py -> names.
HOOKS = {"world": ("World", "Tools"), "task": ("parse_task", "entity_names", "grade"), "agent": ("solve", "validate")}


class Hooks(Protocol):
    """The code of a family: what the modules of its package `evaluators/skillcraft/<name>/` define (HOOKS)."""

    def World(self, fixtures: dict[str, Any]) -> Any: ...  # noqa: N802 (a class)
    def Tools(self, world: Any, draws: Any, fault_rate: float) -> Any: ...  # noqa: N802 (a class)
    def parse_task(self, world: Any, case: Case) -> Any: ...  # a malformed case: ValueError naming it
    def entity_names(self, world: Any) -> frozenset[str]: ...  # names that scope a skill item
    def solve(self, run: Any, tools: Any, task: Any) -> dict[str, Any]: ...  # the agent's draft
    def validate(self, run: Any, draft: dict[str, Any], task: Any) -> None: ...  # a validating agent's fixes
    def grade(self, task: Any, artifact: dict[str, Any]) -> list[Check]: ...  # at least one critical


@dataclass(frozen=True)
class ToolSpec:
    """One tool as a real agent sees it: its name, typed parameters, defaults and description."""

    name: str
    params: tuple[tuple[str, str], ...]  # (name, "str" | "int" | "float"), in call order
    defaults: dict[str, Any]
    doc: str


@dataclass(frozen=True)
class FamilySpec:
    """Everything the generic simulator needs from one family: its tables and its hooks."""

    name: str
    behaviours: tuple[Behaviour, ...]
    topic: frozenset[str]  # stems whose presence in description / when_to_use make a skill look relevant
    cap_nouns: tuple[str, ...]  # nouns a copied count may cap ("collect exactly 17 dishes")
    reference_skill: dict[str, Any]  # hand-written, instructs every behaviour; calibration only
    tools: tuple[ToolSpec, ...]  # the real (dspy) agent's view of the family's tools
    lost: str  # what a skipped rate-limited call loses (feedback note)
    waste_note: str  # the feedback note on unneeded calls, "{n} … call(s) …"
    hooks: Hooks = field(repr=False, compare=False)

    def __reduce__(self) -> tuple[Any, ...]:  # a process worker loads the family itself
        return get_family, (self.name,)

    @property
    def seed_skill(self) -> dict[str, Any]:
        from evaluators.skillcraft.evaluator import default_data_dir

        return dict(json.loads((default_data_dir(self.name) / "seed_skill.json").read_text("utf-8")))

    def load_world(self, data_dir: Path) -> Any:
        """The world of `data_dir`/fixtures.json, or a one-line error naming the file."""
        path = Path(data_dir) / "fixtures.json"
        if not path.is_file():
            raise FileNotFoundError(f"SkillCraft-sim fixtures not found: {path} (set data_dir to a folder holding "
                                    f"{self.name}'s fixtures.json, or null for datasets/skillcraft/{self.name})")
        try:
            return self.hooks.World(json.loads(path.read_text(encoding="utf-8")))
        except (KeyError, TypeError, ValueError, IndexError, AttributeError) as exc:
            raise ValueError(f"{path} is not a {self.name} fixtures file ({type(exc).__name__}: {exc}); "
                             f"restore it from datasets/skillcraft/{self.name}/") from exc

    def parse_task(self, world: Any, case: Case) -> Any:
        return self.hooks.parse_task(world, case)

    def grade(self, task: Any, artifact: dict[str, Any] | None) -> list[Check]:
        return self.hooks.grade(task, artifact) if artifact is not None else [
            Check("artifact", False, True, f"no artifact: {task.output_file} was not written")]


@cache
def tables(name: str) -> dict[str, Any]:
    """The tables of a family's own code (`tables` in its family.yaml), read when its modules load."""
    return dict(_yaml(HERE / name / "family.yaml")["tables"])


def family_names() -> tuple[str, ...]:
    return FAMILY_NAMES


def known_family(name: str) -> str:
    """`name`, or a ValueError naming the known families."""
    if name not in FAMILY_NAMES:
        raise ValueError(f"unknown SkillCraft-sim family {name!r}; known: {', '.join(FAMILY_NAMES)}")
    return name


def get_family(name: str) -> FamilySpec:
    """The family's spec (its package imported now, once), or a ValueError naming the known ones."""
    return _load(known_family(name))


@cache
def _load(name: str) -> FamilySpec:
    path = HERE / name / "family.yaml"
    try:
        modules = {m: import_module(f"evaluators.skillcraft.{name}.{m}") for m in HOOKS}
        hooks = SimpleNamespace(**{h: getattr(modules[m], h) for m, names in HOOKS.items() for h in names})
        return _spec(name, _yaml(path), cast(Hooks, hooks))
    except (KeyError, TypeError, ValueError) as exc:
        raise ValueError(f"{path}: {exc}") from exc


def _yaml(path: Path) -> dict[str, Any]:
    data = yaml.safe_load(path.read_text(encoding="utf-8"))
    if not isinstance(data, dict):
        raise ValueError(f"{path} must hold a mapping")
    return data


def _text(value: Any, what: str) -> str:
    if not isinstance(value, str):
        raise TypeError(f"{what} must be text, got {value!r}")
    return value


def _behaviour(row: dict[str, Any], shared: dict[str, Any]) -> Behaviour:
    """A behaviour row: name, summary, p = [base, slope, top], key / support / acts / lapses (text);
    `unneeded: <name>` fills the rest from the shared unneeded template (behaviours.yaml)."""
    if "unneeded" in row:
        row = {**shared["unneeded"], **row, "name": row["unneeded"]}
    if extra := set(row) - {"name", "summary", "p", "key", "support", "acts", "lapses", "unneeded"}:
        raise KeyError(f"behaviour {row.get('name')!r} has unknown key(s) {sorted(extra)}")
    base, slope, top = (float(x) for x in row["p"])
    if not all(0.0 <= x <= 1.0 for x in (base, slope, top)):
        raise ValueError(f"behaviour {row['name']!r}: p = [base, slope, top] must lie in [0, 1]")
    concept = Concept.of(*(_text(row.get(k, ""), f"{row['name']}.{k}") for k in ("key", "support", "acts", "lapses")))
    return Behaviour(_text(row["name"], "name"), _text(row["summary"], "summary"), base, slope, top, concept)


def _spec(name: str, data: dict[str, Any], hooks: Hooks) -> FamilySpec:
    shared = _yaml(HERE / "behaviours.yaml")
    rows = [dict(shared[r]) if isinstance(r, str) else r for r in data["behaviours"]]
    behaviours = tuple(_behaviour(r, shared) for r in rows)
    if len({b.name for b in behaviours}) != len(behaviours):
        raise ValueError("behaviour names must be unique")
    tools = tuple(ToolSpec(t["name"], tuple((p[0], p[1]) for p in t["params"]),
                           {p[0]: p[2] for p in t["params"] if len(p) > 2},
                           " ".join(_text(t["doc"], f"{t['name']}.doc").split())) for t in data.get("tools", ()))
    return FamilySpec(name=name, behaviours=behaviours, topic=words(_text(data["topic"], "topic")),
                      cap_nouns=tuple(data.get("cap_nouns", ())), reference_skill=dict(data["reference_skill"]),
                      tools=tools, lost=_text(data["lost"], "lost"), waste_note=_text(data["waste_note"], "waste_note"),
                      hooks=hooks)


@contextmanager
def reading_task(case: Case, family: str) -> Iterator[Any]:
    """`with reading_task(case, "recipe") as params:` — the case's task parameters (JSON in
    `metadata["task"]`) of a case whose scale is known (else a ValueError naming it); a KeyError,
    TypeError, AttributeError or ValueError while reading them, in the block too, becomes one
    ValueError naming the case."""
    scale = case.metadata.get("scale", "")
    if scale not in SCALE_LEVELS:
        raise ValueError(f"case {case.id!r}: unknown {family} scale {scale!r} (expected one of {', '.join(SCALES)})")
    try:
        yield json.loads(case.metadata["task"])
    except (KeyError, TypeError, AttributeError, ValueError) as exc:
        raise ValueError(f"case {case.id!r}: metadata 'task' is not a {family} task: {exc}") from exc

