"""The governance rules: submit (gates), approve (publish), reject, rollback and the approval-timeout
sweeper. Each is one database transaction holding the artifact's lock, so decisions on one
artifact are serialised across processes.

Status moves:
    submit    -> pending_approval | pending_eval | rejected (gates)      (stale parent: refused)
    approve   pending_approval -> active, previous active -> archived     (stale parent: rejected)
    reject    pending_approval | pending_eval -> rejected
    rollback  archived -> active, current active -> archived
Anything else is an error that changes nothing.

`decided_by` / `decided_at` / `decision_comment` record the review decision and never change
after it; `status_by` / `status_at` record who moved the revision to its current status (an
archive names whoever's approval or rollback archived it). Approve, rollback and the sweeper
also update the MLflow prompt registry when given one (`registry`), after the commit: the store
is the source of truth, the registry a view `sync-registry` can rebuild.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import asdict, dataclass, replace
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

from sqlalchemy import func, select
from sqlalchemy.orm import Session

from gepa_lab.core.artifacts import KINDS, artifact_from_dict
from gepa_lab.core.contracts import canonical_json, sha256_hex
from gepa_lab.core.errors import describe
from gepa_lab.core.submission import SubmissionRequest
from gepa_lab.revisions import errors, gates, publish
from gepa_lab.revisions.registry import PromptRegistry
from gepa_lab.revisions.store import MAX_NAME, ArtifactRow, AuditRow, RevisionRow, RevisionStore, fmt_score, iso, utcnow

AUTO_EXPIRE = "auto-expire"  # the sweeper's actor
MAX_APPROVAL_TIMEOUT = timedelta(days=3650)  # longer is a typo (and `now - timeout` must stay a date)
GATES = "gates"  # the actor of automatic rejections


def check_actor(actor: Any, *, system: bool = False) -> str:
    if not isinstance(actor, str) or not actor.strip():
        raise errors.InvalidRequest("a decision needs a named actor (--actor NAME)")
    actor = actor.strip()
    if len(actor) > MAX_NAME:
        raise errors.InvalidRequest(f"actor name is {len(actor)} characters; the limit is {MAX_NAME}")
    if actor in (AUTO_EXPIRE, GATES) and not system:
        raise errors.InvalidRequest(f"actor {actor!r} is reserved for automatic decisions; use your own name")
    return actor


def _short(revision_id: str | None) -> str:
    return "none" if revision_id is None else revision_id[:12]


@dataclass(frozen=True)
class Submission:
    revision: RevisionRow
    resubmitted: bool  # True: the same artifact on the same parent was already stored
    note: str | None = None  # a resubmission of another run's revision: whose it is

    def to_dict(self) -> dict[str, Any]:
        rev = self.revision
        reasons = rev.reasons if rev.status == "pending_eval" or rev.decided_by == GATES else []
        if rev.status == "rejected" and rev.decided_by != GATES:
            reasons = [rev.status_reason or f"rejected by {rev.decided_by}"]
        return {"revision_id": rev.id, "status": rev.status, "artifact_name": rev.artifact_name,
                "version": rev.version, "parent_revision_id": rev.parent_revision_id, "action": rev.action,
                "reasons": ([self.note] if self.note else []) + reasons, "resubmitted": self.resubmitted}


@dataclass(frozen=True)
class Decision:
    revision: RevisionRow
    previous: str | None = None  # the revision archived by this decision
    published: Path | None = None
    registered: str | None = None  # the prompt registry's URI of the now active version

    def to_dict(self) -> dict[str, Any]:
        return {"revision": self.revision.to_dict(), "archived": self.previous,
                "published": None if self.published is None else str(self.published), "registered": self.registered}


# -- submit -------------------------------------------------------------------------------------
def _store_name(request: SubmissionRequest, fallback: str | None) -> str:
    own = request.artifact.get("name")
    name = request.artifact_name or (own if isinstance(own, str) and own.strip() else None) or fallback
    if not name or not name.strip():
        raise errors.InvalidRequest(f"a {request.artifact.get('kind')} artifact has no name to store it under; set "
                             "submitter.artifact_name=<name>")
    if len(name) > MAX_NAME:
        raise errors.InvalidRequest(f"artifact name is {len(name)} characters; the store's limit is {MAX_NAME}")
    return name


def submit(store: RevisionStore, request: SubmissionRequest, *, artifact_name: str | None = None,
           min_holdout_score: float = gates.DEFAULT_MIN_HOLDOUT_SCORE) -> Submission:
    """Gate and store one eligible winner. Refuses (nothing stored) malformed evidence and a stale
    parent; returns the existing revision for the same artifact on the same parent."""
    if problems := gates.check_evidence(request.evidence):
        raise errors.InvalidRequest("submission refused: " + "; ".join(problems))
    body = request.artifact
    if body.get("kind") not in KINDS:
        raise errors.InvalidRequest(f"unknown artifact kind {body.get('kind')!r}; expected one of {sorted(KINDS)}")
    try:
        artifact_from_dict(body)  # shape only (unknown fields, types); content is the SpecGate's job
    except ValueError as exc:
        raise errors.InvalidRequest(f"submission refused: {exc}") from exc
    if request.action == "create" and request.parent_revision_id is not None:
        raise errors.InvalidRequest("a create submission cannot name a parent revision")
    name = _store_name(request, artifact_name)
    kind = str(body["kind"])
    digest = sha256_hex(canonical_json(body))
    parent_key = request.parent_revision_id or ""
    with store.transaction() as session:
        if request.parent_revision_id is None:  # a create: its name checks see every committed name
            store.lock_names(session)
        artifact = store.ensure_artifact(session, name, kind)
        if artifact.kind != kind:
            raise errors.InvalidRequest(f"artifact {name!r} is a {artifact.kind}; a {kind} cannot revise it")
        if (existing := session.scalar(select(RevisionRow).filter_by(
                artifact_name=name, parent_key=parent_key, artifact_hash=digest))) is not None:
            return _resubmission(store, session, existing, request)
        if request.parent_revision_id is not None:
            if (parent := session.get(RevisionRow, request.parent_revision_id)) is None:
                raise errors.InvalidRequest(f"parent revision {request.parent_revision_id!r} is not in the store")
            _check_belongs(parent, name)
        _check_parent(artifact, request.parent_revision_id)
        # The names that exist for the duplicate checks: artifacts with any revision not rejected.
        existing_names = sorted(session.scalars(select(RevisionRow.artifact_name).distinct().where(
            RevisionRow.status != "rejected", RevisionRow.artifact_name != name)))
        version = (session.scalar(select(func.max(RevisionRow.version)).filter_by(artifact_name=name)) or 0) + 1
        verdict = gates.run_gates(body, name, request.action, request.evidence, existing_names, min_holdout_score)
        moment = utcnow()
        rejected = verdict.status == "rejected"
        row = RevisionRow(
            id=uuid.uuid4().hex, artifact_name=name, version=version, kind=kind, artifact_hash=digest, body=body,
            parent_revision_id=request.parent_revision_id, parent_key=parent_key, source=request.source,
            action="update" if request.parent_revision_id else "create", evidence=asdict(request.evidence),
            gates=[asdict(g) for g in verdict.results], submitted_at=moment, status=verdict.status,
            status_reason="; ".join(verdict.reasons) if verdict.status != "pending_approval" else "",
            decided_by=GATES if rejected else None, decided_at=moment if rejected else None,
            status_by=GATES if rejected else request.source, status_at=moment)
        session.add(row)
        session.flush()
        store.audit_entry(session, artifact=name, revision_id=row.id, action="submitted", actor=request.source,
                          detail={"status": row.status, "version": row.version,
                                  "parent_revision_id": row.parent_revision_id, "reasons": verdict.reasons})
        return Submission(row, False)


def _resubmission(store: RevisionStore, session: Session, prior: RevisionRow,
                  request: SubmissionRequest) -> Submission:
    """The same artifact on the same parent is stored already. The run that submitted it (a retried
    submission) gets it back. Another run's identical winner is never reported as its own: a
    pending revision comes back with a note naming its submission; a decided one is refused,
    saying what became of it."""
    own = prior.evidence.get("experiment_id") == request.evidence.experiment_id
    if not own and not prior.status.startswith("pending"):
        raise errors.AlreadySubmitted(f"this run's winner was already submitted as revision {_short(prior.id)} "
                               f"({prior.artifact_name} v{prior.version}) by {prior.source} at "
                               f"{iso(prior.submitted_at)}, and {_fate(prior)}; nothing new was stored")
    store.audit_entry(session, artifact=prior.artifact_name, revision_id=prior.id, action="resubmitted",
                      actor=request.source, detail={"status": prior.status,
                                                    "experiment_id": request.evidence.experiment_id})
    note = None if own else (
        f"resubmission: identical to revision {_short(prior.id)} (v{prior.version}) submitted by {prior.source} at "
        f"{iso(prior.submitted_at)}; its evidence (holdout {fmt_score(prior.evidence.get('candidate_score'))}, delta "
        f"{fmt_score(prior.evidence.get('delta'), signed=True)}) is that run's, not this one's")
    return Submission(prior, True, note)


def _fate(prior: RevisionRow) -> str:
    """What happened to a decided revision, in words, with who and when."""
    decided = f"{prior.decided_by} at {iso(prior.decided_at)}"
    if prior.status == "rejected":
        why = prior.decision_comment or prior.status_reason
        return f"was rejected by {decided}" + (f": {why}" if why else " (no reason given)")
    if prior.status == "active":
        return f"is the active revision (approved by {decided})"
    return (f"was approved by {decided}, then archived by {prior.status_by} at {iso(prior.status_at)} "
            f"({prior.status_reason}); to bring it back: python -m gepa_lab.revisions rollback "
            f"{prior.artifact_name!r} --to {_short(prior.id)} --actor NAME")


def _check_belongs(row: RevisionRow, name: str) -> None:
    if row.artifact_name != name:
        raise errors.InvalidRequest(f"revision {_short(row.id)} belongs to {row.artifact_name!r}, not {name!r}")


def _check_parent(artifact: ArtifactRow, parent_id: str | None) -> None:
    active = artifact.active_revision_id
    if parent_id == active:
        return
    name = artifact.name
    if parent_id is None:
        raise errors.StaleParent(f"artifact {name!r} already has an active revision ({_short(active)}) and the run's "
                          f"seed is not it; start the run from it (seed.from_store={name!r})")
    raise errors.StaleParent(f"parent revision {_short(parent_id)} of {name!r} is no longer active (active: "
                      f"{_short(active)}); re-run from the active revision (seed.from_store={name!r})")


# -- decisions ----------------------------------------------------------------------------------
def _locked(session: Session, store: RevisionStore, ref: str) -> tuple[RevisionRow, ArtifactRow]:
    row = store.find(session, ref)
    artifact = store.lock_artifact(session, row.artifact_name)
    assert artifact is not None  # every revision's artifact row exists (foreign key)
    session.refresh(row)  # read again under the lock (another process may just have decided it)
    return row, artifact


def _already(row: RevisionRow, verb: str) -> errors.AlreadyDecided:
    by = f" by {row.status_by} at {iso(row.status_at)}" if row.status_by else ""
    why = f" ({row.status_reason})" if row.status_reason else ""
    return errors.AlreadyDecided(f"revision {_short(row.id)} ({row.artifact_name} v{row.version}) is already "
                          f"{row.status}{by}{why}; it cannot be {verb}")


def _move(session: Session, store: RevisionStore, row: RevisionRow, status: str, actor: str, action: str,
          comment: str | None = None, reason: str = "", *, decision: bool = False,
          detail: dict[str, Any] | None = None) -> None:
    """Put `row` in `status` and audit it as `action`. A `decision` (approve, reject) is also the
    review decision, set once: archive and rollback never touch it."""
    row.status, row.status_by, row.status_at, row.status_reason = status, actor, utcnow(), reason
    if decision:
        row.decided_by, row.decided_at, row.decision_comment = actor, row.status_at, comment
    store.audit_entry(session, artifact=row.artifact_name, revision_id=row.id, action=action, actor=actor,
                      comment=comment, detail=detail)


def _activate(session: Session, store: RevisionStore, row: RevisionRow, artifact: ArtifactRow, actor: str,
              comment: str | None, publish_root: Path | str, saved: list[publish.Snapshot], action: str,
              detail: dict[str, Any]) -> Decision:
    """Archive the current active revision, make `row` active, move the pointer, publish, audit."""
    file_name, text = publish.render(row.body)
    # Recorded in the store: must not depend on the cwd. The SpecGate refused names without letters or
    # digits, so every revision that can become active has a directory name.
    path = Path(publish_root).resolve() / gates.canonical_name(artifact.name) / file_name
    status = row.status  # what it stays if publishing fails
    if (previous := store.active_row(session, artifact.name)) is not None:
        _move(session, store, previous, "archived", actor, "archived", comment,
              f"replaced by {_short(row.id)} (v{row.version})", detail={"replaced_by": row.id})
        session.flush()  # archived before the new one is active: at most one active row at any time
    archived = previous.id if previous else None
    # A rollback keeps the approver as the approver.
    reason = "" if action == "approved" else "re-activated by rollback" + (
        f", replacing {_short(previous.id)} (v{previous.version})" if previous else "")
    _move(session, store, row, "active", actor, action, comment, reason, decision=action == "approved",
          detail={**detail, "archived": archived, "published": str(path)})
    row.published_path = str(path)
    artifact.active_revision_id = row.id
    artifact.updated_at = utcnow()
    session.flush()  # constraint violations surface before anything is written to disk
    try:
        publish.publish(path, text, {
            "revision_id": row.id, "artifact": artifact.name, "version": row.version, "kind": row.kind,
            "artifact_hash": row.artifact_hash, "decided_by": row.decided_by, "decided_at": iso(row.decided_at),
            "activated_by": actor, "activated_at": iso(row.status_at), "source": row.source}, saved)
    except OSError as exc:  # raised inside the transaction: it rolls back, `_publishing` puts the files back
        raise errors.PublishFailed(
            f"cannot publish {artifact.name} v{row.version} ({_short(row.id)}) in {Path(publish_root).resolve()} "
            f"({describe(exc)}); nothing changed, the revision is still {status}: make that a writable directory "
            "or pass --publish-dir DIR, then run the command again") from exc
    return Decision(row, archived, path)


@contextmanager
def _publishing(store: RevisionStore) -> Iterator[tuple[Session, list[publish.Snapshot]]]:
    """One transaction, and the list `_activate` adds a snapshot of the files it publishes to. If
    anything fails after that (the commit included), the previous files are put back."""
    saved: list[publish.Snapshot] = []
    try:
        with store.transaction() as session:
            yield session, saved
    except BaseException:
        for snap in saved:
            publish.restore(snap)
        raise


def _mirror(registry: PromptRegistry | None, decision: Decision) -> Decision:
    """After the commit: point the registry's alias at the now active revision."""
    if registry is None:
        return decision
    r = decision.revision
    try:
        return replace(decision, registered=registry.publish(r))
    except Exception as exc:  # any registry failure: the decision stands, the view is behind
        raise errors.RegistryNotUpdated(
            f"{r.artifact_name} v{r.version} ({_short(r.id)}) is active and published, but the MLflow prompt "
            f"registry at {registry.uri} was not updated ({describe(exc)}); bring it in line with: python -m "
            "gepa_lab.revisions sync-registry", decision) from exc


