"""Toy evaluators, reflectors and small builders shared by the core test suite.

Everything here is deterministic and in-process: no model, no network, no MLflow.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from gepa_lab import Case, Dataset, Evaluation, SkillSpec
from gepa_lab.core.artifacts import artifact_id

IMPROVED_STEP = "Check the improved result."
SEED_SCORE = 0.2
IMPROVED_SCORE = 0.8
COMPONENT_ORDER = ("steps", "pitfalls", "when_to_use", "description")


def seed_spec(**overrides: Any) -> SkillSpec:
    fields: dict[str, Any] = dict(
        name="Benchmark Skill",
        description="baseline reusable workflow",
        when_to_use="Use when a benchmark task needs a reusable workflow.",
        steps=["Read the task carefully.", "Produce the requested result."],
        pitfalls=[],
    )
    fields.update(overrides)
    return SkillSpec(**fields)


def cases(prefix: str, n: int, **kwargs: Any) -> list[Case]:
    return [Case(id=f"{prefix}-{i}", input=f"{prefix} input {i}", **kwargs) for i in range(1, n + 1)]


def dataset(feedback: int = 2, validation: int = 2, holdout: int = 2, **kwargs: Any) -> Dataset:
    return Dataset(
        id=kwargs.pop("id", "toy"),
        version=kwargs.pop("version", "v1"),
        feedback=cases("fb", feedback),
        validation=cases("val", validation),
        holdout=cases("ho", holdout),
    )


def is_improved(artifact: Any) -> bool:
    return IMPROVED_STEP in list(getattr(artifact, "steps", []) or [])


def toy_score(artifact: Any, case: Case, seed: int) -> float:
    """Seed-like specs score 0.2; any spec whose steps contain IMPROVED_STEP scores 0.8."""
    return IMPROVED_SCORE if is_improved(artifact) else SEED_SCORE


@dataclass
class Call:
    artifact: Any
    artifact_id: str
    case_ids: list[str]
    seed: int


@dataclass
class Batch:
    """Consecutive evaluated cases sharing (artifact, seed): one engine-level scoring batch,
    whether the engine called the evaluator once per batch or once per case."""

    artifact: Any
    artifact_id: str
    seed: int
    case_ids: list[str] = field(default_factory=list)


class ToyEvaluator:
    """Scores with `score_fn(artifact, case, seed)`; records every call.

    With `echo=True` the case input and expected value are echoed into output, feedback and
    trace, so anything that leaks from an evaluation into the reflector is visible.
    """

    def __init__(
        self,
        score_fn: Callable[[Any, Case, int], float] = toy_score,
        *,
        echo: bool = False,
        text: Callable[[Any, Case, int], dict[str, str]] | None = None,
        objectives: dict[str, float] | None = None,
    ):
        self.score_fn = score_fn
        self.echo = echo
        self.text = text
        self.objectives = objectives or {}
        self.calls: list[Call] = []

    def evaluate(self, artifact: Any, cases: list[Case], seed: int) -> list[Evaluation]:
        self.calls.append(Call(artifact, artifact_id(artifact), [c.id for c in cases], seed))
        out = []
        for case in cases:
            texts = {"output": "", "feedback": "", "trace": ""}
            if self.echo:
                echoed = f"{case.input} | {case.expected}"
                texts = {
                    "output": f"output for {echoed}",
                    "feedback": f"feedback for {echoed}",
                    "trace": f"trace for {echoed}",
                }
            if self.text is not None:
                texts.update(self.text(artifact, case, seed))
            out.append(
                Evaluation(
                    case_id=case.id,
                    score=float(self.score_fn(artifact, case, seed)),
                    objectives=dict(self.objectives),
                    **texts,
                )
            )
        return out

    @property
    def cases_evaluated(self) -> int:
        return sum(len(c.case_ids) for c in self.calls)

    def batches(self) -> list[Batch]:
        out: list[Batch] = []
        for call in self.calls:
            if out and out[-1].artifact_id == call.artifact_id and out[-1].seed == call.seed:
                out[-1].case_ids.extend(call.case_ids)
            else:
                out.append(Batch(call.artifact, call.artifact_id, call.seed, list(call.case_ids)))
        return out


@dataclass
class Reflection:
    artifact: Any
    component: str
    records: list[dict[str, Any]]
    evaluator_calls_before: int


class RecordingReflector:
    """Base: records what it is shown (deep-copied via JSON) and delegates to `reply`."""

    def __init__(self) -> None:
        self.seen: list[Reflection] = []
        self.evaluator: ToyEvaluator | None = None

    def reflect(self, artifact: Any, component: str, records: list[dict[str, Any]]) -> Any:
        self.seen.append(
            Reflection(
                artifact,
                component,
                json.loads(json.dumps(records)),
                len(self.evaluator.calls) if self.evaluator else -1,
            )
        )
        return self.reply(artifact, component, records)

    def reply(self, artifact: Any, component: str, records: list[dict[str, Any]]) -> Any:
        raise NotImplementedError

    @property
    def components(self) -> list[str]:
        return [r.component for r in self.seen]


def full_dict(artifact: Any) -> dict[str, Any]:
    d = artifact.to_dict()
    d.pop("kind", None)
    return d


def add_improved_step(artifact: Any, component: str) -> dict[str, Any]:
    """A scripted reply: the full artifact with IMPROVED_STEP appended to `steps`."""
    d = full_dict(artifact)
    d["steps"] = [*d["steps"], IMPROVED_STEP]
    return d


class ImprovingReflector(RecordingReflector):
    """Appends IMPROVED_STEP to `steps` and returns the full dict (whatever the component)."""

    def reply(self, artifact, component, records):
        d = full_dict(artifact)
        if IMPROVED_STEP not in d["steps"]:
            d["steps"] = list(d["steps"]) + [IMPROVED_STEP]
        d["rationale"] = "records show the result was never checked"
        return d


class IdentityReflector(RecordingReflector):
    def reply(self, artifact, component, records):
        return full_dict(artifact)


class TextReflector(RecordingReflector):
    """Returns a fixed reply (e.g. unparsable text)."""

    def __init__(self, text: Any):
        super().__init__()
        self.text = text

    def reply(self, artifact, component, records):
        return self.text


class ScriptedReflector(RecordingReflector):
    """Each call pops the next function (artifact, component) -> reply; the last one repeats."""

    def __init__(self, *steps: Callable[[Any, str], Any]):
        super().__init__()
        self.steps = list(steps)

    def reply(self, artifact, component, records):
        fn = self.steps.pop(0) if len(self.steps) > 1 else self.steps[0]
        return fn(artifact, component)


class RevisionReflector(RecordingReflector):
    """Makes a unique, valid change to exactly the selected component ("rev N" marker)."""

    def __init__(self) -> None:
        super().__init__()
        self.counter = 0

    def reply(self, artifact, component, records):
        self.counter += 1
        d = full_dict(artifact)
        marker = f"rev {self.counter}"
        if isinstance(d[component], list):
            d[component] = list(d[component]) + [marker]
        else:
            d[component] = f"{d[component]} ({marker})"
        return d


def revisions(artifact: Any) -> int:
    """How many RevisionReflector edits an artifact carries."""
    return json.dumps(full_dict(artifact)).count("rev ")


def attach(evaluator: ToyEvaluator, reflector: RecordingReflector) -> tuple[ToyEvaluator, RecordingReflector]:
    reflector.evaluator = evaluator
    return evaluator, reflector


def read_events(run_dir: Path) -> list[dict[str, Any]]:
    path = Path(run_dir) / "events.jsonl"
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def event_kinds(run_dir: Path, kinds: Iterable[str] | None = None) -> list[str]:
    wanted = set(kinds) if kinds is not None else None
    return [e["kind"] for e in read_events(run_dir) if wanted is None or e["kind"] in wanted]


SEARCH_EVENTS = ("candidate_accepted", "candidate_rejected", "candidate_duplicate", "reflection_rejected")
