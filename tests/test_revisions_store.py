"""The revision store and its rules (docs/revisions.md): submission statuses and refusals,
idempotent resubmission, approve -> publish + archive + pointer + audit, reject, rollback,
already-decided errors, stale parents, the sweeper, database constraints and immutability."""

from __future__ import annotations

import json
import sqlite3
from datetime import timedelta

import pytest

from gepa_lab.core.artifacts import SkillSpec, artifact_id
from gepa_lab.core.submission import Evidence, SubmissionRequest
from gepa_lab.revisions import service
from gepa_lab.revisions.errors import (
    AlreadyDecided,
    ImmutableRevision,
    InvalidRequest,
    PublishFailed,
    RevisionError,
    RevisionNotFound,
    RevisionStoreError,
    StaleParent,
)
from gepa_lab.revisions.store import RevisionRow, RevisionStore, utcnow

NAME = "Weather Monitor"


def body(extra_step: str | None = None, name: str = NAME, **overrides):
    steps = ["Call get_weather for the city.", "Write the report with write_file."]
    if extra_step:
        steps.append(extra_step)
    fields = {"kind": "skill", "name": name, "description": "Reports the weather of a city.",
              "when_to_use": "Use when a task asks for current weather.", "steps": steps, "pitfalls": []}
    fields.update(overrides)
    return fields


def request(artifact, parent=None, candidate=0.9, baseline=0.7, experiment="exp-1", **kwargs):
    evidence = Evidence(experiment_id=experiment, dataset_id="d", dataset_version="v1", digests={"holdout": "h"},
                        baseline_score=baseline, candidate_score=candidate, delta=candidate - baseline,
                        case_count=10)
    return SubmissionRequest(source=f"optimization/gepa:{experiment}", artifact=artifact,
                             action="update" if parent else "create", parent_revision_id=parent, evidence=evidence,
                             **kwargs)


@pytest.fixture
def published(tmp_path):
    return tmp_path / "published"


def submit(store, artifact, parent=None, **kwargs):
    return service.submit(store, request(artifact, parent, **kwargs)).revision


def actions(store, artifact=NAME):
    return [(e.action, e.actor) for e in store.audit(artifact)]


# -- submission ---------------------------------------------------------------------------------
def test_submission_is_pending_approval_and_nothing_is_published(store, published):
    rev = submit(store, body())
    assert (rev.status, rev.version, rev.action, rev.parent_revision_id) == ("pending_approval", 1, "create", None)
    assert rev.artifact_hash == artifact_id(SkillSpec(**{k: v for k, v in body().items() if k != "kind"}))
    assert rev.evidence["candidate_score"] == 0.9 and rev.source == "optimization/gepa:exp-1"
    assert store.active(NAME) is None
    assert not published.exists()
    assert actions(store) == [("submitted", "optimization/gepa:exp-1")]


def test_low_holdout_waits_in_pending_eval_and_cannot_be_approved(store, published):
    rev = submit(store, body(), candidate=0.6, baseline=0.5)
    assert rev.status == "pending_eval"
    assert rev.status_reason == "holdout score 0.6000 is below 0.8000; held for more evaluation"
    with pytest.raises(RevisionError, match="is pending_eval .* cannot be approved"):
        service.approve(store, rev.id, "alice", publish_root=published)
    assert store.get(rev.id).status == "pending_eval" and not published.exists()


def test_gate_failures_are_stored_as_rejected_with_every_reason(store):
    rev = submit(store, body(steps=["rm -rf /"]))
    assert rev.status == "rejected" and rev.decided_by == "gates"
    assert rev.reasons == ["a skill needs at least 2 steps (got 1)",
                           "step 1: dangerous shell command (rm -rf on / or $HOME): 'rm -rf /'"]
    assert store.active(NAME) is None


def test_resubmitting_the_same_artifact_on_the_same_parent_returns_the_existing_revision(store):
    first = service.submit(store, request(body()))
    again = service.submit(store, request(body(), experiment="exp-2"))
    assert again.resubmitted and not first.resubmitted
    assert again.revision.id == first.revision.id and again.revision.source == "optimization/gepa:exp-1"
    assert len(store.revisions(NAME)) == 1
    assert [a for a, _ in actions(store)] == ["submitted", "resubmitted"]


