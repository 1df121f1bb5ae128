"""Alembic's entry point, run by `gepa_lab.revisions.schema` on a connection it has already opened
and locked (`config.attributes["connection"]`), inside that connection's transaction: a store is
created or upgraded entirely or not at all."""

from __future__ import annotations

from alembic import context

connection = context.config.attributes.get("connection")
if connection is None:
    raise RuntimeError("the revision store's migrations run through gepa_lab.revisions.schema "
                       "(python -m gepa_lab.revisions upgrade), not the alembic command")
context.configure(connection=connection, target_metadata=None,
                  version_table=context.config.attributes["version_table"])
with context.begin_transaction():
    context.run_migrations()
