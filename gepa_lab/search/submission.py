"""Handing an eligible winner to a revision store (docs/design.md §4–5, docs/revisions.md). Eligible
is not live: the store's gates and a named approver decide that.

The request is a plain dict on the wire (the `RevisionSubmitter` protocol); `SubmissionRequest` is
its typed form, built here and parsed back by stores with `SubmissionRequest.from_dict`.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, field
from typing import Any, Protocol, runtime_checkable

from gepa_lab.core.artifacts import artifact_dict
from gepa_lab.core.contracts import Dataset, RevisionSubmitter
from gepa_lab.core.errors import GepaLabError
from gepa_lab.core.result import Result

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
        for name in ("mlflow_run_id", "seed_artifact_id"):
            if data.get(name) is not None and not isinstance(data.get(name), str):
                raise ValueError(f"submission field evidence.{name} must be a string or null")
        return cls(
            experiment_id=data["experiment_id"], dataset_id=data["dataset_id"],
            dataset_version=data["dataset_version"], digests=dict(digests),
            baseline_score=float(data["baseline_score"]), candidate_score=float(data["candidate_score"]),
            delta=float(data["delta"]), case_count=case_count,
            objectives={k: float(v) for k, v in objectives.items()},
            mlflow_run_id=data.get("mlflow_run_id"), seed_artifact_id=data.get("seed_artifact_id"),
        )


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
        parent = data.get("parent_revision_id")
        if parent is not None:
            _text(parent, "parent_revision_id")
        name = data.get("artifact_name")
        if name is not None:
            _text(name, "artifact_name")
        return cls(source=data["source"], artifact=dict(artifact), action=action, parent_revision_id=parent,
                   evidence=Evidence.from_dict(data.get("evidence")), artifact_name=name)


def _text(value: Any, name: str) -> None:
    if not isinstance(value, str) or not value.strip():
        raise ValueError(f"submission field {name} must be a non-empty string (got {value!r})")


def _is_number(value: Any) -> bool:
    return not isinstance(value, bool) and isinstance(value, (int, float)) and math.isfinite(value)


@runtime_checkable
class LineageSource(Protocol):
    """Optional for submitters: which revision the seed came from (a store knows, others don't)."""

    def lineage(self, artifact: dict[str, Any], seed_id: str) -> Lineage: ...


def submission_request(result: Result, dataset: Dataset, lineage: Lineage | None = None) -> dict[str, Any]:
    """The request a `RevisionSubmitter` receives: artifact, parent, source and holdout evidence."""
    lineage = lineage or Lineage()
    artifact = artifact_dict(result.best)
    return SubmissionRequest(
        source=f"optimization/{result.algorithm}:{result.experiment_id}",
        artifact=artifact,
        action=lineage.action,
        parent_revision_id=lineage.parent_revision_id,
        artifact_name=lineage.artifact_name,
        evidence=Evidence(
            experiment_id=result.experiment_id,
            dataset_id=dataset.id,
            dataset_version=dataset.version,
            digests=dict(result.dataset["digests"]),
            baseline_score=result.baseline_holdout.score,
            candidate_score=result.candidate_holdout.score,
            delta=result.holdout_delta,
            case_count=result.candidate_holdout.cases,
            objectives=dict(result.candidate_holdout.objectives),
            mlflow_run_id=result.links.get("mlflow_run_id"),
            seed_artifact_id=result.seed_id,
        ),
    ).to_dict()


def submit_winner(result: Result, dataset: Dataset, submitter: RevisionSubmitter | None) -> None:
    """Only an eligible winner is ever handed to the submitter; the outcome goes on the result.

    A refusal (`SubmissionRefused`: stale parent, ...) is an outcome, recorded and returned; any
    other failure is recorded and raised (the engine still writes the result first)."""
    if not result.promotion_eligible or submitter is None:
        result.submission_reason = result.promotion_reason
        return
    try:
        lineage = None
        if isinstance(submitter, LineageSource):
            lineage = submitter.lineage(artifact_dict(result.best), result.seed_id)
        revision = submitter.submit(submission_request(result, dataset, lineage))
    except SubmissionRefused as exc:
        result.submission_reason = f"revision submission refused: {exc}"
        return
    except Exception as exc:
        result.submission_reason = f"revision submission failed: {type(exc).__name__}: {exc}"
        raise
    if not revision:
        result.submission_reason = "revision submission failed: submitter returned no revision"
        raise RuntimeError("revision submitter returned no revision")
    result.revision = dict(revision)
    reasons = [str(r) for r in revision.get("reasons") or ()]
    result.submission_reason = f"revision submitted with status {revision.get('status')}" + (
        f" ({'; '.join(reasons)})" if reasons else "")