def test_a_different_artifact_gets_the_next_version(store):
    assert [submit(store, body(f"step {i}")).version for i in range(3)] == [1, 2, 3]


def test_stale_parent_on_submission_is_refused_and_stores_nothing(store, published):
    v1 = submit(store, body())
    service.approve(store, v1.id, "alice", publish_root=published)
    v2 = submit(store, body("Check the units."), parent=v1.id)
    service.approve(store, v2.id, "alice", publish_root=published)
    before = (store.revisions(), store.audit())
    with pytest.raises(StaleParent, match=r"parent revision .* of 'Weather Monitor' is no longer active"):
        submit(store, body("Another idea."), parent=v1.id)
    with pytest.raises(StaleParent, match=r"already has an active revision .* \(seed.from_store='Weather Monitor'\)"):
        submit(store, body("A hand-edited seed."))  # no parent although the artifact is live
    assert (store.revisions(), store.audit()) == before


@pytest.mark.parametrize("make, message", [
    (lambda: request(body(), candidate=1.5), "evidence candidate_score 1.5 is outside"),
    (lambda: request(body(), parent="nope"), "parent revision 'nope' is not in the store"),
    (lambda: request({"kind": "skill", "text": "x"}), "unknown field"),
    (lambda: request({"kind": "prompt", "text": "Answer briefly."}), "has no name to store it under"),
])
def test_malformed_submissions_are_refused_and_store_nothing(store, make, message):
    with pytest.raises(InvalidRequest, match=message):
        service.submit(store, make())
    assert store.revisions() == [] and store.audit() == []


def test_evidence_delta_must_equal_candidate_minus_baseline(store):
    req = request(body())
    bad = SubmissionRequest.from_dict({**req.to_dict(), "evidence": {**req.to_dict()["evidence"], "delta": 0.5}})
    with pytest.raises(InvalidRequest, match="delta 0.5 is not candidate - baseline"):
        service.submit(store, bad)


def test_name_checks_against_existing_artifacts(store):
    submit(store, body(name="Weather Monitor - Multi-City"))
    sibling = submit(store, body(name="Weather Monitor - 3 Cities"))
    dup = submit(store, body(name="weather monitor - multi city"))
    assert sibling.status == "rejected" and "count-specific sibling" in sibling.status_reason
    assert dup.status == "rejected" and "duplicates existing artifact" in dup.status_reason
    # A rejected artifact does not block a later name (only live artifacts count).
    assert submit(store, body(name="Weather Monitor - 3 Cities", description="Other text.")).status == "rejected"


def test_kinds_without_a_name_use_the_configured_name(store, published):
    rev = service.submit(store, request({"kind": "prompt", "text": "Answer briefly."}),
                         artifact_name="answer-prompt").revision
    decision = service.approve(store, rev.id, "alice", publish_root=published)
    assert decision.published == published / "answer-prompt" / "PROMPT.md"
    assert decision.published.read_text() == "Answer briefly.\n"
    with pytest.raises(InvalidRequest, match="is a prompt; a skill cannot revise it"):
        service.submit(store, request(body(name="answer-prompt")))


# -- approve / reject / rollback ----------------------------------------------------------------
def test_approve_publishes_archives_moves_the_pointer_and_audits(store, published):
    v1 = submit(store, body())
    d1 = service.approve(store, v1.id, "alice", "first release", publish_root=published)
    skill_md = published / "weather-monitor" / "SKILL.md"
    assert d1.published == skill_md and d1.previous is None
    assert skill_md.read_text() == SkillSpec(**{k: v for k, v in body().items() if k != "kind"}).render_markdown()
    meta = json.loads((published / "weather-monitor" / "revision.json").read_text())
    assert meta["revision_id"] == v1.id and meta["decided_by"] == "alice"

    v2 = submit(store, body("Check the units."), parent=v1.id)
    assert skill_md.read_text().count("Check the units.") == 0  # submitted is not published
    d2 = service.approve(store, v2.id, "bob", publish_root=published)
    assert d2.previous == v1.id
    assert "Check the units." in skill_md.read_text()
    assert store.active(NAME).id == v2.id
    assert store.get(v1.id).status == "archived" and store.get(v2.id).status == "active"
    assert store.get(v2.id).decided_by == "bob" and store.get(v2.id).published_path == str(skill_md)
    assert actions(store)[-2:] == [("archived", "bob"), ("approved", "bob")]
    approved = [e for e in store.audit(NAME) if e.action == "approved"]
    assert [e.comment for e in approved] == ["first release", None]


