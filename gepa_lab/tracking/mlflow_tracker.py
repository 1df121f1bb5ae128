"""MLflow tracking (docs/design.md §6; the layout: the README, "Comparing runs in MLflow"), logged by
a separate process (`mlflow_logger.py`): each hook writes its event to that process's pipe and
returns. One logging process starts early (`gepa_lab.__main__`, else when a tracker is built),
imports MLflow while the run gets ready and serves run after run. The engine waits only at start
for a remote store (a bad store fails before anything is spent), in `links()` until the parent run
exists and at the end until everything is written. After `start()` an MLflow error never stops the
search: it is counted, tagged on the parent run (`mlflow_tracker.errors`, `.first_error`), warned of."""

from __future__ import annotations

import atexit
import contextlib
import functools
import logging
import os
import pickle
import queue
import subprocess
import sys
import threading
import time
import traceback
import urllib.parse
import warnings
from pathlib import Path
from typing import Any

from gepa_lab.core.errors import TrackingError, describe
from gepa_lab.core.events import CandidateInfo, RunInfo
from gepa_lab.core.redact import redact
from gepa_lab.core.result import Result
from gepa_lab.runs.files import read_dict
from gepa_lab.tracking import mlflow_links
from gepa_lab.tracking import mlflow_values as values
from gepa_lab.tracking.mlflow_links import sqlite_path
from gepa_lab.tracking.mlflow_values import RUN_FILE

log = logging.getLogger("gepa_lab.mlflow")
DEFAULT_EXPERIMENT = "gepa-lab"


def pack(message: Any) -> bytes:
    """A message's pickle, pickled again: read whole even if a class of it cannot be loaded."""
    return pickle.dumps(pickle.dumps(message, protocol=pickle.HIGHEST_PROTOCOL), protocol=pickle.HIGHEST_PROTOCOL)


def default_uri() -> str:
    """As MLflow itself: $MLFLOW_TRACKING_URI, else `mlflow.db` in the working directory (absolute)."""
    return os.environ.get("MLFLOW_TRACKING_URI") or f"sqlite:///{Path.cwd().resolve() / 'mlflow.db'}"


def candidates_experiment(experiment: str) -> str:
    """The sibling experiment holding the pool members' runs of `experiment`'s parent runs."""
    return f"{experiment}-candidates"


def run_links(uri: str, experiment_id: str, run_id: str, run_name: str) -> dict[str, str]:
    """Ids, the run's link and name, the command that serves it (a local store), the URI (no password)."""
    out = {"mlflow_run_id": run_id, "mlflow_experiment_id": experiment_id, "mlflow_run_name": run_name,
           "mlflow_run_url": mlflow_links.experiment_url(uri, experiment_id)}
    if command := mlflow_links.ui_command(uri):
        out["mlflow_ui_command"] = command
    return out | ({"mlflow_tracking_uri": uri} if urllib.parse.urlsplit(uri).password is None else {})


IDLE: list[subprocess.Popen[bytes]] = []  # logging processes that wait for a run


def prespawn() -> None:
    """A logging process, importing MLflow while this one gets ready."""
    IDLE[:] = [p for p in IDLE if p.poll() is None]
    if not IDLE:
        IDLE.append(subprocess.Popen([sys.executable, "-P", "-m", __spec__.name], stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, env={**mlflow_links.ENV_DEFAULTS, **os.environ},
                                     start_new_session=True))  # the run's Ctrl-C is not its to get


@atexit.register
def _stop_idle() -> None:
    """Idle loggers have written everything (or never ran: a config error after the early start)."""
    for process in IDLE:
        process.kill()


