"""Handing an eligible winner to a revision store (docs/design.md §4–5). Eligible is not live: the
store's gates and a named approver decide that."""

from __future__ import annotations

from typing import Any

from gepa_lab.core.artifacts import artifact_dict
from gepa_lab.core.contracts import Dataset, RevisionSubmitter
from gepa_lab.core.result import Result


def submission_request(result: Result, dataset: Dataset) -> dict[str, Any]:
    """The request a `RevisionSubmitter` receives: artifact, source and holdout evidence."""
    return {
        "source": f"optimization/{result.algorithm}:{result.experiment_id}",
        "artifact": artifact_dict(result.best),
        "evidence": {
            "experiment_id": result.experiment_id,
            "dataset_id": dataset.id,
            "dataset_version": dataset.version,
            "digests": result.dataset["digests"],
            "baseline_score": result.baseline_holdout.score,
            "candidate_score": result.candidate_holdout.score,
            "delta": result.holdout_delta,
            "case_count": result.candidate_holdout.cases,
            "objectives": dict(result.candidate_holdout.objectives),
            "mlflow_run_id": result.links.get("mlflow_run_id"),
        },
    }


def submit_winner(result: Result, dataset: Dataset, submitter: RevisionSubmitter | None) -> None:
    """Only an eligible winner is ever handed to the submitter; the outcome goes on the result."""
    if not result.promotion_eligible or submitter is None:
        result.submission_reason = result.promotion_reason
        return
    try:
        revision = submitter.submit(submission_request(result, dataset))
    except Exception as exc:
        result.submission_reason = f"revision submission failed: {type(exc).__name__}: {exc}"
        raise
    if not revision:
        result.submission_reason = "revision submission failed: submitter returned no revision"
        raise RuntimeError("revision submitter returned no revision")
    result.revision = dict(revision)
    result.submission_reason = f"revision submitted with status {revision.get('status')}"
