"""The revision store's database: tables, transactions and reads (SQLAlchemy 2.x ORM).

A SQLite file by default (`sqlite:///revisions.db`); a team points every client at one SQLAlchemy
URL (e.g. `postgresql://...`). The store owns the database; the rules (gates, decisions) live in
`service`, the published files in `publish`.

Tables:
- `revisions`   one row per submitted revision. The body (artifact, hash, parent, evidence, gate
                results) never changes once written; only status and decision fields do.
- `artifacts`   one row per artifact name: its kind and the pointer to its active revision.
- `audit_log`   append-only: every submission, decision, archive, rollback and monitoring run.
- `monitoring`  re-evaluations of active revisions against their parents.
- `store_meta`  one row (`schema_version`): the lock creates take, and the version a gepa-lab from
                before migrations checks. The schema's revision is Alembic's (`schema`).

Database constraints, not just code, keep the invariants: revision ids are primary keys,
(artifact, version) is unique, (artifact, parent, artifact hash) is unique (a resubmission finds
the existing row), a status outside the five is refused, and a partial unique index allows at
most one `active` revision per artifact. The ORM refuses updates to a revision's body and to
audit rows.

Concurrency: every write is one transaction that first locks the artifact's row. On SQLite each
transaction starts with BEGIN IMMEDIATE (writers queue on the database lock, waiting up to
`BUSY_TIMEOUT_S`); on other databases the artifact row is locked with SELECT ... FOR UPDATE, and a
create also locks the schema-version row first (`lock_names`), so the name checks that compare a
new artifact with every other one never run side by side.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import AbstractContextManager, contextmanager, suppress
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import sqlalchemy as sa
from sqlalchemy import JSON, Engine, Float, ForeignKey, String, Text, create_engine, event, inspect, select
from sqlalchemy.engine import URL, make_url
from sqlalchemy.exc import DatabaseError, IntegrityError, NoSuchModuleError, SQLAlchemyError
from sqlalchemy.orm import DeclarativeBase, Mapped, MappedAsDataclass, Session, mapped_column, sessionmaker

from gepa_lab.core.errors import describe
from gepa_lab.core.redact import mask_url
from gepa_lab.core.submission import Lineage
from gepa_lab.revisions import schema
from gepa_lab.revisions.errors import ImmutableRevision, RevisionNotFound, RevisionStoreError, StoreMissing
from gepa_lab.revisions.urls import DEFAULT_STORE_URL, check_store_url

STATUSES = ("pending_eval", "pending_approval", "active", "rejected", "archived")
MAX_NAME = 200  # column width; the SpecGate limit (120) is stricter
MIN_PREFIX = 4  # shortest id prefix accepted
BUSY_TIMEOUT_S = 30.0  # how long a SQLite writer waits for the database lock
CONNECT_TIMEOUT_S = 10  # how long a PostgreSQL client waits for the server
_STATUS_SQL = ", ".join(f"'{s}'" for s in STATUSES)


def utcnow() -> datetime:
    """Naive UTC: SQLite has no time zones, so every stored time is UTC without tzinfo."""
    return datetime.now(UTC).replace(tzinfo=None)


def iso(moment: datetime | None) -> str | None:
    return None if moment is None else moment.isoformat(timespec="milliseconds") + "Z"


def fmt_score(value: Any, *, signed: bool = False) -> str:
    """A score or delta for people: 4 decimals, "-" if missing, never "-0.0000" (a delta that
    rounds to zero prints +0.0000)."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return "-"
    rounded = round(float(value), 4) + 0.0  # + 0.0 turns -0.0 into 0.0
    return f"{rounded:+.4f}" if signed else f"{rounded:.4f}"