def approve(store: RevisionStore, ref: str, actor: str, comment: str | None = None, *,
            publish_root: Path | str = publish.DEFAULT_PUBLISH_ROOT, system: bool = False,
            registry: PromptRegistry | None = None) -> Decision:
    """Publish a pending_approval revision. A stale parent rejects it (committed and audited) and
    raises StaleParent."""
    actor = check_actor(actor, system=system)
    stale = None
    with _publishing(store) as (session, saved):
        row, artifact = _locked(session, store, ref)
        if row.status == "pending_eval":
            raise errors.RevisionError(f"revision {_short(row.id)} is pending_eval ({row.status_reason}); it cannot be "
                                       "approved: reject it, or submit a candidate with stronger holdout evidence")
        if row.status != "pending_approval":
            raise _already(row, "approved")
        if row.parent_revision_id == artifact.active_revision_id:
            decision = _activate(session, store, row, artifact, actor, comment, publish_root, saved, "approved", {})
        else:  # rejected; raised after the commit: the rejection must stand before the caller hears of it
            reason = (f"stale parent: {_short(row.parent_revision_id)} is no longer the active revision "
                      f"(active: {_short(artifact.active_revision_id)})")
            _move(session, store, row, "rejected", actor, "rejected", comment, reason, decision=True,
                  detail={"reason": reason, "on": "approve"})
            stale = errors.StaleParent(f"revision {_short(row.id)} was not approved and is now rejected: {reason}; "
                                       f"re-run from the active revision (seed.from_store={row.artifact_name!r})")
    if stale is not None:
        raise stale
    return _mirror(registry, decision)


