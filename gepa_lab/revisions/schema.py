"""The revision store's schema, evolved by Alembic migrations (`migrations/versions/`).

- A new (empty) database is created at the newest revision when a store is opened to write.
- A store at an older revision is refused until someone runs `python -m gepa_lab.revisions
  upgrade` once (docs/revisions.md §Schema upgrades says why it is a command, not automatic).
- A store at a revision this code does not know was upgraded by a newer gepa-lab: refused.

A store created before migrations existed has no version table, only `store_meta`'s
`schema_version` "1": it is the baseline revision, stamped as such on upgrade.

Creating and upgrading run in one transaction that first takes the store's write lock (SQLite:
BEGIN IMMEDIATE, set up by `store`; PostgreSQL: an advisory lock), so parallel jobs opening one
new store create it once and the others then find it.
"""

from __future__ import annotations

import logging
from functools import lru_cache
from pathlib import Path

from sqlalchemy import Connection, Engine, inspect, text

from gepa_lab.revisions.errors import RevisionStoreError, StoreMissing

# Alembic logs its plugin set-up (on import) and each migration step at INFO; a run's log (Hydra
# sets INFO) is no place for them, so its logger is quieted before it is first imported, below.
logging.getLogger("alembic").setLevel(logging.WARNING)

from alembic import command  # noqa: E402
from alembic.config import Config  # noqa: E402
from alembic.runtime.migration import MigrationContext  # noqa: E402
from alembic.script import ScriptDirectory  # noqa: E402

SCRIPTS = Path(__file__).with_name("migrations")
# Not Alembic's default `alembic_version`: MLflow's database has that table, and a store URL
# pointed at it by mistake must read as "not a revision store", not as an unknown revision.
VERSION_TABLE = "revision_store_version"
BASELINE = "0001"
LOCK_KEY = 4_242_021  # pg_advisory_xact_lock key of schema changes


def _config(connection: Connection) -> Config:
    config = Config(attributes={"connection": connection, "version_table": VERSION_TABLE})
    config.set_main_option("script_location", str(SCRIPTS))
    return config


@lru_cache(maxsize=1)
def known() -> list[str]:
    """Every revision, oldest first (the history is linear)."""
    return [s.revision for s in reversed(list(ScriptDirectory(str(SCRIPTS)).walk_revisions()))]


def head() -> str:
    return known()[-1]


def current(connection: Connection) -> str | None:
    """The store's revision; None for a database without a revision store."""
    # `store_meta` first: a store's creation commits it together with the version table, so once it
    # is seen the version table is too. Read the other way round, a store created by a parallel job
    # between the two reads looked like a pre-migration store with an unknown version.
    if not inspect(connection).has_table("store_meta"):
        return None
    found = MigrationContext.configure(connection, opts={"version_table": VERSION_TABLE}).get_current_revision()
    if found is not None:
        return found
    version = connection.execute(text("SELECT value FROM store_meta WHERE key = 'schema_version'")).scalar()
    return BASELINE if version == "1" else f"schema_version {version}"  # pre-migration store


def _refusal(url: str, found: str) -> RevisionStoreError:
    if found in known():
        return RevisionStoreError(
            f"revision store {url} has schema revision {found}; this gepa-lab needs {head()}: back the store up, "
            f"then upgrade it once with: python -m gepa_lab.revisions upgrade --store {url}")
    return RevisionStoreError(f"revision store {url} has schema revision {found}, newer than this gepa-lab knows "
                              f"({head()}); install the gepa-lab version that upgraded it")


def prepare(engine: Engine, url: str, *, create: bool, upgrade: bool = False) -> tuple[str | None, str]:
    """Check that the store at `engine` is at the newest revision: (its revision before, after).
    `create` makes an empty database a new store; `upgrade` migrates a store at an older revision."""

    def checked(connection: Connection) -> str | None:
        found = current(connection)
        if found is None and not create:
            raise StoreMissing(url)
        if found not in (None, head()) and (not upgrade or found not in known()):
            raise _refusal(url, found)
        return found

    with engine.connect() as connection:
        found = checked(connection)
    if found != head():
        with engine.begin() as connection:
            if connection.dialect.name == "postgresql":  # SQLite's BEGIN IMMEDIATE already holds the write lock
                connection.execute(text("SELECT pg_advisory_xact_lock(:key)"), {"key": LOCK_KEY})
            found = checked(connection)  # another process may have created or upgraded it meanwhile
            if found != head():
                config = _config(connection)
                if found is not None:
                    command.stamp(config, found)  # a store from before migrations has no version table yet
                command.upgrade(config, "head")
    return found, head()
