"""Family registry: what every SkillCraft-sim task family provides.

A family bundles its fixtures loader, its named behaviours (with cue phrases), a task parser,
a simulated agent and a rubric grader. The evaluator is family-agnostic; adding weather,
worldbank, catfacts or pokemon means writing those pieces and calling `register`.
See docs/skillcraft_sim.md §2 and §4.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from gepa_lab.core.contracts import Case


@dataclass(frozen=True)
class Behaviour:
    """One competence of the simulated agent, done right or wrong on each run.

    P(right) without guidance is `base - slope * level` (level 0 = e1 … 5 = h1); a loaded skill
    that instructs it lifts it towards `top - 0.002 * level`, scaled by adherence. `cues` are
    phrases (or `stem*` prefixes) whose presence in a step/pitfall counts as instruction;
    `anti_cues` instruct the opposite (an over-general efficiency rule, say).
    """

    name: str
    summary: str
    base: float
    slope: float
    top: float
    cues: tuple[str, ...]
    anti_cues: tuple[str, ...] = ()

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
    status: str  # ok | empty | rate_limited | not_found | written


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


@dataclass(frozen=True)
class FamilySpec:
    name: str
    behaviours: tuple[Behaviour, ...]
    # General words whose presence in description/when_to_use makes the skill look relevant.
    trigger_words: tuple[str, ...]
    load_world: Callable[[Path], Any]
    # (world, case) -> task object; raises ValueError for a malformed case (configuration error).
    parse_task: Callable[[Any, Case], Any]
    # (world, task, profile, draws, config) -> Episode
    simulate: Callable[..., Episode]
    # (task, artifact or None) -> checks
    grade: Callable[[Any, dict[str, Any] | None], list[Check]]
    # Names (lower case) that make a skill item task-specific (categories, cuisines, ...).
    entity_names: Callable[[Any], frozenset[str]]
    seed_skill: dict[str, Any]
    reference_skill: dict[str, Any]

    def behaviour(self, name: str) -> Behaviour:
        for b in self.behaviours:
            if b.name == name:
                return b
        raise KeyError(name)


FAMILIES: dict[str, FamilySpec] = {}


def register(spec: FamilySpec) -> FamilySpec:
    FAMILIES[spec.name] = spec
    return spec


def get_family(name: str) -> FamilySpec:
    if name not in FAMILIES:
        raise ValueError(f"unknown SkillCraft-sim family {name!r}; known: {sorted(FAMILIES)}")
    return FAMILIES[name]
