"""File primitives for everything written into a run directory."""

from __future__ import annotations

import json
import os
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, TextIO


def _umask() -> int:
    current = os.umask(0)
    os.umask(current)
    return current


# mkstemp creates files 0600; the run's files should be as readable as any other file the user
# writes (collaborators on a shared machine read results), so temp files get the umask's mode.
FILE_MODE = 0o666 & ~_umask()


def write_json_atomic(path: Path, value: Any, indent: int | None = 2) -> None:
    """Temp file + rename: a reader (or a crash) never sees half a file."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        os.fchmod(fd, FILE_MODE)
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            # dumps (one shot) uses the C encoder when indent is None; dump never does.
            fh.write(json.dumps(value, indent=indent, ensure_ascii=False, default=str) + "\n")
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


def read_jsonl(path: Path) -> Iterator[dict[str, Any]]:
    """Lines of an append-only JSON-lines file; a torn last line (a crash mid-write) is skipped."""
    if not path.exists():
        return
    with open(path, encoding="utf-8") as fh:
        for line in fh:
            if not line.endswith("\n"):
                return
            yield json.loads(line)


def rewrite_jsonl(path: Path, keep: Callable[[dict[str, Any]], bool]) -> None:
    """Keep only the lines `keep` accepts (used when a resumed run rewinds its record)."""
    if not path.exists():
        return
    kept = [row for row in read_jsonl(path) if keep(row)]
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    os.fchmod(fd, FILE_MODE)
    with os.fdopen(fd, "w", encoding="utf-8") as fh:
        fh.writelines(json.dumps(row, ensure_ascii=False) + "\n" for row in kept)
    os.replace(tmp, path)


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