def reject(store: RevisionStore, ref: str, actor: str, comment: str | None = None) -> Decision:
    """Only the status (and decision fields) change; nothing is published or archived."""
    actor = check_actor(actor)
    with store.transaction() as session:
        row, _ = _locked(session, store, ref)
        if not row.status.startswith("pending"):
            raise _already(row, "rejected")
        _move(session, store, row, "rejected", actor, "rejected", comment, comment or "", decision=True)
        return Decision(row)


def rollback(store: RevisionStore, artifact_name: str, actor: str, comment: str | None = None, *,
             to: str | None = None, publish_root: Path | str = publish.DEFAULT_PUBLISH_ROOT,
             registry: PromptRegistry | None = None) -> Decision:
    """Re-activate an archived revision (default: the one archived most recently)."""
    actor = check_actor(actor)
    with _publishing(store) as (session, saved):
        if (artifact := store.lock_artifact(session, artifact_name)) is None:
            raise errors.RevisionNotFound(f"no artifact {artifact_name!r} in {store.display_url}")
        target = store.find(session, to) if to is not None else _last_archived(session, artifact_name)
        if target is None:
            raise errors.RevisionError(f"{artifact_name!r} has no archived revision to roll back to")
        _check_belongs(target, artifact_name)
        if target.status != "archived":
            raise errors.AlreadyDecided(f"revision {_short(target.id)} is {target.status}; only an archived revision "
                                        "can be rolled back to")
        decision = _activate(session, store, target, artifact, actor, comment, publish_root, saved, "rolled_back",
                             {"from": artifact.active_revision_id})
    return _mirror(registry, decision)


