"""The MLflow logging process: it does every MLflow call of `MlflowTracker`, off the engine.

Why a process and not a thread: on the default recipe run MLflow's client costs several times the
search itself in CPU (importing mlflow, opening the store, SQLAlchemy per call), all of it under
the GIL; in its own process it runs on another core (experiments/reports/mlflow_logging_cost.md).

Protocol: the tracker writes pickled `(op, payload)` messages to this process's stdin; one reader
thread moves them into a bounded queue (when it is full the pipe fills and the engine's write
waits: back-pressure, bounded memory) and the main loop runs them in order. Replies go back on the
original stdout (`started` after a start, `ended` after an end); fd 1
itself is pointed at stderr so a stray print cannot corrupt them. Payloads are plain data built
by the tracker. The process serves one run after another; it exits at end of input. If input
ends while a run is open (the engine process was killed), it writes everything it received and
ends the parent run KILLED with `stop_reason=killed`.

Run as a script (`python -P mlflow_worker.py [sql|rest]`, what to import before the first run): it
imports no gepa_lab module (start-up time) until an MLflow call fails (`describe`).
Only MLflow's public client API is used.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import math
import os
import pickle
import queue
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

RUN_FILE = "mlflow_run.json"  # in the run dir: the parent run a resume continues
LOCK_FILE = "mlflow.lock"  # in the run dir: held while a logging process writes the run
PARENT_RUN_TAG = "mlflow.parentRunId"  # MLflow's own: the UI links a candidate to its parent
LINK_TAG = "gepa.parent_run_id"  # ours: filterable (candidates live in a sibling experiment)
DESCRIPTION_TAG = "mlflow.note.content"  # MLflow's run description (markdown)
NOTES_MARKER = "\n\n---\n### Researcher's notes\n"  # what follows it in a description is the notes'
VIEW_TAG = "mlflow.sharedViewState."  # + key: a runs-table view the UI opens with ?viewStateShareKey=key
MAX_PENDING = 256  # messages read ahead of the MLflow calls
MAX_REPORTED_ERRORS = 20
UPLOAD_THREADS = 4  # candidate runs logged at once against a server
FLUSH_EVERY_S = 2.0  # the parent's per-iteration metrics and proposals table: one write per this long


def describe(exc: BaseException) -> str:
    """`Type: message` on one line, credentials redacted: gepa_lab's own, imported on this error
    path only (these texts become MLflow tags, and an error may echo a URL's password)."""
    from gepa_lab.core.errors import describe as one_line

    return one_line(exc)


def sqlite_path(uri: str) -> Path | None:
    """The database file of a `sqlite:///...` URI (relative paths against the cwd)."""
    if not uri.startswith("sqlite:///"):
        return None
    raw = uri[len("sqlite:///"):].split("?", 1)[0]
    return Path(raw).resolve() if raw and raw != ":memory:" else None


def git_commit(path: str) -> str | None:
    """HEAD of the git checkout holding `path` (`git rev-parse`: MLflow's own helper imports
    GitPython, a tenth of a second this process would spend before the first run)."""
    try:
        done = subprocess.run(["git", "-C", path, "rev-parse", "HEAD"], capture_output=True, text=True, timeout=10)
    except (OSError, subprocess.SubprocessError):
        return None
    return (done.stdout.strip() or None) if done.returncode == 0 else None


def locked(path: Path) -> IO[str]:
    """`path` opened and locked, exclusively, until it is closed (waits for another holder)."""
    handle = open(path, "a")  # noqa: SIM115 (the caller closes it)
    fcntl.flock(handle, fcntl.LOCK_EX)
    return handle


def search_all(client: Any, experiment_ids: list[str], filter_string: str) -> list[Any]:
    """Every run of the experiments that matches, page after page."""
    runs: list[Any] = []
    token = None
    while True:
        page = client.search_runs(experiment_ids, filter_string, max_results=1000, page_token=token)
        runs += page
        token = page.token
        if not token:
            return runs


def metric_list(values: dict[str, float], step: int) -> list[Any]:
    from mlflow.entities import Metric

    now = int(time.time() * 1000)
    return [Metric(k, v, now, step) for k, v in values.items()]


def tag_list(tags: dict[str, str]) -> list[Any]:
    from mlflow.entities import RunTag

    return [RunTag(k, v) for k, v in tags.items()]


@dataclass
class RunState:
    """One parent run as this process knows it."""

    run_id: str
    experiment_id: str
    candidates_experiment_id: str
    common: dict[str, str]  # tags every candidate run repeats
    artifact_uri: str  # where the parent's files go
    lock: IO[str] | None = None
    logged_keys: set[str] = field(default_factory=set)  # candidate runs in the store (gepa.key)
    logged_steps: set[int] = field(default_factory=set)  # parent metric steps in the store
    nested: dict[str, str] = field(default_factory=dict)  # candidate id -> its run id
    pending: dict[int, dict[str, float]] = field(default_factory=dict)  # step -> metrics not yet logged
    rows: dict[int, dict[str, Any]] = field(default_factory=dict)  # iteration -> row not yet in the table
    rows_written: set[int] = field(default_factory=set)  # iterations in the proposals table
    table_due: bool = False  # a round ended with rows to write: write them when idle
    flushed_at: float = 0.0  # time.monotonic() of the last write of metrics / table
    ended: bool = False


class Logger:
    """Runs the tracker's messages against MLflow. An MLflow failure is counted, never raised."""

    def __init__(self, reply: Callable[[tuple[Any, ...]], None]):
        self.reply = reply
        self.client: Any = None
        self.uri = ""
        self.run: RunState | None = None
        self.errors: list[str] = []
        self.start_error: str | None = None
        self.reuse: int | None = None  # the store's runs already decided on this run's holdout split
        self.uploads: ThreadPoolExecutor | None = None  # against a server: candidate runs in parallel
        self.in_flight: list[Future[None]] = []

    def _safe(self, what: str, fn: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
        try:
            return fn(*args, **kwargs)
        except Exception as exc:  # any MLflow / IO failure: count and report, keep logging
            self.errors.append(f"{what}: {describe(exc)}")
            return None

    def state(self) -> dict[str, Any]:
        """What the tracker learns in a reply (errors capped: a reply never fills the pipe)."""
        run = self.run
        return {"run_id": run.run_id if run else None, "experiment_id": run.experiment_id if run else None,
                "candidates_experiment_id": run.candidates_experiment_id if run else None, "uri": self.uri,
                "errors": self.errors[:MAX_REPORTED_ERRORS], "error_count": len(self.errors),
                "start_error": self.start_error, "holdout_reuse": self.reuse,
                "cpu_s": _cpu_s(), "warm_up_cpu_s": WARM_UP_CPU_S}

    # -- start ------------------------------------------------------------------------------------
    def start(self, p: dict[str, Any]) -> None:
        self.run, self.errors, self.start_error, self.uri, self.reuse = None, [], None, p["uri"], None
        os.environ.update(p["env"])
        created = False
        try:
            created = self._start(p)
        except Exception as exc:
            self.start_error = describe(exc)
            if self.run is not None:
                self._safe("mark the parent run FAILED", self.client.set_terminated, self.run.run_id, "FAILED")
                self._release()
                self.run = None
        if self.run is not None and p["holdout_digest"]:
            self.reuse = self._safe("count the runs decided on this holdout split", self._holdout_reuse,
                                    p["holdout_digest"], self.run.run_id)
        self.reply(("started", self.state()))
        # A new parent exists and the engine knows its id: its first files and inputs are logged
        # after the reply, and a failure in them is counted, not fatal (like every later one).
        if created and self.run is not None:
            self._safe("log the config and seed files", self._upload, self.run.artifact_uri, p["files"])
            self._safe("log the dataset inputs", self._log_inputs, self.run.run_id, p)

    def _start(self, p: dict[str, Any]) -> bool:
        """Open (or reopen) the parent run; True when it is new."""
        from mlflow import MlflowClient

        if self.uri.startswith(("http://", "https://")) and self.uploads is None:
            self.uploads = ThreadPoolExecutor(UPLOAD_THREADS, thread_name_prefix="mlflow-upload")

        # A SQLite store's tables are created (or upgraded) by one process at a time: MLflow's own
        # initialisation races when parallel sweep jobs open a new store. Other stores need no lock.
        db = sqlite_path(self.uri)
        # (A client is cheap: MLflow opens the store once per process and URI, and caches it.)
        with locked(db.with_name(db.name + ".lock")) if db else contextlib.nullcontext():
            self.client = MlflowClient(tracking_uri=self.uri)
            experiment_id, candidates_id = (self._experiment(*experiment) for experiment in p["experiments"])
        run_dir = Path(p["run_dir"]) if p["run_dir"] else None
        lock = None
        if run_dir is not None:  # a resumed run waits here for a logging process still writing its interrupted part
            run_dir.mkdir(parents=True, exist_ok=True)
            lock = locked(run_dir / LOCK_FILE)  # held until the run ends
        reopened = bool(p["reopen"]) and self._reopen(p["reopen"], p, lock)
        if not reopened:
            self._create_parent(p, experiment_id, candidates_id, lock)
        assert self.run is not None
        if run_dir is not None:
            tmp = run_dir / f".{RUN_FILE}.tmp"
            tmp.write_text(json.dumps({"run_id": self.run.run_id, "experiment_id": self.run.experiment_id,
                                       "tracking_uri": self.uri}, indent=2) + "\n", encoding="utf-8")
            os.replace(tmp, run_dir / RUN_FILE)
        return not reopened

    def _holdout_reuse(self, digest: str, run_id: str) -> int:
        """Parent runs anywhere in the store, this one aside, already decided on this holdout split."""
        experiments, token = [], None
        while True:
            page = self.client.search_experiments(max_results=1000, page_token=token)
            experiments += [e.experiment_id for e in page]
            token = page.token
            if not token:
                break
        decided = (f"tags.`dataset.digest.holdout` = '{digest}' and tags.`gepa.run_kind` = 'parent' "
                   "and metrics.promotion_eligible >= 0")
        return sum(run.info.run_id != run_id for run in search_all(self.client, experiments, decided))

    def _experiment(self, name: str, location: str | None, view: tuple[str, dict[str, Any]]) -> str:
        """The experiment's id, created if missing, with the runs-table view it opens with."""
        from mlflow.exceptions import MlflowException

        key, state = VIEW_TAG + view[0], json.dumps(view[1])
        found = self.client.get_experiment_by_name(name)
        if found is None:
            with contextlib.suppress(MlflowException):  # created concurrently by a sibling job of a multirun
                self.client.create_experiment(name, artifact_location=location, tags={key: state})
            found = self.client.get_experiment_by_name(name)
            if found is None:
                raise LookupError(f"MLflow experiment {name!r} could not be created")
        if found.tags.get(key) != state:  # a store written by another gepa-lab version
            self.client.set_experiment_tag(found.experiment_id, key, state)
        return str(found.experiment_id)

    def _release(self) -> None:
        if self.run is not None and self.run.lock is not None:
            self.run.lock.close()  # releases the lock
            self.run.lock = None

    def _create_parent(self, p: dict[str, Any], experiment_id: str, candidates_id: str, lock: IO[str] | None) -> None:
        from mlflow.entities import Param
        from mlflow.utils.mlflow_tags import MLFLOW_GIT_COMMIT

        client = self.client
        tags = {**p["tags"], DESCRIPTION_TAG: p["description"], "gepa.candidates_experiment_id": candidates_id}
        # The client adds no source tags (only fluent start_run does): the commit of the gepa_lab
        # checkout, else of the working directory; none outside a git checkout.
        commit = next(filter(None, map(git_commit, p["git_paths"])), None)
        if commit:
            tags[MLFLOW_GIT_COMMIT] = commit
        info = client.create_run(experiment_id, start_time=p["start_ms"], tags=tags, run_name=p["run_name"]).info
        run_id = info.run_id
        self.run = RunState(run_id, experiment_id, candidates_id, p["common"], info.artifact_uri, lock)
        # `first_metric` is NaN (undecided) until the end: logged first, it is the metric MLflow's
        # comparison plots by default (the UI takes a run's metrics in the order they were created).
        client.log_batch(run_id, params=[Param(k, v) for k, v in p["params"].items()],
                         metrics=metric_list({p["first_metric"]: math.nan}, step=0))

    def _log_inputs(self, run_id: str, p: dict[str, Any]) -> None:
        """One input per split (context = split); MLflow's digest is a 36-char prefix of ours."""
        import pandas as pd
        from mlflow.data.code_dataset_source import CodeDatasetSource
        from mlflow.data.pandas_dataset import from_pandas
        from mlflow.entities import Dataset, DatasetInput, InputTag
        from mlflow.utils.mlflow_tags import MLFLOW_DATASET_CONTEXT
        from tenacity import Retrying, stop_after_attempt, wait_incrementing

        source = CodeDatasetSource({"gepa_lab.run_dir": p["run_dir"] or ""})
        inputs = []
        for split in p["inputs"]:
            frame = pd.DataFrame(split["rows"], columns=["id", "input", "expected", "critical", "metadata"])
            data = from_pandas(frame, source=source, name=split["name"], digest=split["digest"][:36])
            inputs.append(DatasetInput(Dataset(**data.to_dict()), [
                InputTag(MLFLOW_DATASET_CONTEXT, split["split"]), InputTag("sha256", split["digest"]),
                InputTag("dataset.version", split["version"])]))
        # Parallel jobs registering one new dataset: MLflow's insert races (PostgreSQL).
        for attempt in Retrying(stop=stop_after_attempt(3), wait=wait_incrementing(0.5, 0.5), reraise=True):
            with attempt:
                self.client.log_inputs(run_id, datasets=inputs)

    # -- resume -----------------------------------------------------------------------------------
    def _reopen(self, run_id: str, p: dict[str, Any], lock: IO[str] | None) -> bool:
        """Continue the interrupted run's parent; learn what it already holds so replayed
        iterations are not logged twice. False: no such run in this store."""
        from mlflow.exceptions import MlflowException

        client = self.client
        try:
            parent = client.get_run(run_id)
        except MlflowException:
            return False
        if parent.info.lifecycle_stage != "active":
            return False
        tags = parent.data.tags
        candidates_id = tags.get("gepa.candidates_experiment_id") or self._experiment(*p["experiments"][1])
        self.run = run = RunState(run_id, parent.info.experiment_id, candidates_id, p["common"],
                                  parent.info.artifact_uri, lock)
        client.update_run(run_id, status="RUNNING")
        client.log_batch(run_id, tags=tag_list({"resume_count": str(int(tags.get("resume_count", "0")) + 1),
                                                "promotion_eligible": "pending"}))
        for stale in ("error", "stop_reason"):  # the interruption's outcome; interruptions/ keeps it
            if stale in tags:
                client.delete_tag(run_id, stale)
        for child in search_all(client, [run.candidates_experiment_id], f"tags.`{LINK_TAG}` = '{run_id}'"):
            if child.info.status != "FINISHED":  # cut short mid-write: logged again when replayed
                client.delete_run(child.info.run_id)
                continue
            run.logged_keys.add(child.data.tags.get("gepa.key", ""))
            if child.data.tags.get("candidate_id"):
                run.nested[child.data.tags["candidate_id"]] = child.info.run_id
        run.logged_steps = {m.step for m in client.get_metric_history(run_id, "search/best_validation_mean")}
        run.rows_written = {int(row["iteration"]) for row in self._read_table(run_id, "proposals.json")}
        resume_at = p["resume_iteration"] or 0
        missing = sorted(set(range(resume_at)) - run.logged_steps)
        if missing:  # a logging process killed with the engine: documented loss, said where it is
            client.set_tag(run_id, "mlflow_tracker.missing_iterations",
                           f"{len(missing)} iteration(s) between {missing[0]} and {missing[-1]} are not in "
                           "MLflow (the logging process was killed); the run record has them")
        return True

    def _read_table(self, run_id: str, path: str) -> list[dict[str, Any]]:
        with tempfile.TemporaryDirectory() as tmp:
            try:
                local = self.client.download_artifacts(run_id, path, tmp)
            except Exception:  # never written (a run killed early): nothing to continue from
                return []
            stored = json.loads(Path(local).read_text(encoding="utf-8"))
        return [dict(zip(stored["columns"], row, strict=True)) for row in stored["data"]]

    # -- during the search ------------------------------------------------------------------------
    def candidate(self, p: dict[str, Any]) -> None:
        """A pool member (the seed or an accepted child): one run in the candidates experiment.
        Against a server, logged by a few threads at once (each run is a handful of round trips
        that depend on no other run's); the parent's writes wait for them (`_drain`)."""
        run = self.run
        if run is None or p["key"] in run.logged_keys:
            return  # no parent (start failed), or a replayed iteration already logged
        run.logged_keys.add(p["key"])  # claimed now: a replay of it queued behind is skipped
        if self.uploads is not None:
            self.in_flight.append(self.uploads.submit(self._candidate_run, run, p))
        else:
            self._candidate_run(run, p)

    def _candidate_run(self, run: RunState, p: dict[str, Any]) -> None:
        run_id = self._safe(f"log candidate {p['name']}", self._log_candidate, run, p)
        if run_id:
            run.nested[p["candidate_id"]] = run_id
        else:
            run.logged_keys.discard(p["key"])

    def _drain(self) -> None:
        """Wait for the candidate runs being logged (before the parent's end, or a reply)."""
        for future in self.in_flight:
            future.result()
        self.in_flight = []

    def _log_candidate(self, run: RunState, p: dict[str, Any]) -> str:
        """create (tags) -> metrics -> files -> FINISHED; a run cut short ends FAILED (a resume
        replaces it)."""
        client = self.client
        tags = {**run.common, **p["tags"], "gepa.run_kind": "candidate", "gepa.key": p["key"],
                PARENT_RUN_TAG: run.run_id, LINK_TAG: run.run_id}
        info = client.create_run(run.candidates_experiment_id, tags=tags, run_name=p["name"]).info
        run_id: str = info.run_id
        try:
            client.log_batch(run_id, metrics=metric_list(p["metrics"], step=0))
            self._upload(info.artifact_uri, p["files"])
        except BaseException:
            self._safe("end an unfinished candidate run", client.set_terminated, run_id, "FAILED")
            raise
        client.set_terminated(run_id, "FINISHED")
        return run_id

    def _upload(self, artifact_uri: str, files: dict[str, Any]) -> None:
        """Every file of a run in one `log_artifacts` call: text, bytes (PNG) or JSON, straight to
        the run's artifact repository (the client's `log_artifacts` would fetch the run again to
        learn its `artifact_uri`)."""
        from mlflow.store.artifact.artifact_repository_registry import get_artifact_repository

        with tempfile.TemporaryDirectory() as tmp:
            for name, content in files.items():
                path = Path(tmp) / name
                path.parent.mkdir(parents=True, exist_ok=True)
                if isinstance(content, bytes):
                    path.write_bytes(content)
                elif isinstance(content, str):
                    path.write_text(content, encoding="utf-8")
                else:
                    path.write_text(json.dumps(content, indent=2, ensure_ascii=False, default=str), encoding="utf-8")
            get_artifact_repository(artifact_uri, tracking_uri=self.uri).log_artifacts(tmp)

    def row(self, p: dict[str, Any]) -> None:
        if self.run is not None and int(p["iteration"]) not in self.run.rows_written:
            self.run.rows[int(p["iteration"])] = p

    def series(self, p: tuple[int, dict[str, float]]) -> None:
        """An iteration's metrics: the iteration is over, so its row may go to the table too (an
        engine that does not call `round_end` still gets its table written as it goes)."""
        step, values = p
        if self.run is not None and step not in self.run.logged_steps:
            self.run.pending[step] = values
        self.round_end(None)

    def round_end(self, _: Any) -> None:
        """The round's rows are due in the table (written when idle, at most every FLUSH_EVERY_S)."""
        if self.run is not None and self.run.rows:
            self.run.table_due = True

    def tags(self, p: dict[str, str]) -> None:
        if self.run is not None:
            self._safe("set tags", self.client.log_batch, self.run.run_id, tags=tag_list(p))

    def wait_s(self) -> float | None:
        """How long the main loop may wait for a message before `idle()` has something to write."""
        run = self.run
        if run is None or run.ended or not (run.pending or run.table_due):
            return None
        return max(0.0, run.flushed_at + FLUSH_EVERY_S - time.monotonic())

    def idle(self) -> None:
        """Nothing queued: write what waits, at most once per FLUSH_EVERY_S (a fast search's
        iterations then share one `log_batch` and one table append: fewer round trips to a
        server; a slow one's are written within seconds of their round's end)."""
        run = self.run
        if run is None or run.ended or self.wait_s() != 0.0:
            return
        self._flush(table=run.table_due)
        run.flushed_at = time.monotonic()

    def _flush(self, table: bool = True) -> None:
        """Log the pending per-iteration metrics (one call: the client splits it into batches of
        MLflow's limit) and, with `table`, append the rows not yet in the proposals table
        (`log_table` appends to an existing table)."""
        run = self.run
        assert run is not None
        if run.pending:
            metrics = [m for step, values in sorted(run.pending.items()) for m in metric_list(values, step)]
            self._safe("log the per-iteration metrics", self.client.log_batch, run.run_id, metrics=metrics)
            run.logged_steps |= set(run.pending)
            run.pending = {}
        if not table:
            return
        run.table_due = False
        if not run.rows:
            return
        rows = [run.rows[i] for i in sorted(run.rows)]
        columns = list(dict.fromkeys(k for row in rows for k in row))
        try:
            self.client.log_table(run.run_id, {c: [row.get(c) for row in rows] for c in columns}, "proposals.json")
        except Exception as exc:  # kept for the next write
            self.errors.append(f"log the proposals table: {describe(exc)}")
            return
        run.rows_written |= set(run.rows)
        run.rows = {}

    # -- the end ----------------------------------------------------------------------------------
    def decision(self, p: dict[str, Any]) -> None:
        """The run's outcome (metrics, tags, description, files, tables); `end` follows with the
        plots, which the engine draws meanwhile."""
        run = self.run
        if run is None or run.ended:
            return
        self._drain()
        self._flush()
        client = self.client
        notes = self._safe("read the run's notes", self._notes, run.run_id) or ""
        self._safe("log the decision", client.log_batch, run.run_id, metrics=metric_list(p["metrics"], step=0),
                   tags=tag_list({**p["tags"], DESCRIPTION_TAG: p["description"] + notes}))
        self._safe("log the decision files", self._upload, run.artifact_uri, p["files"])
        for name, table in p["tables"].items():
            self._safe(f"log {name}", client.log_table, run.run_id, table, name)
        best = run.nested.get(p["best_id"])
        if best is not None:
            self._safe("tag the best candidate", client.set_tag, best, "is_best", "true")

    def _notes(self, run_id: str) -> str:
        """The researcher's notes already in the description (added while the run ran)."""
        text = self.client.get_run(run_id).data.tags.get(DESCRIPTION_TAG, "")
        return text[text.index(NOTES_MARKER):] if NOTES_MARKER in text else ""

    def end(self, p: dict[str, Any]) -> None:
        """The engine's finish() (with the plots) or fail() (with the error): the run ends."""
        self._end(p)
        self.reply(("ended", self.state()))

    def lost(self) -> None:
        """Input ended with a run open: the engine process died without finish() or fail()."""
        self._end({"status": "KILLED", "tags": {"stop_reason": "killed", "promotion_eligible": "false",
                                                "promotion_reason": "run did not finish (its process was killed)"}})

    def _end(self, p: dict[str, Any]) -> None:
        """End the open parent run, if any, with `status` and `tags`, once what is still pending is
        written (the `plots` and the `error` (text, file), if any)."""
        run = self.run
        if run is None or run.ended:
            return
        if p.get("plots"):
            self._safe("log the plots", self._upload, run.artifact_uri, p["plots"])
        self._drain()
        self._flush()
        if p.get("error"):  # kept as history: a later resume finishes the run, the file says when it stopped
            self._safe("log the error", self.client.log_text, run.run_id, *p["error"])
        tags = {**p["tags"], "mlflow_tracker.errors": str(len(self.errors))}
        if self.errors:
            tags["mlflow_tracker.first_error"] = self.errors[0][:8000]
        self._safe("log the tracker status", self.client.log_batch, run.run_id, tags=tag_list(tags))
        self._safe("end the parent run", self.client.set_terminated, run.run_id, p["status"])
        run.ended = True
        self._release()


def _read(inbox: IO[bytes], messages: queue.Queue[Any]) -> None:
    try:
        while True:
            messages.put(pickle.load(inbox))
    except (EOFError, OSError, pickle.UnpicklingError):
        messages.put(None)


def serve(inbox: IO[bytes], outbox: IO[bytes]) -> None:
    def reply(message: tuple[Any, ...]) -> None:
        with contextlib.suppress(BrokenPipeError):  # the engine process is gone: keep writing what it has
            pickle.dump(message, outbox, protocol=pickle.HIGHEST_PROTOCOL)
            outbox.flush()

    messages: queue.Queue[Any] = queue.Queue(MAX_PENDING)
    threading.Thread(target=_read, args=(inbox, messages), daemon=True).start()
    logger = Logger(reply)
    while True:
        try:
            message = messages.get(timeout=logger.wait_s())
        except queue.Empty:  # pending writes are due
            logger.idle()
            continue
        if message is None:
            break
        op, payload = message
        getattr(logger, op)(payload)
        if messages.empty():
            logger.idle()
    logger.lost()


WARM_UP_CPU_S = 0.0  # this process's CPU seconds when its warm-up was done (in replies: benchmarks)


def _cpu_s() -> float:
    times = os.times()
    return times.user + times.system


def warm_up(store: str) -> None:
    """Import what the first run needs while the engine still loads its data (the process is
    started when the tracker is built): MLflow's client and dataset inputs, and for a database
    store (`store` = "sql") MLflow's SQL store (SQLAlchemy models, Alembic) -- seconds the engine
    would otherwise wait for."""
    import mlflow.data.pandas_dataset  # noqa: F401
    from mlflow import MlflowClient  # noqa: F401

    if store == "sql":
        import mlflow.store.tracking.sqlalchemy_store  # noqa: F401


def main() -> None:
    outbox = os.fdopen(os.dup(1), "wb")
    os.dup2(2, 1)  # prints from any library go to stderr, never into the replies
    import logging

    logging.basicConfig(level=logging.WARNING, format="[mlflow logger] %(levelname)s %(name)s: %(message)s")
    global WARM_UP_CPU_S
    warm_up(sys.argv[1] if len(sys.argv) > 1 else "sql")
    WARM_UP_CPU_S = _cpu_s()
    serve(sys.stdin.buffer, outbox)
    # Everything is written (MLflow's calls are synchronous, replies flushed). Skip the interpreter's
    # teardown of MLflow, pandas, SQLAlchemy: it would hold the engine's stderr open for a second
    # after the run, and a command piped through `tee` would wait for it.
    os._exit(0)


if __name__ == "__main__":
    main()
