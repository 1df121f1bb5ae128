"""Data contracts shared by the engine, evaluators, reflectors and submitters (docs/design.md §2).

Cases, datasets and evaluations are immutable values: the engine passes the same objects to
evaluators, reflectors and trackers without copying them.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any, Protocol, runtime_checkable

from gepa_lab.core.artifacts import Artifact, canonical_json, sha256_hex

SPLITS = ("feedback", "validation", "holdout")
MIN_SUBMISSION_CASES = 10


@dataclass(frozen=True)
class Case:
    """One task instance. `critical` and `metadata` never reach the reflector."""

    id: str
    input: str
    expected: str | None = None
    critical: bool = False
    metadata: Mapping[str, str] = field(default_factory=dict)

    def __post_init__(self) -> None:
        # A read-only view of a private copy: nobody can edit a case's metadata in place.
        if not isinstance(self.metadata, MappingProxyType):
            object.__setattr__(self, "metadata", MappingProxyType(dict(self.metadata)))

    def __reduce__(self) -> tuple[Any, ...]:
        # A mapping proxy does not pickle (process workers, deepcopy); rebuild from a plain dict.
        return (Case, (self.id, self.input, self.expected, self.critical, dict(self.metadata)))

    def to_dict(self) -> dict[str, Any]:
        return {"id": self.id, "input": self.input, "expected": self.expected, "critical": self.critical,
                "metadata": dict(self.metadata)}

    @classmethod
    def from_dict(cls, row: dict[str, Any]) -> Case:
        unknown = set(row) - {"id", "input", "expected", "critical", "metadata"}
        if unknown:
            raise ValueError(f"case has unknown field(s) {sorted(unknown)}; allowed: id, input, expected, critical, "
                             "metadata")
        for required in ("id", "input"):
            if row.get(required) is None:
                raise ValueError(f"case is missing {required!r} (every case needs 'id' and 'input')")
        expected, raw_input = row.get("expected"), row["input"]
        expected = expected if expected is None or isinstance(expected, str) else canonical_json(expected)
        raw_input = raw_input if isinstance(raw_input, str) else canonical_json(raw_input)
        metadata = row.get("metadata") or {}
        if not isinstance(metadata, dict):
            raise ValueError(f"case {row['id']!r}: metadata must be a mapping of strings")
        critical = row.get("critical")
        if critical is not None and not isinstance(critical, bool):  # bool("false") is True: only real booleans
            raise ValueError(f"case {row['id']!r}: critical must be true or false, got {critical!r}")
        return cls(str(row["id"]), raw_input, expected, bool(critical),
                   {str(k): str(v) for k, v in metadata.items() if v is not None})


def content_key(case: Case) -> str:
    """What a case asks: its input with spaces folded and case ignored (a JSON object or list in its
    canonical form). Id, expected answer and metadata are left out: the same input under another id,
    label or tag is still the same question (a copy, or a holdout case the search has seen)."""
    text = case.input
    if text.lstrip()[:1] in ("{", "["):
        try:
            text = canonical_json(json.loads(text))
        except (ValueError, RecursionError):  # not JSON after all: compared as text
            pass
    return " ".join(text.split()).casefold()


def split_digest(cases: Sequence[Case]) -> str:
    """sha256 of the canonical JSON list of a split's cases (order matters)."""
    return sha256_hex(canonical_json([c.to_dict() for c in cases]))


@dataclass(frozen=True)
class Dataset:
    """Three splits of cases (stored as tuples). Validate with `validate()` before use."""

    id: str
    version: str
    feedback: Sequence[Case]
    validation: Sequence[Case]
    holdout: Sequence[Case] = ()

    def __post_init__(self) -> None:
        for name in SPLITS:
            object.__setattr__(self, name, tuple(getattr(self, name)))

    def split(self, name: str) -> tuple[Case, ...]:
        return getattr(self, name)  # type: ignore[no-any-return]

    def digests(self) -> dict[str, str]:
        return {name: split_digest(self.split(name)) for name in SPLITS}

    def validate(self, submit: bool = False) -> None:
        """docs/design.md §2.2 checks, in the documented order; raises ValueError."""
        for present, missing in ((str(self.id).strip(), "dataset id is required"),
                                 (str(self.version).strip(), "dataset version is required"),
                                 (self.feedback, "feedback split must not be empty"),
                                 (self.validation, "validation split must not be empty")):
            if not present:
                raise ValueError(missing)
        if submit:
            for name in SPLITS:
                if len(self.split(name)) < MIN_SUBMISSION_CASES:
                    raise ValueError(f"submission requires at least {MIN_SUBMISSION_CASES} {name} cases "
                                     f"(got {len(self.split(name))})")
        self._check_ids()
        self._check_holdout_unseen()
        if submit and len({content_key(c) for c in self.holdout}) < MIN_SUBMISSION_CASES:
            raise ValueError(f"submission requires at least {MIN_SUBMISSION_CASES} distinct holdout cases (the "
                             f"holdout split has {len(self.holdout)} cases but {self.distinct('holdout')} distinct "
                             "inputs)")

    def _check_ids(self) -> None:
        """Case ids non-blank and unique across all splits."""
        seen: dict[str, str] = {}
        for name in SPLITS:
            for case in self.split(name):
                case_id = case.id.strip() if isinstance(case.id, str) else ""
                if not case_id:
                    raise ValueError(f"{name} split contains an empty case id")
                if case_id in seen:
                    if seen[case_id] == name:
                        raise ValueError(f"case id {case_id!r} appears twice in the {name} split")
                    raise ValueError(f"case id {case_id!r} appears in both {seen[case_id]} and {name} splits")
                seen[case_id] = name

    def _check_holdout_unseen(self) -> None:
        """A holdout case that Feedback or Validation already holds under another id would let the
        search see the data that judges it."""
        seen = {content_key(c): (name, c.id) for name in ("feedback", "validation") for c in self.split(name)}
        for case in self.holdout:
            if content_key(case) in seen:
                name, other = seen[content_key(case)]
                raise ValueError(f"holdout case {case.id!r} has the same input as {name} case {other!r}; a holdout "
                                 "must be unseen by the search: remove it from one of the splits")

    def distinct(self, name: str) -> int:
        """Distinct cases (by content) in a split."""
        return len({content_key(c) for c in self.split(name)})