class Base(MappedAsDataclass, DeclarativeBase, kw_only=True):
    """Rows are dataclasses: reads return them detached from their session (expire_on_commit=False
    keeps their values), compared by value."""

    type_annotation_map = {dict[str, Any]: JSON, list[Any]: JSON, str: Text, float: Float}

    def to_dict(self) -> dict[str, Any]:
        """Every column (times in ISO 8601) but `parent_key`, an implementation detail."""
        values = {c.key: getattr(self, c.key) for c in self.__table__.columns if c.key != "parent_key"}
        return {k: iso(v) if isinstance(v, datetime) else v for k, v in values.items()}


class ArtifactRow(Base):
    """The active pointer of one artifact (and the row every decision on it locks)."""

    __tablename__ = "artifacts"
    name: Mapped[str] = mapped_column(String(MAX_NAME), primary_key=True)
    kind: Mapped[str] = mapped_column(String(32))
    # use_alter: revisions and artifacts reference each other.
    active_revision_id: Mapped[str | None] = mapped_column(
        ForeignKey("revisions.id", use_alter=True, name="fk_artifact_active"), unique=True, default=None)
    created_at: Mapped[datetime] = mapped_column(default_factory=utcnow)
    updated_at: Mapped[datetime] = mapped_column(default_factory=utcnow)


class RevisionRow(Base):
    __tablename__ = "revisions"
    id: Mapped[str] = mapped_column(String(64), primary_key=True)
    artifact_name: Mapped[str] = mapped_column(ForeignKey("artifacts.name"), index=True)
    version: Mapped[int]
    kind: Mapped[str] = mapped_column(String(32))
    artifact_hash: Mapped[str] = mapped_column(String(64), index=True)
    body: Mapped[dict[str, Any]]
    parent_revision_id: Mapped[str | None] = mapped_column(ForeignKey("revisions.id"))
    # The parent id, or "" for a create: SQL treats NULLs as distinct in a UNIQUE constraint.
    parent_key: Mapped[str] = mapped_column(String(64))
    action: Mapped[str] = mapped_column(String(16))
    source: Mapped[str]
    evidence: Mapped[dict[str, Any]]
    gates: Mapped[list[Any]]
    submitted_at: Mapped[datetime]
    status: Mapped[str] = mapped_column(String(20))
    status_reason: Mapped[str]
    # The review decision (approve / reject, by a person, `gates` or `auto-expire`): set once.
    decided_by: Mapped[str | None] = mapped_column(String(MAX_NAME))
    decided_at: Mapped[datetime | None]
    decision_comment: Mapped[str | None] = mapped_column(default=None)
    published_path: Mapped[str | None] = mapped_column(default=None)
    # Who or what moved it to its current status (submitter, gates, approver, whoever's approval
    # or rollback archived it, the rollback's actor). Migration 0002.
    status_by: Mapped[str | None] = mapped_column(String(MAX_NAME), default=None)
    status_at: Mapped[datetime | None] = mapped_column(default=None)

    @property
    def reasons(self) -> list[str]:
        return [r for gate in self.gates for r in gate.get("reasons", [])]

    __table_args__ = (
        sa.UniqueConstraint("artifact_name", "version", name="uq_revision_version"),
        sa.UniqueConstraint("artifact_name", "parent_key", "artifact_hash", name="uq_revision_lineage"),
        sa.CheckConstraint(f"status IN ({_STATUS_SQL})", name="ck_revision_status"),
        sa.CheckConstraint("action IN ('create', 'update')", name="ck_revision_action"),
        sa.CheckConstraint("version >= 1", name="ck_revision_version"),
        sa.Index("uq_one_active_revision", "artifact_name", unique=True,
              sqlite_where=sa.text("status = 'active'"), postgresql_where=sa.text("status = 'active'")),
    )


# Written once at submission; a change to any of these is a bug.
IMMUTABLE_FIELDS = ("id", "artifact_name", "version", "kind", "artifact_hash", "body", "parent_revision_id",
                    "parent_key", "action", "source", "evidence", "gates", "submitted_at")


