"""The MLflow logging process's work (`mlflow_tracker.main`): every MLflow call, with MLflow's public
client API only. `serve` runs the engine's events in order against a `RunLogger` per run; input ending
with a run open (the engine was killed) ends it KILLED once all received is written. An MLflow
failure is counted, never raised: the run record in the run dir is the source of truth."""

from __future__ import annotations

import contextlib
import json
import math
import os
import pickle
import queue
import tempfile
import time
from collections.abc import Callable
from datetime import datetime
from pathlib import Path
from typing import Any

from filelock import FileLock
from mlflow import MlflowClient
from mlflow.entities import Dataset, DatasetInput, InputTag, Metric, Param, RunTag
from mlflow.exceptions import MlflowException
from mlflow.utils.git_utils import get_git_commit
from mlflow.utils.mlflow_tags import MLFLOW_DATASET_CONTEXT, MLFLOW_GIT_COMMIT
from tenacity import Retrying, stop_after_attempt, wait_incrementing

from gepa_lab.core.errors import describe
from gepa_lab.core.events import CandidateInfo, IterationStats, Proposal, RunInfo
from gepa_lab.core.result import Result
from gepa_lab.runs.files import write_text_atomic
from gepa_lab.tracking import mlflow_links as links
from gepa_lab.tracking import mlflow_values as values

FLUSH_EVERY_S = 2.0
KILLED = {"stop_reason": "killed", "promotion_eligible": "false",
          "promotion_reason": "run did not finish (its process was killed)"}


def _metrics(values: dict[str, float], step: int) -> list[Any]:
    return [Metric(k, v, int(time.time() * 1000), step) for k, v in values.items()]


def _tags(tags: dict[str, str]) -> list[Any]:
    return [RunTag(k, v) for k, v in tags.items()]


