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


def _locked_by(fh: IO[str]) -> str | None:
    """Take the lock on the open lock file; None when taken, else the holder's PID as written there."""
    try:
        fcntl.flock(fh, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        fh.seek(0)
        return fh.read().strip() or "unknown"
    return None


def in_use(run_dir: Path, pid: str) -> ResumeError:
    return ResumeError(f"{run_dir} is in use by another gepa_lab process (pid {pid}); wait for it to finish or "
                       "stop it, then resume")


def holder(run_dir: Path) -> str | None:
    """The PID holding the run dir's lock ("unknown" when it wrote none), or None when it is free."""
    if not (run_dir / LOCK_FILE).exists():
        return None
    with open(run_dir / LOCK_FILE, "a+", encoding="utf-8") as fh:
        return _locked_by(fh)  # a lock taken here ends when the file closes


class RunLock:
    """`with RunLock(run_dir):` — raises ResumeError naming the holder if another process has it."""

    def __init__(self, run_dir: Path):
        self.path = run_dir / LOCK_FILE
        self._fh: IO[str] | None = None

    def __enter__(self) -> RunLock:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        fh = open(self.path, "a+", encoding="utf-8")  # noqa: SIM115 (held until __exit__)
        if (pid := _locked_by(fh)) is not None:
            fh.close()
            raise in_use(self.path.parent, pid)
        fh.truncate(0)
        fh.write(str(os.getpid()))
        fh.flush()
        self._fh = fh
        return self

    def __exit__(self, *exc: object) -> None:
        if self._fh is not None:
            fcntl.flock(self._fh, fcntl.LOCK_UN)
            self._fh.close()
            self._fh = None
