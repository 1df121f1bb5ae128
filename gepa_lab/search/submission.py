"""Handing an eligible winner to a revision store (docs/design.md §4–5, docs/revisions.md). Eligible
is not live: the store's gates and a named approver decide that.

The request is a plain dict on the wire (the `RevisionSubmitter` protocol); its typed form
(`gepa_lab.core.submission.SubmissionRequest`) is built here and parsed back by stores.
"""

from __future__ import annotations

from typing import Any

from gepa_lab.core.artifacts import artifact_dict
from gepa_lab.core.contracts import Dataset, RevisionSubmitter
from gepa_lab.core.result import Result
from gepa_lab.core.submission import (
    Evidence,
    Lineage,
    LineageSource,
    SubmissionRefused,
    SubmissionRequest,
)


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
