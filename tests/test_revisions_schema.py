"""Schema migrations (Alembic, gepa_lab/revisions/migrations): a new store is created at the newest
revision and matches the ORM models; a store made before migrations existed (today's schema,
revision 0001, no version table) is refused until `python -m gepa_lab.revisions upgrade`, which
adds revision 0002's columns, fills them from the audit log and keeps every row; afterwards the
store works as any other. On SQLite, and on PostgreSQL (slow: it starts a server)."""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any

import pytest
import sqlalchemy as sa
from alembic import command
from alembic.autogenerate import compare_metadata
from alembic.runtime.migration import MigrationContext
from test_revisions_messages import documented
from test_shared_services import postgres  # noqa: F401  (the PostgreSQL server fixture)

from gepa_lab.core.submission import Evidence, SubmissionRequest
from gepa_lab.revisions import schema, service
from gepa_lab.revisions.cli import main
from gepa_lab.revisions.errors import RevisionStoreError
from gepa_lab.revisions.store import Base, RevisionStore, parse_url

NAME = "Weather Monitor"
T0 = datetime(2026, 1, 5, 9, 0)


@pytest.fixture(params=["sqlite", pytest.param("postgresql", marks=pytest.mark.slow)])
def url(request, tmp_path, monkeypatch):
    if request.param == "sqlite":
        return f"sqlite:///{tmp_path / 'revisions.db'}"
    server = request.getfixturevalue("postgres")
    server.execute("postgres", "create database revisions")
    monkeypatch.setenv("PGPASSWORD", server.password)
    return server.url("revisions")


def differences(url: str) -> list[Any]:
    engine = sa.create_engine(url)
    try:
        with engine.connect() as connection:
            context = MigrationContext.configure(connection, opts={"version_table": schema.VERSION_TABLE})
            return [d for d in compare_metadata(context, Base.metadata)]
    finally:
        engine.dispose()


def test_a_store_created_by_a_parallel_job_while_it_is_read_is_never_an_unknown_version(url, monkeypatch):
    """A sweep job reads the revision of a store that a sibling job creates at that moment. Had the
    version table been read before `store_meta`, a creation between the two reads looked like a
    pre-migration store with version "2" and the job was refused (seen in CI on PostgreSQL)."""
    read = MigrationContext.get_current_revision

    def read_then_a_sibling_creates_the_store(self):
        found = read(self)
        if found is None:
            RevisionStore(url).close()
        return found

    monkeypatch.setattr(MigrationContext, "get_current_revision", read_then_a_sibling_creates_the_store)
    engine = sa.create_engine(url)
    try:
        with engine.connect() as connection:
            assert schema.current(connection) in (None, schema.head())
        RevisionStore(url).close()  # a job opening it now creates or finds it at the newest revision
        with engine.connect() as connection:
            assert schema.current(connection) == schema.head()
    finally:
        engine.dispose()


def test_a_new_store_is_at_the_newest_revision_and_matches_the_models(url, capsys):
    assert main(["list", "--store", url]) == 0  # an empty database is no store yet, and no error
    assert capsys.readouterr().out.startswith("no revisions yet: no revision store at ")
    RevisionStore(url).close()
    assert schema.known() == ["0001", "0002"] and schema.head() == "0002"
    assert differences(url) == []
    engine = sa.create_engine(url)
    with engine.connect() as connection:
        assert connection.execute(sa.text(f"SELECT version_num FROM {schema.VERSION_TABLE}")).scalars().all() == ["0002"]
        assert connection.execute(sa.text("SELECT key, value FROM store_meta")).all() == [("schema_version", "2")]
    engine.dispose()


def skill(step: str) -> dict[str, Any]:
    return {"kind": "skill", "name": NAME, "description": "Reports the weather of a city.",
            "when_to_use": "Use when a task asks for current weather.",
            "steps": ["Call get_weather for the city.", step], "pitfalls": []}


