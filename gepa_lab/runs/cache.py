"""Content-addressed evaluation cache in the run directory (`cache.sqlite`).

Key = sha256(artifact id, case id, seed, evaluator fingerprint). A hit costs no evaluator call
and no money; the engine still counts it as a metric call, so what the cache held never changes
a result. Each evaluator reply is committed as soon as it exists, so a crash loses no paid
evaluation and a resumed run re-pays nothing it had finished.
"""

from __future__ import annotations

import hashlib
import json
import sqlite3
import threading
from collections.abc import Iterable
from pathlib import Path

from gepa_lab.core.contracts import Evaluation

FILE = "cache.sqlite"


def cache_key(artifact_id: str, case_id: str, seed: int, fingerprint: str) -> str:
    raw = json.dumps([artifact_id, case_id, int(seed), fingerprint], separators=(",", ":"))
    return hashlib.sha256(raw.encode("utf-8")).hexdigest()


def _row(ev: Evaluation) -> str:
    return json.dumps({"case_id": ev.case_id, "score": ev.score, "output": ev.output, "feedback": ev.feedback,
                       "trace": ev.trace, "objectives": ev.objectives}, ensure_ascii=False)


class EvaluationCache:
    def __init__(self, run_dir: Path):
        run_dir.mkdir(parents=True, exist_ok=True)
        # Worker threads share one connection; the lock serialises access.
        self._db = sqlite3.connect(str(run_dir / FILE), check_same_thread=False, isolation_level=None)
        self._db.execute("PRAGMA journal_mode=WAL")
        # NORMAL: a killed process loses nothing (the OS has the pages); only power loss could.
        self._db.execute("PRAGMA synchronous=NORMAL")
        self._db.execute("CREATE TABLE IF NOT EXISTS evaluations (key TEXT PRIMARY KEY, result TEXT NOT NULL)")
        self._lock = threading.Lock()
        self.hits = 0
        self.misses = 0

    def get(self, artifact_id: str, case_id: str, seed: int, fingerprint: str) -> Evaluation | None:
        key = cache_key(artifact_id, case_id, seed, fingerprint)
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
                return
            self._db.execute("BEGIN")
            try:
                self._db.executemany("INSERT OR REPLACE INTO evaluations (key, result) VALUES (?, ?)", items)
            except BaseException:
                self._db.execute("ROLLBACK")
                raise
            self._db.execute("COMMIT")

    def __len__(self) -> int:
        with self._lock:
            return int(self._db.execute("SELECT COUNT(*) FROM evaluations").fetchone()[0])

    def close(self) -> None:
        with self._lock:
            self._db.close()