def test_reject_only_changes_the_status(store, published):
    v1 = submit(store, body())
    service.approve(store, v1.id, "alice", publish_root=published)
    files = {p: p.read_text() for p in published.rglob("*") if p.is_file()}
    v2 = submit(store, body("Nope."), parent=v1.id)
    d = service.reject(store, v2.id, "carol", "not convincing")
    assert d.revision.status == "rejected" and d.revision.decided_by == "carol"
    assert d.revision.decision_comment == "not convincing"
    assert store.active(NAME).id == v1.id
    assert {p: p.read_text() for p in published.rglob("*") if p.is_file()} == files
    assert actions(store)[-1] == ("rejected", "carol")
    pending_eval = submit(store, body("Weak."), parent=v1.id, candidate=0.5, baseline=0.4)
    assert service.reject(store, pending_eval.id, "carol").revision.status == "rejected"


def test_deciding_an_already_decided_revision_is_an_error(store, published):
    v1 = submit(store, body())
    service.approve(store, v1.id, "alice", publish_root=published)
    with pytest.raises(AlreadyDecided, match="is already active by alice .* cannot be approved"):
        service.approve(store, v1.id, "bob", publish_root=published)
    with pytest.raises(AlreadyDecided, match="is already active"):
        service.reject(store, v1.id, "bob")
    v2 = submit(store, body("x"), parent=v1.id)
    service.reject(store, v2.id, "bob")
    for decide in (lambda: service.approve(store, v2.id, "c", publish_root=published),
                   lambda: service.reject(store, v2.id, "c")):
        with pytest.raises(AlreadyDecided, match="is already rejected by bob"):
            decide()
    gated = submit(store, body(name="Risky", steps=["curl x | sh", "ok"]))
    with pytest.raises(AlreadyDecided, match="is already rejected by gates"):
        service.approve(store, gated.id, "alice", publish_root=published)
    with pytest.raises(AlreadyDecided, match="only an archived revision"):
        service.rollback(store, NAME, "alice", to=v2.id, publish_root=published)


def test_stale_parent_on_approval_rejects_and_audits(store, published):
    v1 = submit(store, body())
    service.approve(store, v1.id, "alice", publish_root=published)
    a = submit(store, body("Idea A."), parent=v1.id)
    b = submit(store, body("Idea B."), parent=v1.id)
    service.approve(store, a.id, "alice", publish_root=published)
    with pytest.raises(StaleParent, match="was not approved and is now rejected: stale parent"):
        service.approve(store, b.id, "bob", publish_root=published)
    assert store.get(b.id).status == "rejected" and store.get(b.id).decided_by == "bob"
    assert "stale parent" in store.get(b.id).status_reason
    assert store.active(NAME).id == a.id
    assert "Idea A." in (published / "weather-monitor" / "SKILL.md").read_text()
    last = store.audit(NAME)[-1]
    assert (last.action, last.actor, last.revision_id) == ("rejected", "bob", b.id)
    assert last.detail["on"] == "approve"


def test_two_creates_of_one_name_the_second_approval_is_stale(store, published):
    a, b = submit(store, body("A")), submit(store, body("B"))
    service.approve(store, a.id, "alice", publish_root=published)
    with pytest.raises(StaleParent):
        service.approve(store, b.id, "alice", publish_root=published)


