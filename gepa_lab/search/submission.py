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
from gepa_lab.core.submission import Evidence, Lineage, LineageSource, SubmissionRefused, SubmissionRequest


def submission_request(result: Result, dataset: Dataset, lineage: Lineage | None = None) -> dict[str, Any]:
    """The request a `RevisionSubmitter` receives: artifact, parent, source and holdout evidence."""
    lineage = lineage or Lineage()
    holdout = result.candidate_holdout
    evidence = Evidence(result.experiment_id, dataset.id, dataset.version, dict(result.dataset["digests"]),
                        result.baseline_holdout.score, holdout.score, result.holdout_delta, holdout.cases,
                        dict(holdout.objectives), result.links.get("mlflow_run_id"), result.seed_id,
                        result.links.get("mlflow_run_url"), result.links.get("mlflow_ui_command"))
    return SubmissionRequest(f"optimization/{result.algorithm}:{result.experiment_id}", artifact_dict(result.best),
                             lineage.action, lineage.parent_revision_id, evidence, lineage.artifact_name).to_dict()


def submit_winner(result: Result, dataset: Dataset, submitter: RevisionSubmitter | None) -> None:
    """Only an eligible winner is ever handed to the submitter; the outcome goes on the result.

    A refusal (`SubmissionRefused`: stale parent, ...) is an outcome, recorded and returned; any
    other failure is recorded and raised (the engine still writes the result first)."""
    if not result.promotion_eligible or submitter is None:
        result.submission_reason = result.promotion_reason
        return
    try:
        lineage = (submitter.lineage(artifact_dict(result.best), result.seed_id)
                   if isinstance(submitter, LineageSource) else None)
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