def write_history_as_before_migrations(url: str) -> None:
    """Today's schema (revision 0001) without a version table, holding what gepa-lab wrote before
    this change: v1 approved by alice, v2 approved by bob (v1 archived), then carol's rollback to
    v1, which overwrote v1's decision fields with her name."""
    engine = sa.create_engine(url)
    with engine.begin() as connection:
        command.upgrade(schema._config(connection), schema.BASELINE)
        connection.execute(sa.text(f"DROP TABLE {schema.VERSION_TABLE}"))
        tables = sa.MetaData()
        tables.reflect(connection)
        revisions, artifacts, audit = (tables.tables[n] for n in ("revisions", "artifacts", "audit_log"))
        evidence = {"experiment_id": "e", "dataset_id": "d", "dataset_version": "v1", "digests": {"holdout": "h"},
                    "baseline_score": 0.6, "candidate_score": 0.8, "delta": 0.2, "case_count": 20}
        connection.execute(artifacts.insert(), [{"name": NAME, "kind": "skill", "active_revision_id": None,
                                                 "created_at": T0, "updated_at": T0}])
        for n, (rid, parent, status, by, reason) in enumerate([
                ("a" * 32, None, "active", "carol", ""),
                ("b" * 32, "a" * 32, "archived", "bob", "replaced by aaaaaaaaaaaa (v1)")], 1):
            connection.execute(revisions.insert(), [{
                "id": rid, "artifact_name": NAME, "version": n, "kind": "skill", "artifact_hash": str(n) * 64,
                "body": skill(f"Step of v{n}."), "parent_revision_id": parent, "parent_key": parent or "",
                "action": "update" if parent else "create", "source": f"optimization/gepa:e{n}", "evidence": evidence,
                "gates": [], "submitted_at": T0 + timedelta(days=n), "status": status, "status_reason": reason,
                "decided_by": by, "decided_at": T0 + timedelta(days=n + 2), "decision_comment": None,
                "published_path": None}])
        connection.execute(artifacts.update().values(active_revision_id="a" * 32))
        log = [("submitted", "a", "optimization/gepa:e1", {"status": "pending_approval"}), ("approved", "a", "alice", {}),
               ("submitted", "b", "optimization/gepa:e2", {"status": "pending_approval"}),
               ("archived", "a", "bob", {}), ("approved", "b", "bob", {}),
               ("archived", "b", "carol", {}), ("rolled_back", "a", "carol", {})]
        connection.execute(audit.insert(), [
            {"at": T0 + timedelta(hours=i), "artifact_name": NAME, "revision_id": r * 32, "action": action,
             "actor": actor, "comment": None, "detail": detail} for i, (action, r, actor, detail) in enumerate(log)])
    engine.dispose()


def test_upgrading_a_store_created_before_migrations(url, capsys, tmp_path):
    write_history_as_before_migrations(url)
    shown = parse_url(url).render_as_string(hide_password=True)
    with pytest.raises(RevisionStoreError) as refused:
        RevisionStore(url)
    assert str(refused.value) == (
        f"revision store {shown} has schema revision 0001; this gepa-lab needs 0002: back the store up, "
        f"then upgrade it once with: python -m gepa_lab.revisions upgrade --store {shown}")
    documented(str(refused.value))
    assert main(["list", "--store", url]) == 1 and "upgrade it once with" in capsys.readouterr().err

    assert main(["upgrade", "--store", url]) == 0
    assert capsys.readouterr().out.strip() == (
        f"upgraded revision store {shown} from schema revision 0001 to 0002")
    assert differences(url) == []
    with RevisionStore(url) as store:
        v1, v2 = store.get(f"{NAME}@v1"), store.get(f"{NAME}@v2")
        # The approver is back (from the audit log), and who changed the status is apart from it.
        assert (v1.status, v1.decided_by, v1.status_by) == ("active", "alice", "carol")
        assert v1.decided_at == T0 + timedelta(hours=1)
        assert (v2.status, v2.decided_by, v2.status_by) == ("archived", "bob", "carol")
        assert v2.status_at == T0 + timedelta(hours=5) and v2.body == skill("Step of v2.")
        assert len(store.audit()) == 7

        # ... and the upgraded store works like a new one.
        ev = Evidence("e3", "d", "v1", {"holdout": "h"}, 0.7, 0.9, 0.9 - 0.7, 20)
        v3 = service.submit(store, SubmissionRequest("optimization/gepa:e3", skill("Step of v3."), "update", v1.id,
                                                     ev)).revision
        assert (v3.version, v3.status, v3.status_by) == (3, "pending_approval", "optimization/gepa:e3")
        service.approve(store, v3.id, "dave", publish_root=tmp_path / "published")
        v1 = store.get(v1.id)
        assert (v1.status, v1.decided_by, v1.status_by) == ("archived", "alice", "dave")

    assert main(["upgrade", "--store", url]) == 0
    assert "is at schema revision 0002; nothing to do" in capsys.readouterr().out
    engine = sa.create_engine(url)
    with engine.connect() as connection:  # a gepa-lab from before migrations checks this, and refuses
        assert connection.execute(sa.text("SELECT value FROM store_meta")).scalar() == "2"
    engine.dispose()


def test_upgrade_of_nothing_and_a_store_from_the_future(tmp_path, capsys):
    missing = f"sqlite:///{tmp_path / 'none.db'}"
    assert main(["upgrade", "--store", missing]) == 1
    assert capsys.readouterr().err.strip() == (
        f"gepa_lab.revisions: error: no revision store at sqlite:///{tmp_path / 'none.db'}; pass the store's URL with "
        "--store (a run with submit=true creates a new one)")
    assert not (tmp_path / "none.db").exists()
    url = f"sqlite:///{tmp_path / 'future.db'}"
    RevisionStore(url).close()
    engine = sa.create_engine(url)
    with engine.begin() as connection:
        connection.execute(sa.text(f"UPDATE {schema.VERSION_TABLE} SET version_num = '0099'"))
    engine.dispose()
    assert main(["upgrade", "--store", url]) == 1
    err = capsys.readouterr().err.strip()
    assert "has schema revision 0099, newer than this gepa-lab knows (0002)" in err
    documented(err)
