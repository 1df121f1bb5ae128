"""One file per schema revision, oldest first (Alembic skips this file)."""
