"""The submission contract: what a `RevisionSubmitter` receives (`SubmissionRequest`, on the wire
a plain dict), the evidence it carries, the lineage a store reports, and the refusal a store may
answer with. Built by `gepa_lab.search.submission`, parsed back by stores."""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, field
from typing import Any, Protocol, runtime_checkable

from gepa_lab.core.errors import GepaLabError

ACTIONS = ("create", "update")


class SubmissionRefused(GepaLabError):
    """The store understood the request and refused it (e.g. its parent is no longer the active
    revision). Nothing was stored; the run itself succeeded and its result is returned."""


@dataclass(frozen=True)
class Evidence:
    """Why the winner deserves review: the frozen data it was judged on and the holdout outcome."""

    experiment_id: str
    dataset_id: str
    dataset_version: str
    digests: dict[str, str]
    baseline_score: float  # holdout mean of the seed
    candidate_score: float  # holdout mean of the winner
    delta: float  # candidate - baseline
    case_count: int  # holdout cases
    objectives: dict[str, float] = field(default_factory=dict)  # winner's holdout objective means
    mlflow_run_id: str | None = None
    seed_artifact_id: str | None = None
    # The run's page and, for a local store, the `mlflow ui` command that serves it (the run's
    # `result.links`; neither holds a password).
    mlflow_run_url: str | None = None
    mlflow_ui_command: str | None = None

    @classmethod
    def from_dict(cls, data: Any) -> Evidence:
        if not isinstance(data, dict):
            raise ValueError("submission evidence must be a mapping")
        for name in ("experiment_id", "dataset_id", "dataset_version"):
            _text(data.get(name), f"evidence.{name}")
        digests = data.get("digests")
        if not isinstance(digests, dict) or not all(isinstance(k, str) and isinstance(v, str)
                                                     for k, v in digests.items()):
            raise ValueError("submission field evidence.digests must map split names to sha256 strings")
        objectives = data.get("objectives") or {}
        if not isinstance(objectives, dict) or not all(isinstance(k, str) and _is_number(v)
                                                        for k, v in objectives.items()):
            raise ValueError("submission field evidence.objectives must map names to numbers")
        case_count = data.get("case_count")
        if isinstance(case_count, bool) or not isinstance(case_count, int):
            raise ValueError(f"submission field evidence.case_count must be an integer (got {case_count!r})")
        for name in ("baseline_score", "candidate_score", "delta"):
            if not _is_number(data.get(name)):
                raise ValueError(f"submission field evidence.{name} must be a number (got {data.get(name)!r})")
        for name in ("mlflow_run_id", "seed_artifact_id", "mlflow_run_url", "mlflow_ui_command"):
            if data.get(name) is not None and not isinstance(data.get(name), str):
                raise ValueError(f"submission field evidence.{name} must be a string or null")
        return cls(data["experiment_id"], data["dataset_id"], data["dataset_version"], dict(digests),
                   float(data["baseline_score"]), float(data["candidate_score"]), float(data["delta"]), case_count,
                   {k: float(v) for k, v in objectives.items()}, data.get("mlflow_run_id"),
                   data.get("seed_artifact_id"), data.get("mlflow_run_url"), data.get("mlflow_ui_command"))


@dataclass(frozen=True)
class Lineage:
    """Which stored revision the run's seed came from. `parent_revision_id` None with action
    "create" means the store has no such artifact yet."""

    parent_revision_id: str | None = None
    action: str = "create"
    artifact_name: str | None = None  # the store's name for the artifact (kinds without a name field)


@dataclass(frozen=True)
class SubmissionRequest:
    source: str  # optimization/<algorithm>:<experiment id>
    artifact: dict[str, Any]  # kind + fields
    action: str  # "update", or "create" when the store has no such artifact
    parent_revision_id: str | None
    evidence: Evidence
    artifact_name: str | None = None  # None: the artifact's own `name`

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: Any) -> SubmissionRequest:
        """The typed request; a malformed one is a ValueError naming the field."""
        if not isinstance(data, dict):
            raise ValueError(f"a submission request must be a mapping, got {type(data).__name__}")
        _text(data.get("source"), "source")
        artifact = data.get("artifact")
        if not isinstance(artifact, dict) or not isinstance(artifact.get("kind"), str):
            raise ValueError("submission field artifact must be a mapping with a 'kind'")
        action = data.get("action", "create")
        if action not in ACTIONS:
            raise ValueError(f"submission field action must be one of {', '.join(ACTIONS)} (got {action!r})")
        for name in ("parent_revision_id", "artifact_name"):
            if data.get(name) is not None:
                _text(data[name], name)
        return cls(data["source"], dict(artifact), action, data.get("parent_revision_id"),
                   Evidence.from_dict(data.get("evidence")), data.get("artifact_name"))


def _text(value: Any, name: str) -> None:
    if not isinstance(value, str) or not value.strip():
        raise ValueError(f"submission field {name} must be a non-empty string (got {value!r})")


def _is_number(value: Any) -> bool:
    return not isinstance(value, bool) and isinstance(value, (int, float)) and math.isfinite(value)


@runtime_checkable
class LineageSource(Protocol):
    """Optional for submitters: which revision the seed came from (a store knows, others don't)."""

    def lineage(self, artifact: dict[str, Any], seed_id: str) -> Lineage: ...