class RunLogger:
    """One run's MLflow calls, `method(*args)` per message; the `start` message opens its parent run."""

    def __init__(self, uri: str, run: RunInfo, plots: bool, experiments: list[tuple[str, str | None]],
                 reopen: str | None, env: dict[str, str]):
        os.environ.update(env)  # the engine's MLFLOW_* settings now, not when this process started
        self.uri, self.run, self.plots, self.common = uri, run, plots, values.common_tags(run)
        self.name = f"{run.name}-seed{run.search.random_seed}-{run.experiment_id[:8]}"
        self.client: Any = None
        self.lock: Any = None  # the run dir's mlflow.lock
        self.run_id: str | None = None
        self.experiment_id = self.candidates_id = ""
        self.errors: list[str] = []
        self.start_error: str | None = None
        # What the store holds (pool members by gepa.key, metric steps, table rows) and what waits.
        self.logged_keys, self.logged_steps, self.rows_written = set[str](), set[int](), set[int]()
        self.nested: dict[str, str] = {}  # candidate id -> its run id
        self.pending: dict[int, dict[str, float]] = {}  # step -> metrics
        self.rows: dict[int, dict[str, Any]] = {}  # iteration -> proposals-table row
        self.flushed_at, self.ended, self.search_calls = 0.0, False, 0
        try:
            created = self._open(experiments, reopen)
        except Exception as exc:
            self.start_error = describe(exc)
            if self.run_id is not None:
                self.safe("mark the parent run FAILED", self.client.set_terminated, self.run_id, "FAILED")
            self.run_id = None
            return
        if created:  # a failure from here on is counted, like every later one
            self.safe("log the config and seed files", self.files, self.run_id, values.parent_files(run)[1])
            self.safe("log the dataset inputs", self._inputs)

    def safe(self, what: str, fn: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
        try:
            return fn(*args, **kwargs)
        except Exception as exc:  # any MLflow / IO failure (or a bug in a payload): count it, keep logging
            self.errors.append(f"{what}: {describe(exc)}")
            return None

    def state(self) -> dict[str, Any]:
        """What the tracker learns in a reply (errors capped: a reply never fills the pipe)."""
        return {"run_id": self.run_id, "experiment_id": self.experiment_id, "start_error": self.start_error,
                "run_name": self.name, "errors": self.errors[:20], "error_count": len(self.errors)}

    def _open(self, experiments: list[tuple[str, str | None]], reopen: str | None) -> bool:
        """The parent run, reopened or new (True)."""
        db = links.sqlite_path(self.uri)
        # One process at a time creates (or upgrades) a SQLite store's tables: MLflow's own
        # initialisation races when parallel sweep jobs open a new store.
        with FileLock(f"{db}.lock") if db else contextlib.nullcontext():
            self.client = MlflowClient(tracking_uri=self.uri)
            self.experiment_id = self._experiment(*experiments[0], decisions=True)
            self.candidates_id = self._experiment(*experiments[1])
        if self.run.run_dir:  # held until the run ends: a resume waits for a logger still writing the run
            self.lock = FileLock(Path(self.run.run_dir) / values.LOCK_FILE)
            self.lock.acquire()
        reopened = bool(reopen) and self._reopen(str(reopen))
        if not reopened:
            self._create_parent()
        if self.run.run_dir:
            stored = {"run_id": self.run_id, "experiment_id": self.experiment_id, "tracking_uri": self.uri}
            write_text_atomic(Path(self.run.run_dir) / values.RUN_FILE, json.dumps(stored, indent=2) + "\n")
        return not reopened

    def _experiment(self, name: str, location: str | None, decisions: bool = False) -> str:
        """The experiment's id, created if missing; the parents' opens on the decisions view."""
        key, state = links.VIEW_TAG + links.DECISIONS_VIEW, links.view_state("decisions")
        view = {key: links.saved_view("gepa-lab decisions", state, int(time.time() * 1000))} if decisions else {}
        if (found := self.client.get_experiment_by_name(name)) is None:
            with contextlib.suppress(MlflowException):  # created concurrently by a sibling job of a multirun
                self.client.create_experiment(name, artifact_location=location, tags=view)
            if (found := self.client.get_experiment_by_name(name)) is None:
                raise LookupError(f"MLflow experiment {name!r} could not be created")
        if view and json.loads(found.tags.get(key, "{}")).get("state") != state:  # an older gepa-lab's view
            with contextlib.suppress(MlflowException):  # (a sibling job of a multirun wrote it first)
                self.client.set_experiment_tag(found.experiment_id, key, view[key])
        return str(found.experiment_id)

    def _create_parent(self) -> None:
        run = self.run
        tags = {**values.parent_tags(run), "gepa.candidates_experiment_id": self.candidates_id, values.DESCRIPTION_TAG:
                f"Running (gepa experiment `{run.name}`, random seed {run.search.random_seed})."}
        # The client adds no source tags (fluent start_run does): the commit of the gepa_lab checkout,
        # else of the working directory; none outside a git checkout.
        if commit := next(filter(None, map(get_git_commit, [str(Path(__file__).parents[1]), os.getcwd()])), None):
            tags[MLFLOW_GIT_COMMIT] = commit
        start_ms = int(datetime.fromisoformat(run.started_at).timestamp() * 1000)
        self.run_id = self.client.create_run(self.experiment_id, start_ms, tags, run_name=self.name).info.run_id
        # `holdout_delta` is NaN (undecided) until the end: logged first, it is the metric MLflow's
        # comparison plots by default (the UI takes a run's metrics in the order they were created).
        params = values.parent_files(run)[0]
        self.client.log_batch(self.run_id, params=[Param(k, v) for k, v in params.items()],
                              metrics=_metrics({"holdout_delta": math.nan}, step=0))

    def _inputs(self) -> None:
        """One dataset input per split (context = split); MLflow's digest is a 36-char prefix of ours."""
        ds, source = self.run.dataset, json.dumps({"tags": {"gepa_lab.run_dir": self.run.run_dir or ""}})
        schema = json.dumps({"mlflow_colspec": [{"type": kind, "name": name, "required": True} for name, kind in (
            ("id", "string"), ("input", "string"), ("expected", "string"), ("critical", "boolean"),
            ("metadata", "string"))]})
        inputs = []
        for split, digest in self.run.digests.items():
            size = len(ds.split(split))
            dataset = Dataset(f"{ds.id}/{split}", digest[:36], "code", source, schema,
                              json.dumps({"num_rows": size, "num_elements": 5 * size}))
            inputs.append(DatasetInput(dataset, [InputTag(MLFLOW_DATASET_CONTEXT, split),
                                                 InputTag("sha256", digest), InputTag("dataset.version", ds.version)]))
        # Parallel jobs registering one new dataset: MLflow's insert races (PostgreSQL).
        for attempt in Retrying(stop=stop_after_attempt(3), wait=wait_incrementing(0.5, 0.5), reraise=True):
            with attempt:
                self.client.log_inputs(self.run_id, datasets=inputs)

    def _reopen(self, run_id: str) -> bool:
        """Continue an interrupted run's parent, learning what it holds (False: not in this store)."""
        client, parent = self.client, None
        with contextlib.suppress(MlflowException):
            parent = client.get_run(run_id)
        if parent is None or parent.info.lifecycle_stage != "active":
            return False
        tags = parent.data.tags
        self.run_id, self.experiment_id = run_id, parent.info.experiment_id
        self.candidates_id = tags.get("gepa.candidates_experiment_id") or self.candidates_id
        client.update_run(run_id, status="RUNNING")
        client.log_batch(run_id, tags=_tags({"resume_count": str(int(tags.get("resume_count", "0")) + 1),
                                             "promotion_eligible": "pending"}))
        for stale in {"error", "stop_reason"} & set(tags):  # the interruption's outcome; interruptions/ keeps it
            client.delete_tag(run_id, stale)
        for child in client.search_runs([self.candidates_id], links.POOL_FILTER.format(run_id), max_results=50_000):
            if child.info.status != "FINISHED":  # cut short mid-write: logged again when replayed
                client.delete_run(child.info.run_id)
                continue
            self.logged_keys.add(child.data.tags.get("gepa.key", ""))
            self.nested[child.data.tags.get("candidate_id", "")] = child.info.run_id
        self.logged_steps = {m.step for m in client.get_metric_history(run_id, "search/best_validation_mean")}
        with tempfile.TemporaryDirectory() as tmp, contextlib.suppress(Exception):  # no table: a run killed early
            table = json.loads(Path(client.download_artifacts(run_id, "proposals.json", tmp)).read_text("utf-8"))
            self.rows_written = {int(row[table["columns"].index("iteration")]) for row in table["data"]}
        if missing := sorted(set(range(self.run.resume.iteration if self.run.resume else 0)) - self.logged_steps):
            client.set_tag(run_id, "mlflow_tracker.missing_iterations",  # both processes killed: named, not silent
                           f"{len(missing)} iteration(s) between {missing[0]} and {missing[-1]} are not in MLflow "
                           "(the logging process was killed); the run record has them")
        return True

    def files(self, run_id: str | None, files: dict[str, Any]) -> None:
        """Text as it is, anything else as JSON: each file previews in the UI."""
        for name, content in files.items():
            text = content if isinstance(content, str) else json.dumps(content, indent=2, ensure_ascii=False,
                                                                        default=str)
            self.client.log_text(run_id, text, name)

    def member(self, m: dict[str, Any]) -> None:
        """A pool member's run (not again on replay); one cut short ends FAILED: a resume replaces it."""
        if self.run_id is None or m["key"] in self.logged_keys:
            return
        tags = {**self.common, **m["tags"], "gepa.run_kind": "candidate", "gepa.key": m["key"],
                "mlflow.parentRunId": self.run_id, links.LINK_TAG: self.run_id}  # MLflow's link, and ours
        run_id = self.client.create_run(self.candidates_id, tags=tags, run_name=m["name"]).info.run_id
        try:
            self.client.log_batch(run_id, metrics=_metrics(m["metrics"], step=0))
            self.files(run_id, m["files"])
        except BaseException:
            self.safe("end an unfinished candidate run", self.client.set_terminated, run_id, "FAILED")
            raise
        self.client.set_terminated(run_id, "FINISHED")
        self.logged_keys.add(m["key"])
        self.nested[m["candidate_id"]] = run_id

    def candidate(self, info: CandidateInfo) -> None:
        """The seed's run. (An accepted child is logged with its proposal.)"""
        self.safe("log candidate seed", self.member, values.seed_member(info))

    def proposal(self, p: Proposal) -> None:
        """A row of the proposals table; an accepted proposal's pool member."""
        if self.run_id is not None and p.iteration not in self.rows_written:
            self.rows[p.iteration] = values.proposal_row(p)
        if p.status == "accepted" and p.candidate_id is not None and p.artifact is not None:
            self.safe(f"log candidate iteration-{p.iteration}", self.member, values.accepted_member(p))

    def iteration(self, s: IterationStats) -> None:
        series = {"best_validation_mean": s.best_validation_mean, "pool_size": s.pool_size, "proposals": s.proposals,
                  "front_size": s.front_size, "metric_calls": s.metric_calls, "task_cost_usd": s.task_cost_usd,
                  "cost_usd": s.task_cost_usd + s.reflection_cost_usd, "reflection_cost_usd": s.reflection_cost_usd}
        self.search_calls = s.metric_calls  # the last iteration's: the search's budget
        if self.run_id is not None and s.iteration not in self.logged_steps:
            self.pending[s.iteration] = values.readable({f"search/{k}": v for k, v in series.items()})

    def note(self, kind: str, data: dict[str, Any]) -> None:
        if self.run_id is not None:
            text = values.clip(json.dumps(data, ensure_ascii=False, default=str))
            self.client.log_batch(self.run_id, tags=_tags({values.safe_key("note", kind): text}))

    def due(self) -> float | None:
        """Seconds until what waits is written: at most once per FLUSH_EVERY_S (None: nothing waits)."""
        if self.run_id is None or self.ended or not (self.pending or self.rows):
            return None
        return max(0.0, self.flushed_at + FLUSH_EVERY_S - time.monotonic())

    def flush(self) -> None:
        """The pending metrics, one call; the new rows of the proposals table (`log_table` appends)."""
        self.flushed_at = time.monotonic()
        if self.pending:
            metrics = [m for step, series in sorted(self.pending.items()) for m in _metrics(series, step)]
            self.safe("log the per-iteration metrics", self.client.log_batch, self.run_id, metrics=metrics)
            self.logged_steps |= set(self.pending)
            self.pending = {}
        if self.rows:
            rows = [self.rows[i] for i in sorted(self.rows)]
            columns = {c: [row.get(c) for row in rows] for c in dict.fromkeys(k for row in rows for k in row)}
            try:
                self.client.log_table(self.run_id, columns, "proposals.json")
            except Exception as exc:  # the rows stay for the next write
                self.errors.append(f"log the proposals table: {describe(exc)}")
                return
            self.rows_written |= set(self.rows)
            self.rows = {}

    def decision(self, result: Result) -> None:
        """The outcome; the pool members' view; a description that links on to it, the decisions, the diff."""
        if self.run_id is None or self.ended:
            return
        self.flush()
        client, best, rid = self.client, self.nested.get(result.best_id), self.run_id
        pool = links.view_state("candidates", links.POOL_FILTER.format(rid))
        self.safe("save the pool members' view", client.set_experiment_tag, self.candidates_id,
                  links.VIEW_TAG + links.POOL_VIEW.format(rid), pool)
        leads = {"the winner's diff to the seed": links.run_url("", self.experiment_id, rid, "winner_diff.txt"),
                 "this run's pool members by validation": links.experiment_url("", self.candidates_id,
                                                                               links.POOL_VIEW.format(rid)),
                 "every run's decision": links.experiment_url("", self.experiment_id)}
        text = self.safe("read the run's notes", lambda: client.get_run(rid).data.tags[values.DESCRIPTION_TAG]) or ""
        notes = "".join(text.partition(values.NOTES_MARKER)[1:])  # the notes added while the run ran
        tags = {**values.decision_tags(result, self.run.submit),
                values.DESCRIPTION_TAG: values.description(self.run, result, self.search_calls, leads) + notes}
        self.safe("log the decision", client.log_batch, self.run_id,
                  metrics=_metrics(values.decision_metrics(result), 0), tags=_tags(tags))
        files, tables = values.decision_files(self.run, result)
        self.safe("log the decision files", self.files, self.run_id, files)
        for name, data in tables.items():
            self.safe(f"log {name}", client.log_table, self.run_id, data, name)
        if best is not None:
            self.safe("tag the best candidate", client.set_tag, best, "is_best", "true")

    def end(self, status: str, tags: dict[str, str], result: Result | None = None,
            error: tuple[str, str] | None = None) -> None:
        """The plots (of `result`), the error (text, file: history a resume keeps), then the status."""
        if self.run_id is None or self.ended:
            return
        if result is not None and self.plots:
            from gepa_lab.tracking.plots import run_figures

            label = f"{self.run.name}, random seed {self.run.search.random_seed}"
            for name, figure in (self.safe("draw the plots", run_figures, result, label) or {}).items():
                self.safe(f"log {name}.png", self.client.log_figure, self.run_id, figure, f"{name}.png")
        self.flush()
        if error:
            self.safe("log the error", self.client.log_text, self.run_id, *error)
        tags = {**tags, "mlflow_tracker.errors": str(len(self.errors))}
        if self.errors:
            tags["mlflow_tracker.first_error"] = self.errors[0][:8000]
        self.safe("log the tracker status", self.client.log_batch, self.run_id, tags=_tags(tags))
        self.safe("end the parent run", self.client.set_terminated, self.run_id, status)
        self.ended = True
        if self.lock is not None:
            self.lock.release()


def serve(messages: queue.Queue[bytes | None], reply: Callable[[tuple[str, dict[str, Any]]], None]) -> None:
    """The messages in order, pending writes when idle; at end of input an open run ends KILLED."""
    logger: RunLogger | None = None
    while True:
        try:
            data = messages.get(timeout=logger.due() if logger else None)
        except queue.Empty:
            data = b""
        if data is None:
            break
        try:
            method, args = pickle.loads(data) if data else ("", ())
        except Exception as exc:  # e.g. a plugin's class this process cannot import: that event is lost
            method, args = "", ()
            if logger is not None:
                logger.errors.append(f"read an event: {describe(exc)}")
        if method == "start":
            logger = RunLogger(*args)
            reply(("opened", logger.state()))
        elif method and logger is not None:
            logger.safe(f"log {method}", getattr(logger, method), *args)
            if method == "end":
                reply(("ended", logger.state()))
        if logger is not None and messages.empty() and logger.due() == 0.0:
            logger.flush()  # nothing queued: a fast search's iterations share one write
    if logger is not None:
        logger.end("KILLED", KILLED)