class AuditRow(Base):
    __tablename__ = "audit_log"
    id: Mapped[int] = mapped_column(primary_key=True, autoincrement=True, init=False)
    at: Mapped[datetime]
    artifact_name: Mapped[str] = mapped_column(String(MAX_NAME), index=True)
    revision_id: Mapped[str | None] = mapped_column(ForeignKey("revisions.id"), index=True)
    action: Mapped[str] = mapped_column(String(32))
    actor: Mapped[str] = mapped_column(String(MAX_NAME))
    comment: Mapped[str | None]
    detail: Mapped[dict[str, Any]]


class MonitoringRow(Base):
    __tablename__ = "monitoring"
    id: Mapped[int] = mapped_column(primary_key=True, autoincrement=True, init=False)
    at: Mapped[datetime]
    revision_id: Mapped[str] = mapped_column(ForeignKey("revisions.id"), index=True)
    parent_revision_id: Mapped[str | None] = mapped_column(ForeignKey("revisions.id"))
    experiment_id: Mapped[str] = mapped_column(String(64))
    run_dir: Mapped[str]
    split: Mapped[str] = mapped_column(String(16))
    seed: Mapped[int]
    cases: Mapped[int]
    active_mean: Mapped[float]
    parent_mean: Mapped[float | None]
    delta: Mapped[float | None]
    evaluator: Mapped[str]
    actor: Mapped[str] = mapped_column(String(MAX_NAME))


class MetaRow(Base):
    __tablename__ = "store_meta"
    key: Mapped[str] = mapped_column(String(64), primary_key=True)
    value: Mapped[str]


@event.listens_for(RevisionRow, "before_update")
def _revision_body_is_immutable(mapper: Any, connection: Any, target: RevisionRow) -> None:
    state = inspect(target)
    if changed := [name for name in IMMUTABLE_FIELDS if state.attrs[name].history.has_changes()]:
        raise ImmutableRevision(f"revision {target.id} is immutable; refusing to change {', '.join(changed)}")


@event.listens_for(AuditRow, "before_update")
@event.listens_for(AuditRow, "before_delete")
def _audit_is_append_only(mapper: Any, connection: Any, target: AuditRow) -> None:
    raise ImmutableRevision(f"the audit log is append-only; refusing to change entry {target.id}")


# -- URLs ---------------------------------------------------------------------------------------
def parse_url(url: str) -> URL:
    """A SQLAlchemy URL; a relative SQLite path is made absolute against the working directory."""
    try:
        return make_url(check_store_url(url, "revision store"))
    except ValueError as exc:
        raise RevisionStoreError(str(exc)) from exc


def _engine(url: URL) -> Engine:
    if url.get_backend_name() != "sqlite":  # an unreachable PostgreSQL server: one line after a deadline, not a hang
        deadline = {"connect_timeout": CONNECT_TIMEOUT_S} if url.get_backend_name() == "postgresql" else {}
        return create_engine(url, pool_pre_ping=True, connect_args=deadline)
    engine = create_engine(url, connect_args={"timeout": BUSY_TIMEOUT_S})

    @event.listens_for(engine, "connect")
    def _connect(dbapi_connection: Any, record: Any) -> None:
        # Take transaction control away from the sqlite3 driver (SQLAlchemy docs, "Transactions
        # with SQLite and the sqlite3 driver"), so the BEGIN below is the only one.
        dbapi_connection.isolation_level = None
        dbapi_connection.execute("PRAGMA foreign_keys = ON")

    @event.listens_for(engine, "begin")
    def _begin(connection: Any) -> None:
        # IMMEDIATE takes the write lock up front: a check-then-write (parent check, version
        # number) cannot interleave with another process's.
        connection.exec_driver_sql("BEGIN IMMEDIATE")

    return engine


@contextmanager
def _errors(shown: str) -> Iterator[None]:
    """A database error as one line naming the store (never its password)."""
    try:
        yield
    except SQLAlchemyError as exc:
        fix = "; check the store's URL (--store, submitter.url, seed.store) and its server" if isinstance(
            exc, DatabaseError) else ""
        raise RevisionStoreError(f"revision store {shown}: {describe(getattr(exc, 'orig', None) or exc)}{fix}") from exc