class Objectives(dict[str, float]):
    """An evaluation's objectives: a dict (JSON, pickling and reading work as usual) that refuses
    every change in place, so nobody holding an evaluation can edit what others see."""

    def _read_only(self, *args: Any, **kwargs: Any) -> Any:
        raise TypeError("an Evaluation's objectives are read-only; build a new Evaluation instead")

    __setitem__ = __delitem__ = __ior__ = clear = pop = popitem = setdefault = update = _read_only  # type: ignore

    def __reduce__(self) -> tuple[Any, ...]:  # pickle through the constructor, not __setitem__
        return (Objectives, (dict(self),))


@dataclass(frozen=True)
class Evaluation:
    """One evaluator result for one case. Only `score` drives search and selection."""

    case_id: str
    score: float
    output: str = ""
    feedback: str = ""
    trace: str = ""
    objectives: dict[str, float] = field(default_factory=Objectives)

    def __post_init__(self) -> None:
        # A read-only private copy: the evaluator's own dict stays its own.
        if type(self.objectives) is not Objectives:
            object.__setattr__(self, "objectives", Objectives(self.objectives))

    def to_dict(self) -> dict[str, Any]:
        # Hand-written: dataclasses.asdict deep-copies recursively and shows up in profiles.
        return {"case_id": self.case_id, "score": self.score, "output": self.output, "feedback": self.feedback,
                "trace": self.trace, "objectives": dict(self.objectives)}

    @classmethod
    def from_dict(cls, row: dict[str, Any]) -> Evaluation:
        return cls(row["case_id"], float(row["score"]), row.get("output", ""), row.get("feedback", ""),
                   row.get("trace", ""), {k: float(v) for k, v in (row.get("objectives") or {}).items()})


@dataclass(frozen=True)
class Summary:
    """Mean score over cases; each objective averaged over the cases that reported it."""

    score: float = 0.0
    cases: int = 0
    objectives: dict[str, float] = field(default_factory=dict)

    @classmethod
    def of(cls, evaluations: Sequence[Evaluation]) -> Summary:
        if not evaluations:
            return cls()
        totals: dict[str, list[float]] = {}
        for ev in evaluations:
            for name, value in ev.objectives.items():
                totals.setdefault(name, []).append(value)
        return cls(math.fsum(ev.score for ev in evaluations) / len(evaluations), len(evaluations),
                   {k: math.fsum(v) / len(v) for k, v in sorted(totals.items())})

    def to_dict(self) -> dict[str, Any]:
        return {"score": self.score, "cases": self.cases, "objectives": dict(self.objectives)}


@runtime_checkable
class Evaluator(Protocol):
    """Scores an artifact on cases.

    Optional declarations (class attributes):
    - `retryable_exceptions`: exception types that are transient for this evaluator (retried
      like timeouts and connection errors; anything else undeclared is a bug and stops the run);
    - `evaluates_batches = True`: call `evaluate` once with every uncached case of a batch
      instead of once per case (e.g. batched LM calls);
    - `fingerprint() -> str`: names its configuration for the evaluation cache key;
    - `check_artifact(seed) -> None`: raises ValueError for an artifact it cannot evaluate (a kind
      it does not take), called on the seed before anything is spent;
    - `check_cases(cases) -> None`: raises ValueError for a case it could not evaluate (a missing
      field), called on every case before anything is spent.
    """

    def evaluate(self, artifact: Artifact, cases: list[Case], seed: int) -> list[Evaluation]:
        """Exactly one Evaluation per case; same (artifact, case, seed) gives the same result.
        Task failures are low scores with feedback, not exceptions."""
        ...


@runtime_checkable
class Reflector(Protocol):
    """Proposes a new value for one component from Feedback records.

    Optional: `retryable_exceptions` (as for evaluators), `total_cost_usd` (cumulative spend,
    counted as reflection cost) and `total_tokens` (cumulative LM tokens, `Result.reflection_tokens`)."""

    def reflect(self, artifact: Artifact, component: str, records: list[dict[str, Any]]) -> str | dict:
        """Raw model text, or a parsed object with the artifact's fields."""
        ...


@runtime_checkable
class RevisionSubmitter(Protocol):
    def submit(self, request: dict[str, Any]) -> dict[str, Any]:
        """Store an eligible winner as a revision; returns at least {'revision_id', 'status'}."""
        ...
