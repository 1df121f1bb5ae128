"""The family contract: what every SkillCraft-sim task family provides, and the value types the
generic simulator, grading and feedback share with it.

A family is one subpackage `evaluators/skillcraft/<family>/` whose `__init__.py` builds one
`FamilySpec` named `FAMILY`; `registry.py` lists it. The generic parts (skill reading,
behaviour probabilities, tool-call accounting, scoring, feedback, the evaluator, the dataset
generator) never import a family. How to add one: docs/skillcraft_sim.md §2.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from evaluators.skillcraft.concepts import Concept, words
from gepa_lab.core.contracts import Case

if TYPE_CHECKING:  # pragma: no cover
    from evaluators.skillcraft.agent import AgentConfig
    from evaluators.skillcraft.reflectors.vocabulary import TunedVocabulary
    from evaluators.skillcraft.rng import Draws
    from evaluators.skillcraft.skill import SkillProfile

# Difficulty scales and the fixed split layout every family follows (docs/skillcraft_sim.md §3).
SCALES = ("e1", "e2", "e3", "m1", "m2", "h1")
SCALE_LEVELS = {s: i for i, s in enumerate(SCALES)}
SPLIT_SCALES = {"feedback": ("e1", "e2"), "validation": ("e3", "m1"), "holdout": ("m2", "h1")}
CASES_PER_SCALE = 10
CRITICAL_CASES = {"m2": (2, 5, 8), "h1": (2, 5, 8)}  # case numbers rNN marked critical


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

    def baseline(self, level: int) -> float:
        return min(0.999, max(0.01, self.base - self.slope * level))


@dataclass(frozen=True)
class Check:
    """One rubric check of the written artifact against the ground truth."""

    name: str
    passed: bool
    critical: bool
    message: str = ""  # why it failed, in words (feedback text)


@dataclass
class ToolCall:
    tool: str
    args: str  # canonical JSON of the arguments: identical calls compare equal
    status: str  # ok | empty | rate_limited | not_found | error | written


@dataclass
class Episode:
    """What one simulated agent run produced (before grading)."""

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


class Task(Protocol):
    """What the generic machinery reads from a family's parsed task."""

    @property
    def level(self) -> int: ...  # 0 (e1) … 5 (h1)

    @property
    def entities(self) -> frozenset[str]: ...  # lower-case names the task involves (scope)

    @property
    def task_words(self) -> frozenset[str]: ...  # stems a relevant description should contain

    @property
    def task_tokens(self) -> int: ...

    @property
    def output_file(self) -> str: ...


@dataclass(frozen=True)
class DatasetFiles:
    """What a family's generator produces; `generate.py` adds the manifest and the seed skill."""

    fixtures_text: str  # the family's fixtures.json, byte-exact
    splits: dict[str, list[dict[str, Any]]]  # split -> case rows (Case.from_dict form)
    note: str  # one line for the manifest
    version: str = "sim-v1"  # the dataset version (manifest and case metadata)


def topic(text: str) -> frozenset[str]:
    """A family's topic words (stemmed), as written in its behaviours module."""
    return words(text)


@dataclass(frozen=True)
class FamilySpec:
    """Everything the generic simulator needs from one family."""

    name: str
    behaviours: tuple[Behaviour, ...]
    # Stems whose presence in description / when_to_use makes a skill look relevant (§4.2).
    topic: frozenset[str]
    load_world: Callable[[Path], Any]
    # (world, case) -> task; raises ValueError naming the case for a malformed one.
    parse_task: Callable[[Any, Case], Task]
    # (world, task, profile, draws, config) -> Episode
    simulate: Callable[[Any, Any, SkillProfile, Draws, AgentConfig], Episode]
    # (task, artifact or None) -> checks
    grade: Callable[[Any, dict[str, Any] | None], list[Check]]
    # Lower-case names that make a skill item task-specific (categories, cities, ...).
    entity_names: Callable[[Any], frozenset[str]]
    seed_skill: dict[str, Any]
    reference_skill: dict[str, Any]  # hand-written, instructs every behaviour; calibration only
    build_dataset: Callable[[], DatasetFiles]
    # Nouns a copied count may cap ("collect exactly 17 dishes"); empty: no count caps.
    cap_nouns: tuple[str, ...] = ()
    # The tuned reflector's vocabulary for this family (co-designed with it; optional).
    tuned: TunedVocabulary | None = None

    def behaviour(self, name: str) -> Behaviour:
        for b in self.behaviours:
            if b.name == name:
                return b
        raise KeyError(name)


def scale_level(case: Case, family: str) -> tuple[str, int]:
    """(scale, level) of a case, or a ValueError naming the case."""
    scale = case.metadata.get("scale", "")
    if scale not in SCALE_LEVELS:
        raise ValueError(f"case {case.id!r}: unknown {family} scale {scale!r} (expected one of {', '.join(SCALES)})")
    return scale, SCALE_LEVELS[scale]