# -- the store ----------------------------------------------------------------------------------
class RevisionStore(AbstractContextManager["RevisionStore"]):
    """One revision database. `create=False` refuses to create a missing store (`StoreMissing`):
    the CLI's commands must not turn a mistyped --store into an empty database. An existing store
    at an older schema revision is refused until `upgrade` (see `schema`)."""

    def __init__(self, url: str = DEFAULT_STORE_URL, *, create: bool = True, upgrade: bool = False):
        self.url = parse_url(url)
        self.display_url = mask_url(self.url.render_as_string(hide_password=False))  # for messages and records
        if not create and self.url.get_backend_name() == "sqlite" and not Path(str(self.url.database)).is_file():
            raise StoreMissing(self.display_url)
        try:
            self.engine = _engine(self.url)
        except (NoSuchModuleError, ImportError) as exc:
            raise RevisionStoreError(f"no database driver for {self.display_url}: {describe(exc)} (postgresql:// "
                                     "uses psycopg 3: pip install 'psycopg[binary]')") from exc
        self._sessions = sessionmaker(self.engine, expire_on_commit=False)
        try:
            with _errors(self.display_url):
                self._check_integrity()
                # (schema revision before, after); only `upgrade` (never with `create`) changes it
                self.migrated = schema.prepare(self.engine, self.display_url, create=create, upgrade=upgrade)
        except BaseException:
            self.engine.dispose()
            raise

    def _check_integrity(self) -> None:
        """A damaged SQLite file is refused before anything reads or writes it (`quick_check`: pages
        and indexes, linear in the file's size); a database server checks its own storage."""
        if self.url.get_backend_name() == "sqlite":
            with self.engine.connect() as connection:
                found = str(connection.exec_driver_sql("PRAGMA quick_check").scalar())
            if found != "ok":
                raise RevisionStoreError(f"revision store {self.display_url} is damaged (SQLite quick_check: "
                                         f"{found.splitlines()[-1]}); nothing was read or changed: restore it from a "
                                         "backup (or `sqlite3 FILE '.recover'` into a new file), then run it again")

    def close(self) -> None:
        self.engine.dispose()

    def __exit__(self, *exc: object) -> None:
        self.close()

    @contextmanager
    def transaction(self) -> Iterator[Session]:
        """One unit of work: committed on success, rolled back on any exception."""
        with _errors(self.display_url), self._sessions() as session, session.begin():
            yield session

    # -- locking and writing helpers (used inside a transaction) -------------------------------
    def lock_artifact(self, session: Session, name: str) -> ArtifactRow | None:
        return session.scalar(select(ArtifactRow).where(ArtifactRow.name == name).with_for_update())

    @staticmethod
    def lock_names(session: Session) -> None:
        """Serialise creates: the SpecGate's duplicate and sibling checks read every other name,
        and two new names checked at once would each miss the other. The schema-version row is
        the one row every store has; updates never take it."""
        session.execute(select(MetaRow).where(MetaRow.key == "schema_version").with_for_update()).scalar_one_or_none()

    def ensure_artifact(self, session: Session, name: str, kind: str) -> ArtifactRow:
        """The artifact's row, created on first use, locked for the rest of the transaction."""
        if (row := self.lock_artifact(session, name)) is None:
            with suppress(IntegrityError), session.begin_nested():  # a concurrent creator wins; we lock its row
                session.add(ArtifactRow(name=name, kind=kind))
            row = self.lock_artifact(session, name)
        assert row is not None
        return row

    @staticmethod
    def audit_entry(session: Session, *, artifact: str, revision_id: str | None, action: str, actor: str,
                    comment: str | None = None, detail: dict[str, Any] | None = None) -> None:
        session.add(AuditRow(at=utcnow(), artifact_name=artifact, revision_id=revision_id, action=action,
                             actor=actor, comment=comment, detail=detail or {}))

    # -- lookups (inside a transaction) --------------------------------------------------------
    def find(self, session: Session, ref: str) -> RevisionRow:
        """A revision by id, unique id prefix (>= MIN_PREFIX characters) or `<artifact name>@v<version>`."""
        ref = ref.strip()
        if (row := session.get(RevisionRow, ref)) is not None:
            return row
        name, at, version = ref.rpartition("@")
        if at and (number := version.lstrip("v")).isdigit() and (row := session.scalar(
                select(RevisionRow).filter_by(artifact_name=name, version=int(number)))) is not None:
            return row
        if ref and all(c in "0123456789abcdef" for c in ref.lower()):  # an id prefix
            if len(ref) < MIN_PREFIX:
                raise RevisionNotFound(f"revision prefix {ref!r} is too short: give at least {MIN_PREFIX} characters "
                                       "of the id, or <artifact>@v<version>")
            rows = session.scalars(select(RevisionRow).where(RevisionRow.id.startswith(ref.lower())).limit(2)).all()
            if len(rows) == 1:
                return rows[0]
            if rows:
                raise RevisionNotFound(f"revision prefix {ref!r} matches several revisions; give more characters")
        raise RevisionNotFound(f"no revision {ref!r} in {self.display_url} (see: python -m gepa_lab.revisions list)")

    @staticmethod
    def active_row(session: Session, name: str) -> RevisionRow | None:
        artifact = session.get(ArtifactRow, name)
        if artifact is None or artifact.active_revision_id is None:
            return None
        return session.get(RevisionRow, artifact.active_revision_id)

    # -- reads (own transaction) ---------------------------------------------------------------
    def get(self, ref: str) -> RevisionRow:
        with self.transaction() as session:
            return self.find(session, ref)

    def active(self, name: str) -> RevisionRow | None:
        with self.transaction() as session:
            return self.active_row(session, name)

    def revisions(self, artifact: str | None = None, statuses: Sequence[str] = ()) -> list[RevisionRow]:
        stmt = select(RevisionRow).order_by(RevisionRow.artifact_name, RevisionRow.version)
        if artifact is not None:
            stmt = stmt.where(RevisionRow.artifact_name == artifact)
        if statuses:
            stmt = stmt.where(RevisionRow.status.in_(list(statuses)))
        with self.transaction() as session:
            return list(session.scalars(stmt))

    def audit(self, artifact: str | None = None, revision: str | None = None,
              limit: int | None = None) -> list[AuditRow]:
        stmt = select(AuditRow).order_by(AuditRow.id.desc())
        with self.transaction() as session:
            if artifact is not None:
                stmt = stmt.where(AuditRow.artifact_name == artifact)
            if revision is not None:
                stmt = stmt.where(AuditRow.revision_id == self.find(session, revision).id)
            return list(reversed(session.scalars(stmt.limit(limit)).all()))

    def monitoring(self, revision_id: str | None = None) -> list[MonitoringRow]:
        stmt = select(MonitoringRow).order_by(MonitoringRow.id)
        with self.transaction() as session:
            return list(session.scalars(stmt if revision_id is None else stmt.filter_by(revision_id=revision_id)))

    def lineage(self, artifact_hash: str, name: str | None) -> Lineage:
        """Which revision a run's seed came from: the revision whose body has the seed's hash
        (the active one if several), else none. Then `update` if the artifact exists, else
        `create`. A seed that is no longer active makes the submission stale, on purpose."""
        stmt = select(RevisionRow).filter_by(artifact_hash=artifact_hash).order_by(
            (RevisionRow.status == "active").desc(), RevisionRow.submitted_at.desc(), RevisionRow.version.desc())
        with self.transaction() as session:
            if (row := session.scalar(stmt if name is None else stmt.filter_by(artifact_name=name))) is not None:
                return Lineage(row.id, "update", row.artifact_name)
            exists = name is not None and self.active_row(session, name) is not None
            return Lineage(None, "update" if exists else "create", name)
