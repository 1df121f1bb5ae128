"""Handing an eligible winner to a revision store (DESIGN §4-5). Eligible is not live: the
store's gates and a named approver decide that."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Protocol

from gepa_lab.artifacts import artifact_dict
from gepa_lab.contracts import Dataset
from gepa_lab.promotion import PromotionDecision

if TYPE_CHECKING:
    from gepa_lab.engine import Result


class RevisionSubmitter(Protocol):
    def submit(self, request: dict[str, Any]) -> dict[str, Any]:
        """Store an eligible winner as a revision; returns at least {'revision_id', 'status'}."""
        ...


def submit_winner(result: Result, decision: PromotionDecision, dataset: Dataset,
                  submitter: RevisionSubmitter | None, mlflow_run_id: str | None = None) -> None:
    """Only an eligible winner is ever handed to the submitter."""
    if not decision.eligible or submitter is None:
        result.submission_reason = decision.reason
        return
    request = {
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
            "mlflow_run_id": mlflow_run_id,
        },
    }
    try:
        revision = submitter.submit(request)
    except Exception as exc:
        result.submission_reason = f"revision submission failed: {exc}"
        raise
    if not revision:
        result.submission_reason = "revision submission failed: submitter returned no revision"
        raise RuntimeError("revision submitter returned no revision")
    result.revision = dict(revision)
    result.submission_reason = f"revision submitted with status {revision.get('status')}"
