"""Content-addressed evaluation cache persisted in the run directory (SQLite).

Key = sha256(artifact id, case id, seed, evaluator fingerprint). A hit costs no evaluator call
and no money; the engine still counts it as a metric call, so what the cache held never changes
a result. Each result is committed as soon as it exists, so a crash loses no paid evaluation.
"""

from __future__ import annotations

import hashlib
import json
import sqlite3
import threading
from pathlib import Path

from gepa_lab.contracts import Evaluation


def cache_key(artifact_id: str, case_id: str, seed: int, fingerprint: str) -> str:
    raw = json.dumps([artifact_id, case_id, int(seed), fingerprint], separators=(",", ":"))
    return hashlib.sha256(raw.encode("utf-8")).hexdigest()


class EvaluationCache:
    def __init__(self, path: Path):
        path.parent.mkdir(parents=True, exist_ok=True)
        # Worker threads share one connection; the lock serialises access.
        self._db = sqlite3.connect(str(path), check_same_thread=False, isolation_level=None)
        self._db.execute("PRAGMA journal_mode=WAL")
        # NORMAL: a killed process loses nothing (the OS has the pages); only power loss could.
        self._db.execute("PRAGMA synchronous=NORMAL")
        self._db.execute("CREATE TABLE IF NOT EXISTS evaluations (key TEXT PRIMARY KEY, result TEXT NOT NULL)")
        self._lock = threading.Lock()
        self.hits = 0
        self.misses = 0

    def get(self, key: str) -> Evaluation | None:
        with self._lock:
            row = self._db.execute("SELECT result FROM evaluations WHERE key = ?", (key,)).fetchone()
        if row is None:
            self.misses += 1
            return None
        self.hits += 1
        return Evaluation.from_dict(json.loads(row[0]))

    def put(self, key: str, evaluation: Evaluation) -> None:
        payload = json.dumps(evaluation.to_dict(), ensure_ascii=False)
        with self._lock:
            self._db.execute("INSERT OR REPLACE INTO evaluations (key, result) VALUES (?, ?)", (key, payload))

    def __len__(self) -> int:
        with self._lock:
            return int(self._db.execute("SELECT COUNT(*) FROM evaluations").fetchone()[0])

    def close(self) -> None:
        with self._lock:
            self._db.close()
