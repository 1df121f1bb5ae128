"""The family contract: what every SkillCraft-sim task family provides, and the value types the
generic simulator, grading and feedback share with it.

A family is one subpackage `evaluators/skillcraft/<family>/` whose `__init__.py` builds one
`FamilySpec` named `FAMILY` (`family_spec`); `registry.py` lists it. The generic parts (skill
reading, behaviour probabilities, tool-call accounting, scoring, feedback, the evaluator, the
dataset generator) never import a family. What every family shares lives here too: the behaviours
the generic agent moves use (`shared_behaviours`), reading a case's task (`reading_task`,
`expected_of`) and the closing instruction of a task statement (`finish_instruction`); building
cases and fixture text is `casebook.py`. How to add one: docs/skillcraft_sim.md §2.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from types import ModuleType
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
GENERATOR_VERSION = "sim-v1"  # the dataset version: manifest, case metadata, case draws


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


# The behaviours every family has. The generic moves use two by name (`AgentRun.call_with_retry`:
# retry_transient_errors; `AgentRun.finish`: write_artifact) and every agent validates its draft.
RETRY_TRANSIENT_ERRORS = Behaviour(
    "retry_transient_errors", "retry rate-limited calls instead of skipping them", 0.55, 0.02, 0.997, Concept.of(
        "retry retries transient backoff",
        "rate limited limit wait again error errors fail failed attempt back off",
        acts="retry wait", lapses="skip ignore"))
VALIDATE_BEFORE_FINISHING = Behaviour(
    "validate_before_finishing", "check the artifact against the task before finishing", 0.3, 0.02, 0.95, Concept.of(
        "validate validation verify verification sanity reread",
        "check double review before finishing finish compare cross against",
        acts="validate verify check"))
WRITE_ARTIFACT = Behaviour(
    "write_artifact", "write the JSON to the required file with write_file", 0.97, 0.012, 0.999, Concept.of(
        "artifact persist",
        "write json output file save result",
        acts="write save"))


def skip_unneeded(name: str, summary: str, support: str, acts: str = "", base: float = 0.6) -> Behaviour:
    """A family's "no unneeded calls" behaviour: flat over the scales (it costs tokens, not
    checks), at most 0.97 even when instructed, addressed by "unneeded" / "unnecessary" or two of
    the family's own `support` words."""
    return Behaviour(name, summary, base, 0.0, 0.97, Concept.of("unneeded unnecessary", support, acts=acts))


def shared_behaviours(unneeded: Behaviour, *, then: tuple[Behaviour, ...] = ()) -> tuple[Behaviour, ...]:
    """The tail of every family's behaviour table, in its fixed order: retry, the family's
    unneeded-call behaviour (`skip_unneeded`), any behaviour of its own that goes `then`, validate,
    write. The order is part of the evaluator fingerprint (a hash of the table)."""
    return (RETRY_TRANSIENT_ERRORS, unneeded, *then, VALIDATE_BEFORE_FINISHING, WRITE_ARTIFACT)


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
    version: str = GENERATOR_VERSION  # the dataset version (manifest and case metadata)


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


def family_spec(name: str, load_world: Callable[[Path], Any], *, behaviours: ModuleType, task: ModuleType,
                agent: ModuleType, grade: ModuleType, skills: ModuleType, cases: ModuleType,
                tuned: ModuleType | None = None) -> FamilySpec:
    """A family's spec from its modules, by the names every family uses (docs/skillcraft_sim.md
    §2.3): behaviours.BEHAVIOURS, .TOPIC and optionally .CAP_NOUNS; task.parse_task and
    .entity_names; agent.simulate; grade.grade; skills.SEED_SKILL and .REFERENCE_SKILL;
    cases.build_dataset; tuned.VOCABULARY (optional)."""
    return FamilySpec(
        name=name,
        behaviours=behaviours.BEHAVIOURS,
        topic=behaviours.TOPIC,
        load_world=load_world,
        parse_task=task.parse_task,
        simulate=agent.simulate,
        grade=grade.grade,
        entity_names=task.entity_names,
        seed_skill=skills.SEED_SKILL,
        reference_skill=skills.REFERENCE_SKILL,
        build_dataset=cases.build_dataset,
        cap_nouns=getattr(behaviours, "CAP_NOUNS", ()),
        tuned=None if tuned is None else tuned.VOCABULARY,
    )


def scale_level(case: Case, family: str) -> tuple[str, int]:
    """(scale, level) of a case, or a ValueError naming the case."""
    scale = case.metadata.get("scale", "")
    if scale not in SCALE_LEVELS:
        raise ValueError(f"case {case.id!r}: unknown {family} scale {scale!r} (expected one of {', '.join(SCALES)})")
    return scale, SCALE_LEVELS[scale]


@contextmanager
def reading_task(case: Case, family: str) -> Iterator[Any]:
    """`with reading_task(case, "recipe") as params:` — the case's task parameters (JSON in
    `metadata["task"]`); a KeyError, TypeError, AttributeError or ValueError while reading them, in the block
    too, becomes one ValueError naming the case."""
    try:
        yield json.loads(case.metadata["task"])
    except (KeyError, TypeError, AttributeError, ValueError) as exc:
        raise ValueError(f"case {case.id!r}: metadata 'task' is not a {family} task: {exc}") from exc


def expected_of(case: Case, truth: Callable[[], Any],
                errors: tuple[type[Exception], ...] = (ValueError,)) -> Any:
    """The case's expected artifact (JSON), or `truth()` for a case without one; one of `errors`
    becomes a ValueError naming the case."""
    try:
        return json.loads(case.expected) if case.expected else truth()
    except errors as exc:
        raise ValueError(f"case {case.id!r}: expected is not JSON: {exc}") from exc


def finish_instruction(output_file: str) -> str:
    """The last line of every task statement (the shared tools write_file and claim_done)."""
    return f"Write the JSON to {output_file} with write_file, check it, then call claim_done."
