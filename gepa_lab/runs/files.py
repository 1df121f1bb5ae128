"""File primitives for everything written into a run directory."""

from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path
from typing import Any, TextIO

# mkstemp creates files 0600; the run's files should be as readable as any other file the user
# writes (collaborators on a shared machine read results), so temp files get the umask's mode.
# Reading the umask means setting it: it is set straight back.
_UMASK = os.umask(0)
os.umask(_UMASK)
FILE_MODE = 0o666 & ~_UMASK


def write_text_atomic(path: Path, text: str, *, durable: bool = False) -> None:
    """Temp file + rename: a reader (or a crash) never sees half a file. `durable`: fsync first
    (files other processes publish from)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        os.fchmod(fd, FILE_MODE)
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            fh.write(text)
            if durable:
                fh.flush()
                os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def read_json(path: Path, what: str) -> Any:
    """A JSON file of ours; a damaged one is a ValueError that names it."""
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as exc:
        raise ValueError(f"{what} {path} is damaged ({exc.msg} at line {exc.lineno}); it cannot be read") from exc


def read_dict(path: Path) -> dict[str, Any]:
    """A JSON object read for display only: {} when it is missing, damaged or not an object."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


class JsonLines:
    """An append-only JSON-lines file kept open; every line is flushed to the OS at once, so a
    killed process loses nothing it wrote."""

    def __init__(self, path: Path):
        self.path = path
        self._fh: TextIO | None = None

    def append(self, row: dict[str, Any]) -> None:
        if self._fh is None:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            self._fh = open(self.path, "a", encoding="utf-8")  # noqa: SIM115 (kept open on purpose)
        self._fh.write(json.dumps(row, ensure_ascii=False, default=str) + "\n")
        self._fh.flush()

    def close(self) -> None:
        if self._fh is not None:
            self._fh.close()
            self._fh = None
