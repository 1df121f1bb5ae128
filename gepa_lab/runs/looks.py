"""The look ledger: every decision taken on a holdout split and every opening of a sealed
confirmation split, counted by the split's digest wherever it happens — any run directory, tracking
store (or none), sweep or process. A study that keeps the best of many configurations judged on one
split has tuned on it; the count says how much.

One append-only JSON-lines file: `$GEPA_LAB_LEDGER`, else `~/.local/state/gepa_lab/looks.jsonl`
(`$XDG_STATE_HOME` when set). Each look is appended under an exclusive `flock` after counting the
looks before it, so parallel jobs get distinct counts in the order they decided. A look is keyed by
what looked (a run's decision, a candidate): recording the same key again (a resumed decision)
returns its first count instead of counting it twice.
"""

from __future__ import annotations

import fcntl
import json
import os
from contextlib import suppress
from pathlib import Path
from typing import Any

from gepa_lab.runs.record import now

LEDGER_ENV = "GEPA_LAB_LEDGER"


def ledger_path() -> Path:
    if os.environ.get(LEDGER_ENV):
        return Path(os.environ[LEDGER_ENV]).expanduser()
    return Path(os.environ.get("XDG_STATE_HOME") or Path.home() / ".local" / "state") / "gepa_lab" / "looks.jsonl"


def _rows(text: str, split: str, digest: str) -> list[dict[str, Any]]:
    rows = []
    for line in text.splitlines():
        with suppress(json.JSONDecodeError):  # a line torn by a crash mid-write: that look is lost, not the ledger
            rows.append(json.loads(line))
    return [row for row in rows if isinstance(row, dict) and row.get("split") == split and row.get("digest") == digest]


def looks(split: str, digest: str) -> list[dict[str, Any]]:
    """Every look at this split, in order."""
    path = ledger_path()
    return _rows(path.read_text(encoding="utf-8"), split, digest) if path.is_file() else []


def record_look(split: str, digest: str, key: str, **info: Any) -> list[dict[str, Any]]:
    """Append a look at the split (once per key) and return the looks before it."""
    path = ledger_path()
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "a+", encoding="utf-8") as fh:
        fcntl.flock(fh, fcntl.LOCK_EX)  # released when the file closes
        fh.seek(0)
        earlier = _rows(fh.read(), split, digest)
        for number, row in enumerate(earlier):
            if row.get("key") == key:
                return earlier[:number]
        fh.write(json.dumps({"split": split, "digest": digest, "key": key, "at": now(), **info}, default=str) + "\n")
    return earlier


def count_decision(digest: str, experiment_id: str, decision: int, run_dir: Path | None) -> int:
    """Record a run's decision on a holdout split: how many decisions on it came before."""
    return len(record_look("holdout", digest, f"{experiment_id}/{decision}",
                           run_dir=str(run_dir.resolve()) if run_dir else None))
