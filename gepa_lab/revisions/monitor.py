"""Monitoring: re-evaluate an artifact's active revision against its parent on the frozen dataset
it was judged on, with the evaluator configuration of the run that produced it, and record the
result. It never changes which revision is active: a regression is reported, and rolling back
stays a human decision (`python -m gepa_lab.revisions rollback`).
"""

from __future__ import annotations

from contextlib import closing
from pathlib import Path
from statistics import fmean

from gepa_lab.core.artifacts import artifact_from_dict
from gepa_lab.core.contracts import SPLITS
from gepa_lab.core.errors import describe
from gepa_lab.core.fingerprint import fingerprint
from gepa_lab.revisions.errors import InvalidRequest, RevisionNotFound
from gepa_lab.revisions.store import MonitoringRow, RevisionRow, RevisionStore, utcnow
from gepa_lab.runs.record import load_experiment
from gepa_lab.search.evaluation import CaseRunner

MONITOR_ACTOR = "monitor"


def monitor(store: RevisionStore, artifact_name: str, run_dir: Path | str, *, split: str = "holdout",
            seed: int = 0, actor: str = MONITOR_ACTOR) -> MonitoringRow:
    """Score the active revision and its parent (paired: same cases, same seed) and record it."""
    if split not in SPLITS:
        raise InvalidRequest(f"split must be one of {', '.join(SPLITS)} (got {split!r})")
    if (active := store.active(artifact_name)) is None:
        raise RevisionNotFound(f"{artifact_name!r} has no active revision in {store.display_url}")
    try:
        experiment = load_experiment(run_dir)
    except (OSError, ValueError, KeyError) as exc:
        raise InvalidRequest(f"cannot read the run record in {run_dir}: {describe(exc)}") from exc
    evidence = active.evidence
    recorded = (evidence.get("dataset_id"), evidence.get("dataset_version"), evidence.get("digests"))
    if recorded != (experiment.dataset.id, experiment.dataset.version, experiment.digests):
        raise InvalidRequest(
            f"run {run_dir} used dataset {experiment.dataset.id} {experiment.dataset.version} with other split "
            f"digests than revision {active.id[:12]} was judged on ({evidence.get('dataset_id')} "
            f"{evidence.get('dataset_version')}); pass the run directory of a run on the same frozen data")
    if not (cases := experiment.dataset.split(split)):
        raise InvalidRequest(f"run {run_dir} has no {split} cases")
    parent = store.get(active.parent_revision_id) if active.parent_revision_id else None
    try:
        evaluator, settings = experiment.evaluator()
    except ValueError as exc:
        raise InvalidRequest(f"{exc}; monitor needs a run it can score again") from exc

    def mean(runner: CaseRunner, rev: RevisionRow) -> float:  # fmean: an fsum, divided by the count
        return fmean(ev.score for ev in runner.run(artifact_from_dict(rev.body), rev.artifact_hash, cases, seed))

    with closing(CaseRunner(evaluator, settings, None)) as runner:
        active_mean = mean(runner, active)
        parent_mean = None if parent is None else mean(runner, parent)
    with store.transaction() as session:
        row = MonitoringRow(
            at=utcnow(), revision_id=active.id, parent_revision_id=active.parent_revision_id, split=split, seed=seed,
            experiment_id=experiment.id, run_dir=str(Path(run_dir).resolve()), active_mean=active_mean,
            cases=len(cases), parent_mean=parent_mean, delta=None if parent_mean is None else active_mean - parent_mean,
            evaluator=fingerprint(evaluator), actor=actor)
        session.add(row)
        session.flush()
        detail = {**row.to_dict(), "at": None}  # the entry's own time is the audit row's
        store.audit_entry(session, artifact=active.artifact_name, revision_id=active.id, action="monitored",
                          actor=actor, detail={k: v for k, v in detail.items() if v is not None})
    return row