def test_rollback_reactivates_the_last_archived_revision(store, published):
    skill_md = published / "weather-monitor" / "SKILL.md"
    v1 = submit(store, body())
    service.approve(store, v1.id, "alice", publish_root=published)
    v1_text = skill_md.read_text()
    v2 = submit(store, body("Check the units."), parent=v1.id)
    service.approve(store, v2.id, "alice", publish_root=published)
    d = service.rollback(store, NAME, "dave", "v2 breaks on Mondays", publish_root=published)
    assert d.revision.id == v1.id and d.previous == v2.id
    assert store.active(NAME).id == v1.id and store.get(v2.id).status == "archived"
    assert skill_md.read_text() == v1_text
    assert actions(store)[-2:] == [("archived", "dave"), ("rolled_back", "dave")]
    # A pending revision built on v2 is now stale; one built on v1 is not.
    with pytest.raises(StaleParent):
        submit(store, body("On v2."), parent=v2.id)
    # Roll forward again, explicitly.
    assert service.rollback(store, NAME, "dave", to=v2.id, publish_root=published).revision.id == v2.id
    assert "Check the units." in skill_md.read_text()


def test_rollback_errors(store, published):
    with pytest.raises(RevisionNotFound, match="no artifact 'Nope'"):
        service.rollback(store, "Nope", "dave", publish_root=published)
    v1 = submit(store, body())
    service.approve(store, v1.id, "alice", publish_root=published)
    with pytest.raises(RevisionError, match="has no archived revision to roll back to"):
        service.rollback(store, NAME, "dave", publish_root=published)


@pytest.mark.parametrize("actor, message", [
    ("", "needs a named actor"), ("  ", "needs a named actor"), (None, "needs a named actor"),
    ("auto-expire", "reserved for automatic decisions"), ("gates", "reserved"),
])
def test_decisions_need_a_named_human_actor(store, published, actor, message):
    rev = submit(store, body())
    with pytest.raises(InvalidRequest, match=message):
        service.approve(store, rev.id, actor, publish_root=published)
    assert store.get(rev.id).status == "pending_approval"


def test_revision_references(store):
    rev = submit(store, body())
    assert store.get(rev.id[:8]).id == rev.id
    assert store.get(f"{NAME}@v1").id == rev.id and store.get(f"{NAME}@1").id == rev.id
    with pytest.raises(RevisionNotFound, match="no revision 'zzz'"):
        store.get("zzz")


def test_a_failed_commit_puts_the_published_files_back(store, published, monkeypatch):
    v1 = submit(store, body())
    service.approve(store, v1.id, "alice", publish_root=published)
    skill_md = published / "weather-monitor" / "SKILL.md"
    before = skill_md.read_text()
    v2 = submit(store, body("Check the units."), parent=v1.id)
    original = service.publish.publish

    def publish_then_fail(*args, **kwargs):
        original(*args, **kwargs)
        raise OSError("disk full while writing revision.json")

    monkeypatch.setattr(service.publish, "publish", publish_then_fail)
    with pytest.raises(PublishFailed, match="disk full"):  # one line for the CLI, naming the directory
        service.approve(store, v2.id, "alice", publish_root=published)
    assert skill_md.read_text() == before
    assert store.active(NAME).id == v1.id and store.get(v2.id).status == "pending_approval"


# -- the sweeper --------------------------------------------------------------------------------
def test_sweeper_is_off_by_default(store, published):
    submit(store, body())
    assert service.sweep(store, None, now=utcnow() + timedelta(days=365), publish_root=published) == []
    assert store.revisions()[0].status == "pending_approval"


def test_sweeper_auto_approves_only_revisions_pending_past_the_timeout(store, published, monkeypatch):
    old = submit(store, body())
    later = utcnow() + timedelta(hours=73)
    monkeypatch.setattr(service, "utcnow", lambda: later - timedelta(hours=10))  # submitted 10 h before `later`
    young = submit(store, body(name="Recipe Builder"))
    monkeypatch.undo()
    outcomes = service.sweep(store, timedelta(hours=72), now=later - timedelta(hours=2), publish_root=published)
    assert outcomes == []
    outcomes = service.sweep(store, timedelta(hours=72), now=later, publish_root=published)
    assert [(o.revision_id, o.outcome) for o in outcomes] == [(old.id, "approved")]
    assert store.active(NAME).decided_by == "auto-expire"
    assert store.get(young.id).status == "pending_approval"
    assert (published / "weather-monitor" / "SKILL.md").is_file()
    assert actions(store)[-1] == ("approved", "auto-expire")


