"""Content-addressed evaluation cache in the run directory (`cache.sqlite`).

Key = sha256(artifact id, case id, seed, evaluator fingerprint). A hit costs no evaluator call
and no money; the engine still counts it as a metric call, so what the cache held never changes
a result. Each evaluator reply is committed as soon as it exists, so a crash loses no paid
evaluation and a resumed run re-pays nothing it had finished.
"""

from __future__ import annotations

import hashlib
import json
import logging
import sqlite3
import threading
import time
from collections.abc import Iterable
from functools import lru_cache
from pathlib import Path

from gepa_lab.core.contracts import Evaluation

FILE = "cache.sqlite"
log = logging.getLogger("gepa_lab")


@lru_cache(maxsize=4096)  # looked up, then written: computed once per case
def cache_key(artifact_id: str, case_id: str, seed: int, fingerprint: str) -> str:
    raw = json.dumps([artifact_id, case_id, int(seed), fingerprint], separators=(",", ":"))
    return hashlib.sha256(raw.encode("utf-8")).hexdigest()


def _row(ev: Evaluation) -> str:
    return json.dumps({"case_id": ev.case_id, "score": ev.score, "output": ev.output, "feedback": ev.feedback,
                       "trace": ev.trace, "objectives": ev.objectives}, ensure_ascii=False)


def _open(path: Path) -> sqlite3.Connection:
    # Worker threads share one connection; the lock in EvaluationCache serialises access.
    db = sqlite3.connect(str(path), check_same_thread=False, isolation_level=None)
    try:
        # One process owns a run dir (runs/lock.py): exclusive locking skips the shared-memory
        # coordination WAL does for concurrent readers (a quarter of each commit's cost).
        db.execute("PRAGMA locking_mode=EXCLUSIVE")
        db.execute("PRAGMA journal_mode=WAL")
        # NORMAL: a killed process loses nothing (the OS has the pages); only power loss could.
        db.execute("PRAGMA synchronous=NORMAL")
        db.execute("CREATE TABLE IF NOT EXISTS evaluations (key TEXT PRIMARY KEY, result TEXT NOT NULL)")
        db.execute("SELECT COUNT(*) FROM evaluations").fetchone()
    except sqlite3.DatabaseError:
        db.close()
        raise
    return db


class EvaluationCache:
    def __init__(self, run_dir: Path):
        run_dir.mkdir(parents=True, exist_ok=True)
        path = run_dir / FILE
        try:
            self._db = _open(path)
        except sqlite3.DatabaseError as exc:
            # Only a saving: a damaged cache is set aside and rebuilt; its evaluations are paid again.
            stamp = time.strftime("%Y%m%d-%H%M%S")
            for suffix in ("", "-wal", "-shm"):
                damaged = path.with_name(path.name + suffix)
                if damaged.exists():
                    damaged.rename(damaged.with_name(f"{damaged.name}.damaged-{stamp}"))
            log.warning("evaluation cache %s was damaged (%s): moved aside as %s.damaged-%s and rebuilt; "
                        "evaluations it held will be paid again", path, exc, path.name, stamp)
            self._db = _open(path)
        self._lock = threading.Lock()
        # Every key on disk, so a miss (all of a fresh run's lookups) costs no query.
        self._keys = {row[0] for row in self._db.execute("SELECT key FROM evaluations")}
        self.hits = 0
        self.misses = 0

    def get(self, artifact_id: str, case_id: str, seed: int, fingerprint: str) -> Evaluation | None:
        key = cache_key(artifact_id, case_id, seed, fingerprint)
        if key not in self._keys:
            self.misses += 1
            return None
        with self._lock:
            row = self._db.execute("SELECT result FROM evaluations WHERE key = ?", (key,)).fetchone()
        if row is None:
            self.misses += 1
            return None
        self.hits += 1
        data = json.loads(row[0])
        return Evaluation(data["case_id"], float(data["score"]), data.get("output", ""), data.get("feedback", ""),
                          data.get("trace", ""), {k: float(v) for k, v in (data.get("objectives") or {}).items()})

    def put_many(self, rows: Iterable[tuple[str, str, int, str, Evaluation]]) -> None:
        """One transaction per evaluator reply."""
        items = [(cache_key(a, c, s, f), _row(ev)) for a, c, s, f, ev in rows]
        with self._lock:
            if len(items) == 1:  # autocommit
                self._db.execute("INSERT OR REPLACE INTO evaluations (key, result) VALUES (?, ?)", items[0])
            else:
                self._db.execute("BEGIN")
                try:
                    self._db.executemany("INSERT OR REPLACE INTO evaluations (key, result) VALUES (?, ?)", items)
                except BaseException:
                    self._db.execute("ROLLBACK")
                    raise
                self._db.execute("COMMIT")
            self._keys.update(key for key, _ in items)

    def __len__(self) -> int:
        with self._lock:
            return int(self._db.execute("SELECT COUNT(*) FROM evaluations").fetchone()[0])

    def close(self) -> None:
        with self._lock:
            self._db.close()
