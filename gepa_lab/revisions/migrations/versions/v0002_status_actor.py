"""Who put a revision in its current status, apart from who decided it.

Before: a rollback overwrote the re-activated revision's `decided_by` / `decided_at` (its approver)
with the rollback's actor, and an archived revision's decision fields named its approver, not
who archived it. Now `decided_*` is the review decision (approve / reject, set once) and the new
`status_by` / `status_at` say who or what moved the revision to its current status (submission,
gates, approval, archive, rollback). Both are filled in from the audit log, which always had
the truth: `decided_*` from each revision's first approval or rejection, `status_*` from its last
status change.

`store_meta.schema_version` becomes "2", so a gepa-lab from before migrations (which checks that
value) refuses the upgraded store instead of writing rows without these columns.

Revision ID: 0002
Revises: 0001
"""

from __future__ import annotations

from typing import Any

import sqlalchemy as sa
from alembic import op

revision = "0002"
down_revision = "0001"

GATES = "gates"  # the actor of automatic rejections
STATUS_ACTIONS = ("submitted", "approved", "rejected", "archived", "rolled_back")
DECISIONS = ("approved", "rejected")

_revisions = sa.table("revisions", sa.column("id", sa.String), sa.column("decided_by", sa.String),
                      sa.column("decided_at", sa.DateTime), sa.column("decision_comment", sa.Text),
                      sa.column("status_by", sa.String), sa.column("status_at", sa.DateTime))
_audit = sa.table("audit_log", sa.column("id", sa.Integer), sa.column("at", sa.DateTime),
                  sa.column("revision_id", sa.String), sa.column("action", sa.String), sa.column("actor", sa.String),
                  sa.column("comment", sa.Text), sa.column("detail", sa.JSON))
_meta = sa.table("store_meta", sa.column("key", sa.String), sa.column("value", sa.Text))


def _from_audit(bind: Any) -> tuple[dict[str, dict[str, Any]], dict[str, dict[str, Any]]]:
    """(revision id -> its last status change, revision id -> its first decision)."""
    latest: dict[str, dict[str, Any]] = {}
    decision: dict[str, dict[str, Any]] = {}
    rows = bind.execute(sa.select(_audit).where(_audit.c.action.in_(STATUS_ACTIONS), _audit.c.revision_id.is_not(None))
                        .order_by(_audit.c.id))
    for row in rows:
        gated = row.action == "submitted" and (row.detail or {}).get("status") == "rejected"
        latest[row.revision_id] = {"status_by": GATES if gated else row.actor, "status_at": row.at}
        if row.action in DECISIONS and row.revision_id not in decision:
            decision[row.revision_id] = {"decided_by": row.actor, "decided_at": row.at,
                                         "decision_comment": row.comment}
    return latest, decision


def upgrade() -> None:
    op.add_column("revisions", sa.Column("status_by", sa.String(200)))
    op.add_column("revisions", sa.Column("status_at", sa.DateTime()))
    bind = op.get_bind()
    latest, decision = _from_audit(bind)
    for updates in (latest, decision):
        for revision_id, values in updates.items():
            bind.execute(_revisions.update().where(_revisions.c.id == revision_id).values(**values))
    bind.execute(_meta.update().where(_meta.c.key == "schema_version").values(value="2"))


def downgrade() -> None:
    raise NotImplementedError("restore the backup taken before the upgrade")