def test_sweeper_rejects_stale_and_skips_pending_eval(store, published):
    a, b = submit(store, body("A")), submit(store, body("B"))
    weak = submit(store, body(name="Recipe Builder"), candidate=0.5, baseline=0.4)
    outcomes = service.sweep(store, timedelta(seconds=1), now=utcnow() + timedelta(minutes=1),
                             publish_root=published)
    assert [(o.revision_id, o.outcome) for o in outcomes] == [(a.id, "approved"), (b.id, "rejected")]
    assert store.get(weak.id).status == "pending_eval"
    with pytest.raises(InvalidRequest, match="must be positive"):
        service.sweep(store, timedelta(0), publish_root=published)


# -- database guarantees ------------------------------------------------------------------------
def test_the_database_refuses_a_second_active_revision_and_duplicate_versions(store, published, tmp_path):
    v1 = submit(store, body())
    service.approve(store, v1.id, "alice", publish_root=published)
    v2 = submit(store, body("x"), parent=v1.id)
    db = sqlite3.connect(tmp_path / "revisions.db")
    with pytest.raises(sqlite3.IntegrityError, match="UNIQUE"):
        db.execute("UPDATE revisions SET status = 'active' WHERE id = ?", (v2.id,))
    with pytest.raises(sqlite3.IntegrityError, match="UNIQUE"):
        db.execute("UPDATE revisions SET version = 1 WHERE id = ?", (v2.id,))
    with pytest.raises(sqlite3.IntegrityError, match="UNIQUE"):
        db.execute("INSERT INTO revisions SELECT * FROM revisions WHERE id = ?", (v2.id,))
    with pytest.raises(sqlite3.IntegrityError, match="CHECK"):
        db.execute("UPDATE revisions SET status = 'live' WHERE id = ?", (v2.id,))
    db.close()


def test_revision_bodies_and_the_audit_log_are_immutable(store):
    rev = submit(store, body())
    with pytest.raises(ImmutableRevision, match="refusing to change body"):
        with store.transaction() as session:
            row = session.get(RevisionRow, rev.id)
            row.body = body("tampered")
    assert store.get(rev.id).body == body()
    from gepa_lab.revisions.store import AuditRow

    with pytest.raises(ImmutableRevision, match="append-only"):
        with store.transaction() as session:
            session.delete(session.get(AuditRow, 1))
    assert len(store.audit()) == 1


def test_lineage_finds_the_revision_the_seed_came_from(store, published):
    v1 = submit(store, body())
    pending = store.lineage(v1.artifact_hash, NAME)  # a seed taken from an unapproved revision...
    assert (pending.parent_revision_id, pending.action) == (v1.id, "update")
    with pytest.raises(StaleParent):  # ...is refused: only the active revision may be built on
        submit(store, body("Built on a pending revision."), parent=v1.id)
    assert store.lineage("0" * 64, NAME).action == "create"
    service.approve(store, v1.id, "alice", publish_root=published)
    lineage = store.lineage(v1.artifact_hash, NAME)
    assert (lineage.parent_revision_id, lineage.action, lineage.artifact_name) == (v1.id, "update", NAME)
    unknown = store.lineage("0" * 64, NAME)
    assert (unknown.parent_revision_id, unknown.action) == (None, "update")  # will be refused as stale


def test_opening_stores(tmp_path):
    with pytest.raises(RevisionStoreError, match="no revision store at"):
        RevisionStore(f"sqlite:///{tmp_path / 'missing.db'}", create=False)
    assert not (tmp_path / "missing.db").exists()
    with pytest.raises(RevisionStoreError, match="does not exist"):
        RevisionStore(f"sqlite:///{tmp_path / 'no' / 'dir.db'}")
    with pytest.raises(RevisionStoreError, match="not a database URL"):
        RevisionStore("revisions.db")
    with pytest.raises(RevisionStoreError, match="in-memory"):
        RevisionStore("sqlite://")
    RevisionStore(f"sqlite:///{tmp_path / 'v.db'}").close()
    db = sqlite3.connect(tmp_path / "v.db")
    db.execute("UPDATE revision_store_version SET version_num = '9999'")
    db.commit()
    db.close()
    with pytest.raises(RevisionStoreError, match=r"has schema revision 9999, newer than this gepa-lab knows "
                                                 r"\(0002\); install the gepa-lab version that upgraded it"):
        RevisionStore(f"sqlite:///{tmp_path / 'v.db'}")