class MlflowTracker:
    """The `Tracker` that logs runs to MLflow (`conf/tracking/mlflow.yaml`); a run arrives in `start`."""

    def __init__(self, uri: str | None = None, experiment: str = DEFAULT_EXPERIMENT,
                 artifact_location: str | None = None, plots: bool = True):
        self.uri = uri or default_uri()
        self._uri_chosen = uri is not None or bool(os.environ.get("MLFLOW_TRACKING_URI"))
        self.experiment = experiment  # the MLflow experiment (the gepa experiment is a tag)
        self.artifact_location = artifact_location  # for a new experiment; None: beside a SQLite db
        self.plots = plots
        self.process: subprocess.Popen[bytes] | None = None
        self.state: dict[str, Any] = {}  # the logger's last reply: ids, errors, its CPU seconds
        self._errors: list[str] = []  # this side's: an event that could not be sent, a lost logger
        prespawn()

    @property
    def run_id(self) -> str | None:
        return self.state.get("run_id")

    @property
    def errors(self) -> list[str]:
        return [*self.state.get("errors", []), *self._errors]

    def _send(self, method: str, *args: Any) -> None:
        if self.process is None:
            return
        try:
            self.process.stdin.write(pack((method, args)))  # type: ignore[union-attr]
            self.process.stdin.flush()  # type: ignore[union-attr]
        except OSError as exc:  # the logger died: the search goes on, the run record has everything
            self._lost(f"{method}: {describe(exc)}")
        except Exception as exc:  # a value that cannot be pickled: that event is missing, nothing else
            self._errors.append(f"log {method}: {describe(exc)}")

    def _await(self, kind: str) -> None:
        """Read the logger's replies up to a `kind` one (or until the logger is gone)."""
        while self.process is not None and self.state.get("reply") != kind:
            try:
                got, state = pickle.loads(pickle.load(self.process.stdout))  # type: ignore[arg-type]
            except (EOFError, OSError, pickle.UnpicklingError) as exc:
                self._lost(f"waiting for {kind}: {describe(exc)}")
                return
            self.state = {**state, "reply": got}

    def _lost(self, what: str) -> None:
        code = self.process.poll() if self.process is not None else None
        self._errors.append(f"{what} (the MLflow logging process ended, exit code {code})")
        self.process = None
        log.warning("MLflow logging stopped: %s; the run record in the run dir has everything", self._errors[-1])

    def start(self, run: RunInfo) -> None:
        if self.process is not None:  # started again without an end: the old run ends KILLED
            self.process.stdin.close()  # type: ignore[union-attr]
        self.process, self.state, self._errors = None, {}, []
        # The MLflow run (id, store) of the run this one resumes; none readable: a new MLflow run.
        stored = read_dict(Path(run.run_dir) / RUN_FILE) if run.resume and run.run_dir else {}
        if stored.get("tracking_uri") and not self._uri_chosen:
            self.uri = str(stored["tracking_uri"])  # the interrupted run's store, wherever we run now
        if (db := sqlite_path(self.uri)) is not None:
            self.uri = f"sqlite:///{db}"  # the logger runs elsewhere: no relative paths
        self._preflight(db)
        prespawn()
        self.process = IDLE.pop()
        names = (self.experiment, candidates_experiment(self.experiment))
        env = {k: v for k, v in os.environ.items() if k.startswith("MLFLOW_")}
        self._send("start", self.uri, run, self.plots, [(name, self._location(db, name)) for name in names],
                   stored.get("run_id"), env)
        if db is None and not self._opened():  # a remote store: fail now, before anything is spent
            self.process = None
            raise TrackingError(f"cannot log to MLflow at {mlflow_links.masked(self.uri)}: "
                                f"{self.state.get('start_error') or self._errors[-1]}")

    def _preflight(self, db: Path | None) -> None:
        """What would fail late: MLflow retries a server for minutes; SQLite needs a writable folder."""
        if (why := mlflow_links.unreachable(self.uri)) is not None:
            raise TrackingError(why)
        try:
            if db is not None:
                db.parent.mkdir(parents=True, exist_ok=True)
                db.open("ab").close()
        except OSError as exc:
            raise TrackingError(f"cannot write the MLflow store {db} ({exc.strerror or exc}); run from a writable "
                                "directory or set tracking.uri=sqlite:///<writable path>/mlflow.db") from exc

    def _location(self, db: Path | None, experiment: str) -> str | None:
        """Artifacts of a new experiment: as configured, else `mlruns/<experiment>` beside SQLite."""
        if self.artifact_location is not None:
            return self.artifact_location.rstrip("/") + ("" if experiment == self.experiment else f"/{experiment}")
        safe = "".join(c if c.isalnum() or c in "_.-" else "_" for c in experiment)
        return (db.parent / "mlruns" / safe).as_uri() if db is not None else None

    def _opened(self) -> bool:
        """Wait until the parent run exists; True when it does."""
        if "reply" not in self.state:
            self._await("opened")
            if error := self.state.get("start_error"):
                log.warning("MLflow logging failed at start (%s); the run record in the run dir has everything", error)
        return bool(self.run_id)

    def links(self) -> dict[str, str]:
        return run_links(self.uri, self.state["experiment_id"], str(self.run_id), self.state["run_name"]) \
            if self._opened() else {}

    def candidate(self, info: CandidateInfo) -> None:
        """The seed's run. (An accepted child is logged with its proposal, which follows.)"""
        if info.parent_id is None:
            self._send("candidate", info)

    proposal = functools.partialmethod(_send, "proposal")
    iteration = functools.partialmethod(_send, "iteration")
    note = functools.partialmethod(_send, "note")

    def finish(self, result: Result) -> None:
        self._send("decision", result)
        self._send("end", "FINISHED", {}, result)
        self._close()

    def fail(self, error: BaseException) -> None:
        """The run ends KILLED (Ctrl-C) or FAILED with the error, redacted (it may echo an API key)."""
        killed, name = isinstance(error, KeyboardInterrupt), type(error).__name__
        tags = {"error": values.clip(describe(error)), "stop_reason": "interrupted" if killed else "error",
                "promotion_eligible": "false", "promotion_reason": f"run did not finish ({name})"}
        text = (redact("".join(traceback.format_exception(error))),
                f"interruptions/{time.strftime('%Y%m%d-%H%M%S')}-{name}.txt")
        self._send("end", "KILLED" if killed else "FAILED", tags, None, text)
        self._close()

    def _close(self) -> None:
        """Wait until the logger has written everything (it replies `ended`), then free it."""
        if self.process is None:
            return
        self._await("ended")  # (a second Ctrl-C stops the wait; the logger finishes in the background)
        if self.process is not None and self.process.poll() is None:
            IDLE.append(self.process)
        self.process = None
        if self.errors:
            log.warning("MLflow run %s is missing data: %d logging call(s) failed (first: %s)",
                        self.run_id, self.state.get("error_count", 0) + len(self._errors), self.errors[0])


def main() -> None:
    """The logging process: events read from the start (the engine never waits), run by `mlflow_logger`."""
    outbox = os.fdopen(os.dup(1), "wb")  # the replies; fd 1 goes to stderr (a stray print cannot corrupt them)
    os.dup2(2, 1)
    messages: queue.Queue[bytes | None] = queue.Queue()

    def read() -> None:
        with contextlib.suppress(EOFError, OSError, pickle.UnpicklingError):
            while True:
                messages.put(pickle.load(sys.stdin.buffer))
        messages.put(None)

    def reply(message: tuple[str, dict[str, Any]]) -> None:
        with contextlib.suppress(OSError):  # the engine process is gone: keep writing what it sent
            outbox.write(pack(message))
            outbox.flush()

    threading.Thread(target=read, daemon=True).start()
    warnings.filterwarnings("ignore", module=r"mlflow(\.|$)")  # MLflow's about its own dependencies
    from gepa_lab.tracking.mlflow_logger import serve  # MLflow, imported while the engine gets ready

    serve(messages, reply)
    os._exit(0)  # all written and replied: skip the teardown of MLflow, pandas, SQLAlchemy (a `| tee` waits)


if __name__ == "__main__":
    main()