def _last_archived(session: Session, artifact_name: str) -> RevisionRow | None:
    """The revision whose archiving is the newest in the audit log among those still archived."""
    return session.scalar(select(RevisionRow).join(AuditRow, AuditRow.revision_id == RevisionRow.id).where(
        AuditRow.artifact_name == artifact_name, AuditRow.action == "archived", RevisionRow.status == "archived",
    ).order_by(AuditRow.id.desc()).limit(1))


# -- the approval-timeout sweeper ---------------------------------------------------------------
@dataclass(frozen=True)
class SweepOutcome:
    revision_id: str
    artifact_name: str
    outcome: str  # approved | rejected (stale parent) | skipped (decided meanwhile)
    detail: str = ""


# What an approval that raised means for the sweeper (committed either way).
SWEPT = {errors.RegistryNotUpdated: "approved", errors.StaleParent: "rejected", errors.AlreadyDecided: "skipped"}


def sweep(store: RevisionStore, timeout: timedelta | None, *, now: datetime | None = None,
          publish_root: Path | str = publish.DEFAULT_PUBLISH_ROOT, registry: PromptRegistry | None = None
          ) -> list[SweepOutcome]:
    """Opt-in: auto-approve (actor `auto-expire`) every pending_approval revision submitted longer
    than `timeout` ago, oldest first, through the same checks as a human approval. `None` (the
    default everywhere) does nothing."""
    if timeout is None:
        return []
    if timeout <= timedelta(0):
        raise errors.InvalidRequest("the approval timeout must be positive (e.g. 72h)")
    if timeout > MAX_APPROVAL_TIMEOUT:
        raise errors.InvalidRequest(f"the approval timeout must be at most {MAX_APPROVAL_TIMEOUT.days}d (e.g. 72h)")
    cutoff = (now or utcnow()) - timeout
    due = sorted((r for r in store.revisions(statuses=("pending_approval",)) if r.submitted_at < cutoff),
                 key=lambda r: (r.submitted_at, r.id))
    outcomes = []
    comment = f"auto-approved: pending longer than the approval timeout ({timeout})"
    for revision in due:
        try:
            decision = approve(store, revision.id, AUTO_EXPIRE, comment, publish_root=publish_root, system=True,
                               registry=registry)
            outcome, detail = "approved", str(decision.published)
        except (errors.RegistryNotUpdated, errors.StaleParent, errors.AlreadyDecided) as exc:
            outcome, detail = SWEPT[type(exc)], str(exc)
        outcomes.append(SweepOutcome(revision.id, revision.artifact_name, outcome, detail))
    return outcomes
