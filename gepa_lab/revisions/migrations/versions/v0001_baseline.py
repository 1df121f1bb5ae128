"""Baseline: the schema every store had before migrations (schema_version 1 in `store_meta`).

Frozen here as plain tables, created the way those versions created them (`create_all`), so a
store made by this revision is the same as one made before Alembic. Never edit it: change the
schema in a new revision.

Revision ID: 0001
Revises: none
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0001"
down_revision = None

_STATUSES = "'pending_eval', 'pending_approval', 'active', 'rejected', 'archived'"


def _tables() -> sa.MetaData:
    meta = sa.MetaData()
    sa.Table(
        "artifacts", meta,
        sa.Column("name", sa.String(200), primary_key=True),
        sa.Column("kind", sa.String(32), nullable=False),
        sa.Column("active_revision_id", sa.String(64),
                  sa.ForeignKey("revisions.id", use_alter=True, name="fk_artifact_active"), unique=True),
        sa.Column("created_at", sa.DateTime(), nullable=False),
        sa.Column("updated_at", sa.DateTime(), nullable=False),
    )
    sa.Table(
        "revisions", meta,
        sa.Column("id", sa.String(64), primary_key=True),
        sa.Column("artifact_name", sa.String(200), sa.ForeignKey("artifacts.name"), nullable=False, index=True),
        sa.Column("version", sa.Integer(), nullable=False),
        sa.Column("kind", sa.String(32), nullable=False),
        sa.Column("artifact_hash", sa.String(64), nullable=False, index=True),
        sa.Column("body", sa.JSON(), nullable=False),
        sa.Column("parent_revision_id", sa.String(64), sa.ForeignKey("revisions.id")),
        sa.Column("parent_key", sa.String(64), nullable=False),
        sa.Column("action", sa.String(16), nullable=False),
        sa.Column("source", sa.Text(), nullable=False),
        sa.Column("evidence", sa.JSON(), nullable=False),
        sa.Column("gates", sa.JSON(), nullable=False),
        sa.Column("submitted_at", sa.DateTime(), nullable=False),
        sa.Column("status", sa.String(20), nullable=False),
        sa.Column("status_reason", sa.Text(), nullable=False),
        sa.Column("decided_by", sa.String(200)),
        sa.Column("decided_at", sa.DateTime()),
        sa.Column("decision_comment", sa.Text()),
        sa.Column("published_path", sa.Text()),
        sa.UniqueConstraint("artifact_name", "version", name="uq_revision_version"),
        sa.UniqueConstraint("artifact_name", "parent_key", "artifact_hash", name="uq_revision_lineage"),
        sa.CheckConstraint(f"status IN ({_STATUSES})", name="ck_revision_status"),
        sa.CheckConstraint("action IN ('create', 'update')", name="ck_revision_action"),
        sa.CheckConstraint("version >= 1", name="ck_revision_version"),
        sa.Index("uq_one_active_revision", "artifact_name", unique=True,
                 sqlite_where=sa.text("status = 'active'"), postgresql_where=sa.text("status = 'active'")),
    )
    sa.Table(
        "audit_log", meta,
        sa.Column("id", sa.Integer(), primary_key=True, autoincrement=True),
        sa.Column("at", sa.DateTime(), nullable=False),
        sa.Column("artifact_name", sa.String(200), nullable=False, index=True),
        sa.Column("revision_id", sa.String(64), sa.ForeignKey("revisions.id"), index=True),
        sa.Column("action", sa.String(32), nullable=False),
        sa.Column("actor", sa.String(200), nullable=False),
        sa.Column("comment", sa.Text()),
        sa.Column("detail", sa.JSON(), nullable=False),
    )
    sa.Table(
        "monitoring", meta,
        sa.Column("id", sa.Integer(), primary_key=True, autoincrement=True),
        sa.Column("at", sa.DateTime(), nullable=False),
        sa.Column("revision_id", sa.String(64), sa.ForeignKey("revisions.id"), nullable=False, index=True),
        sa.Column("parent_revision_id", sa.String(64), sa.ForeignKey("revisions.id")),
        sa.Column("experiment_id", sa.String(64), nullable=False),
        sa.Column("run_dir", sa.Text(), nullable=False),
        sa.Column("split", sa.String(16), nullable=False),
        sa.Column("seed", sa.Integer(), nullable=False),
        sa.Column("cases", sa.Integer(), nullable=False),
        sa.Column("active_mean", sa.Float(), nullable=False),
        sa.Column("parent_mean", sa.Float()),
        sa.Column("delta", sa.Float()),
        sa.Column("evaluator", sa.Text(), nullable=False),
        sa.Column("actor", sa.String(200), nullable=False),
    )
    sa.Table(
        "store_meta", meta,
        sa.Column("key", sa.String(64), primary_key=True),
        sa.Column("value", sa.Text(), nullable=False),
    )
    return meta


def upgrade() -> None:
    meta = _tables()
    meta.create_all(op.get_bind())
    op.bulk_insert(meta.tables["store_meta"], [{"key": "schema_version", "value": "1"}])


def downgrade() -> None:
    raise NotImplementedError("the baseline is the oldest schema; restore a backup instead")
