"""Alembic migrations of the revision store (`gepa_lab.revisions.schema` runs them)."""
