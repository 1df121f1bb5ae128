"""One process per run directory: an OS-level lock (`flock`) on `run_dir/.lock`, held for the
whole run. The kernel releases it when the process dies, however it dies, so a killed run never
leaves a stale lock behind."""

from __future__ import annotations

import fcntl
import os
from pathlib import Path
from typing import IO

from gepa_lab.core.errors import ResumeError

LOCK_FILE = ".lock"


def holder(run_dir: Path) -> int | None:
    """The PID holding the run dir's lock, or None when it is free."""
    path = run_dir / LOCK_FILE
    if not path.exists():
        return None
    with open(path, "a+", encoding="utf-8") as fh:
        try:
            fcntl.flock(fh, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            fh.seek(0)
            text = fh.read().strip()
            return int(text) if text.isdigit() else -1
        fcntl.flock(fh, fcntl.LOCK_UN)
        return None


class RunLock:
    """`with RunLock(run_dir):` — raises ResumeError naming the holder if another process has it."""

    def __init__(self, run_dir: Path):
        self.path = run_dir / LOCK_FILE
        self._fh: IO[str] | None = None

    def __enter__(self) -> RunLock:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        fh = open(self.path, "a+", encoding="utf-8")  # noqa: SIM115 (held until __exit__)
        try:
            fcntl.flock(fh, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            fh.seek(0)
            pid = fh.read().strip() or "unknown"
            fh.close()
            raise ResumeError(f"{self.path.parent} is in use by another gepa_lab process (pid {pid}); wait for it "
                              "to finish or stop it, then resume") from None
        fh.seek(0)
        fh.truncate()
        fh.write(str(os.getpid()))
        fh.flush()
        self._fh = fh
        return self

    def __exit__(self, *exc: object) -> None:
        if self._fh is not None:
            fcntl.flock(self._fh, fcntl.LOCK_UN)
            self._fh.close()
            self._fh = None
