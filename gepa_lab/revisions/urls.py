"""Revision store URLs, checked without importing SQLAlchemy (the submitter is built for every
run, and the config check runs before any job)."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

DEFAULT_STORE_URL = "sqlite:///revisions.db"  # in the working directory (same as the revisions CLI)
_URL = re.compile(r"^[A-Za-z][A-Za-z0-9]*(\+[A-Za-z0-9_]+)?://")


def check_store_url(url: Any, key: str = "submitter.url") -> str:
    """The URL, with a relative SQLite path made absolute (the run may not stay in this directory)."""
    if not isinstance(url, str) or not _URL.match(url):
        raise ValueError(f"{key} {url!r} is not a database URL; use e.g. {DEFAULT_STORE_URL} or "
                         "postgresql://user@host/db")
    scheme, _, rest = url.partition("://")
    if scheme.partition("+")[0] != "sqlite":
        return url
    path, _, query = rest.partition("?")
    if path in ("/", "/:memory:") or not path.startswith("/"):
        raise ValueError(f"{key} {url!r} names no database file (an in-memory database forgets every revision when "
                         f"the process ends); use a file, e.g. {DEFAULT_STORE_URL}")
    resolved = Path(path[1:]).expanduser().resolve()
    if not resolved.parent.is_dir():
        raise ValueError(f"{key} {url!r}: directory {resolved.parent} does not exist (create it or fix the URL)")
    return f"{scheme}:///{resolved}" + (f"?{query}" if query else "")
