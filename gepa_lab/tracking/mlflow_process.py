"""The engine's side of the MLflow logging process (`mlflow_worker.py`): starting it, the pipe
each way, and a pool of idle ones (one is started when a tracker is built, so it imports MLflow
while the run gets ready, and serves run after run: tests, sequential sweep jobs)."""

from __future__ import annotations

import atexit
import contextlib
import fcntl
import os
import pickle
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

ENV_DEFAULTS = {  # offline; and stdout is the CLI's summary, not a "View run at" line per run
    "MLFLOW_DISABLE_TELEMETRY": "true", "LITELLM_LOCAL_MODEL_COST_MAP": "True",
    "MLFLOW_SUPPRESS_PRINTING_URL_TO_STDOUT": "true",
    # A deadline on every request to a tracking server (MLflow's defaults, 120 s and 7 retries
    # backing off, wait minutes on a server that stopped answering).
    "MLFLOW_HTTP_REQUEST_TIMEOUT": "30", "MLFLOW_HTTP_REQUEST_MAX_RETRIES": "2"}
WORKER = Path(__file__).with_name("mlflow_worker.py")
PIPE_BYTES = 1 << 20  # the engine's writes wait only when the logger is this far behind


class LoggerProcess:
    """One logging process (`mlflow_worker.py`) and its two pipes."""

    def __init__(self, store: str = "sql") -> None:
        env = {**ENV_DEFAULTS, **os.environ}
        self.owner = os.getpid()  # a forked child must not write into its parent's logger
        self.store = store  # what it imported ahead: "sql" (a database store) or "rest"
        self.proc = subprocess.Popen([sys.executable, "-P", str(WORKER), store], stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, env=env, start_new_session=True)
        with contextlib.suppress(OSError):  # Linux: a deeper pipe, so a burst of messages never waits
            fcntl.fcntl(self.proc.stdin.fileno(), 1031, PIPE_BYTES)  # type: ignore[union-attr]  # F_SETPIPE_SZ

    def alive(self) -> bool:
        return self.owner == os.getpid() and self.proc.poll() is None

    def send(self, op: str, payload: Any) -> None:
        assert self.proc.stdin is not None
        pickle.dump((op, payload), self.proc.stdin, protocol=pickle.HIGHEST_PROTOCOL)
        self.proc.stdin.flush()

    def receive(self) -> tuple[Any, ...]:
        assert self.proc.stdout is not None
        return tuple(pickle.load(self.proc.stdout))

    def close(self) -> None:
        """End of input: the logger writes what it has and exits (a run still open ends KILLED)."""
        with contextlib.suppress(OSError):
            if self.proc.stdin is not None:
                self.proc.stdin.close()


class Pool:
    """Idle logging processes of this Python process: one is started as early as the command line
    allows (`gepa_lab.__main__`), else when a tracker is built, so it imports MLflow while the run
    gets ready; it serves run after run (tests, sequential sweeps)."""

    def __init__(self) -> None:
        self.idle: list[LoggerProcess] = []
        self.lock = threading.Lock()

    def prespawn(self, store: str) -> None:
        self.release(self.acquire(store))

    def acquire(self, store: str) -> LoggerProcess:
        """An idle logger, one warmed up for this kind of store if there is one."""
        with self.lock:
            self.idle = [w for w in self.idle if w.alive()]
            if self.idle:
                worker = ([w for w in self.idle if w.store == store] or self.idle)[-1]
                self.idle.remove(worker)
                return worker
        return LoggerProcess(store)

    def release(self, worker: LoggerProcess) -> None:
        if worker.alive():
            with self.lock:
                self.idle.append(worker)

    def close(self) -> None:
        """At exit. An idle logger has written everything it was given (or was never used, e.g. a
        config error after the early start): stopped now, it does not finish importing MLflow for
        nothing."""
        with self.lock:
            for worker in self.idle:
                if worker.alive():
                    worker.proc.kill()
            self.idle = []


POOL = Pool()
atexit.register(POOL.close)
