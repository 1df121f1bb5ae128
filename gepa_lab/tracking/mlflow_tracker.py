"""MLflow tracking (DESIGN §6, issue 3): every candidate, proposal and promotion decision of a run,
comparable in `mlflow ui`.

Layout in the store
- One MLflow experiment (default `gepa-lab`) for all gepa experiments; each parent run carries the
  gepa experiment as the tag `experiment`. One table then lists every experiment and seed side
  by side, so comparing seeds or experiments is a filter (`tags.experiment = 'recipe'`), a
  group-by on a tag, or a checkbox selection, never a cross-experiment hop. Set
  `tracking.experiment=${experiment_name}` for one MLflow experiment per gepa experiment.
- One parent run per experiment run (Hydra job): tags, flattened config params, dataset inputs,
  per-iteration metrics (step = iteration), the decision (holdout table, rule outcomes), plots.
- One nested run per candidate: the seed and every proposal (accepted, rejected, duplicate,
  reflection-rejected). An accepted proposal and the candidate it creates share one nested run.

Cost: writes go through `MlflowClient` (no fluent global state, no async queue: an async
`end_run` costs ~1 s per run here). A nested run is 4 store calls (create with tags, one
`log_batch`, one `log_artifacts` of a temp dir, terminate); per-evaluation data is never a run
or a call of its own. mlflow is imported inside `start()` (1.4 s import).

This module holds the tracker (hooks, parent run lifecycle, resume, metric buffering); what it
writes is built in `gepa_lab.mlflow_records` and sent through `gepa_lab.mlflow_store`.
"""

from __future__ import annotations

import json
import logging
import os
import time
import traceback
import urllib.request
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from gepa_lab import mlflow_records as rec
from gepa_lab import mlflow_store as store
from gepa_lab.mlflow_records import DIGEST_MAX as DIGEST_MAX  # `as`: re-exported, callers use these
from gepa_lab.mlflow_records import PARAM_MAX as PARAM_MAX
from gepa_lab.mlflow_records import flatten_config as flatten_config
from gepa_lab.mlflow_records import split_params as split_params
from gepa_lab.mlflow_records import sqlite_path as sqlite_path
from gepa_lab.mlflow_store import RUN_FILE
from gepa_lab.tracking import CandidateInfo, EvaluationRecord, IterationStats, Proposal, RunInfo

if TYPE_CHECKING:
    from gepa_lab.engine import Result

log = logging.getLogger("gepa_lab.mlflow")

CHECKPOINT_KEY = "mlflow_pending_metrics"  # parent metrics not yet in the store, per checkpoint
DEFAULT_EXPERIMENT = "gepa-lab"


@dataclass
class MlflowTrackingConfig:
    """`tracking=mlflow`. Registered by `gepa_lab.config` as group `tracking`, schema `mlflow_schema`."""

    name: str = "mlflow"
    uri: str | None = None  # null: $MLFLOW_TRACKING_URI, else sqlite:///<abs cwd>/mlflow.db
    experiment: str = DEFAULT_EXPERIMENT  # the MLflow experiment (not the gepa experiment)
    artifact_location: str | None = None  # new experiments only; null: <db dir>/mlruns/<name>
    plots: bool = True
    # Per-iteration parent metrics are written every `flush_every` iterations or `flush_seconds`,
    # whichever comes first (fast simulated runs batch; slow real runs stay live in the UI).
    flush_every: int = 10
    flush_seconds: float = 30.0


class MlflowTrackingError(RuntimeError):
    """MLflow could not be reached or written at start: the run stops before spending anything."""


def default_uri() -> str:
    """As MLflow itself: $MLFLOW_TRACKING_URI, else `mlflow.db` in the working directory. Made
    absolute because Hydra does not chdir but a later `mlflow ui` may run elsewhere."""
    return os.environ.get("MLFLOW_TRACKING_URI") or f"sqlite:///{Path.cwd().resolve() / 'mlflow.db'}"


def build_tracker(cfg: MlflowTrackingConfig, experiment_name: str, run_dir: Path | None) -> MlflowTracker:
    return MlflowTracker(cfg.uri, experiment_name, run_dir, mlflow_experiment=cfg.experiment,
                         artifact_location=cfg.artifact_location, plots=cfg.plots,
                         flush_every=cfg.flush_every, flush_seconds=cfg.flush_seconds)


class MlflowTracker:
    """Tracker (gepa_lab.tracking) that logs a run to MLflow.

    Failure policy: `start()` raises `MlflowTrackingError` (bad URI, unreachable server,
    unwritable store), so a misconfigured run stops before it spends any budget. After that an
    MLflow error never stops the search: the run record in the run dir is the source of truth and
    a search can cost hours of model calls. It is not swallowed either: each failure is logged as
    a warning and counted, and `finish()` reports the count as the parent tag
    `mlflow_tracker.errors` (with the first message) and in a final warning.
    """

    def __init__(self, uri: str | None, experiment_name: str, run_dir: Path | str | None, *,
                 mlflow_experiment: str = DEFAULT_EXPERIMENT, artifact_location: str | None = None,
                 plots: bool = True, flush_every: int = 10, flush_seconds: float = 30.0):
        self.uri = uri or default_uri()
        self.experiment_name = experiment_name
        self.run_dir = Path(run_dir) if run_dir is not None else None
        self.mlflow_experiment = mlflow_experiment
        self.artifact_location = artifact_location
        self.plots = plots
        self.flush_every = max(1, int(flush_every))
        self.flush_seconds = float(flush_seconds)
        self.client: Any = None
        self.run_id: str | None = None  # the parent run (for submission evidence)
        self.experiment_id: str | None = None
        self.errors: list[str] = []
        self._info: RunInfo | None = None
        self._common: dict[str, str] = {}  # tags every nested run repeats, for filtering
        self._iteration_records: list[EvaluationRecord] = []  # batches since the last proposal
        self._validation: dict[str, list[tuple[str, float]]] = {}  # candidate -> [(case, score)]
        self._pool: list[dict[str, Any]] = []  # lineage: id, parent_id, iteration, validation_mean
        self._nested: dict[str, str] = {}  # candidate id -> nested run id (seed + accepted)
        self._logged_keys: set[str] = set()  # nested runs already in the store ("seed", "iteration-N")
        self._logged_steps: set[int] = set()
        self._metrics: list[Any] = []  # buffered parent metrics
        self._buffered_steps = 0
        self._flushed_at = time.monotonic()
        self._trajectory: list[tuple[float, float]] = []  # (metric calls, best validation mean)
        self._calls = 0  # metric calls seen through evaluation records
        self._proposal_iterations: set[int] = set()  # a set: a resume replays an iteration

    def _safe(self, what: str, fn: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
        try:
            return fn(*args, **kwargs)
        except Exception as exc:  # any MLflow / IO failure: count and report, keep searching
            message = f"{what}: {type(exc).__name__}: {exc}"
            self.errors.append(message)
            log.warning("MLflow logging failed (%s); the run record in the run dir still has it", message)
            return None

    def _preflight(self) -> None:
        """An HTTP store would otherwise be retried with backoff for minutes before failing;
        SQLite creates the file but not its folder."""
        if self.uri.startswith(("http://", "https://")):
            try:
                with urllib.request.urlopen(self.uri.rstrip("/") + "/health", timeout=10) as reply:
                    reply.read()
            except OSError as exc:
                raise MlflowTrackingError(f"MLflow tracking server {self.uri} is not reachable: {exc}") from exc
        db = sqlite_path(self.uri)
        if db is not None:
            db.parent.mkdir(parents=True, exist_ok=True)

    # -- hooks -------------------------------------------------------------------------
    def start(self, run: RunInfo) -> None:
        # Offline by default: no telemetry, and no cost-map download when mlflow imports litellm.
        os.environ.setdefault("MLFLOW_DISABLE_TELEMETRY", "true")
        os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
        self._info = run
        self._preflight()
        try:
            from mlflow import MlflowClient

            self.client = MlflowClient(tracking_uri=self.uri)
            self.experiment_id = store.experiment_id(self.client, self.mlflow_experiment,
                                                     self.artifact_location, self.uri)
            stored = store.read_run_file(self.run_dir) if run.resumed else None
            if stored is not None:
                self._resume(stored, run)
            else:
                if run.resumed:
                    log.warning("resumed run has no %s: a new MLflow run holds only what follows the "
                                "interruption (the run record has all of it)", RUN_FILE)
                self._create_parent(run, resumed_from=None)
            if run.resumed:
                self._restore_pool(run)
            store.write_run_file(self.run_dir, {
                "run_id": self.run_id, "experiment_id": self.experiment_id,
                "mlflow_experiment": self.mlflow_experiment, "tracking_uri": self.uri})
        except MlflowTrackingError:
            raise
        except Exception as exc:
            if self.run_id is not None:
                self._safe("mark parent FAILED", self.client.set_terminated, self.run_id, "FAILED")
            self.client = None
            raise MlflowTrackingError(f"cannot log to MLflow at {self.uri}: {type(exc).__name__}: {exc}") from exc

    def candidate(self, candidate: CandidateInfo) -> None:
        mean = rec.mean_score(self._validation.get(candidate.id, []))
        self._pool.append({"id": candidate.id, "parent_id": candidate.parent_id,
                           "iteration": candidate.iteration, "validation_mean": mean})
        if candidate.parent_id is None:
            self._trajectory.append((float(self._calls), mean))
            record = next((r for r in self._iteration_records
                           if r.phase == "validation" and r.candidate_id == candidate.id), None)
            self._iteration_records = []  # the seed's batch is not the first proposal's
            if self.client is not None and "seed" not in self._logged_keys:
                self._safe("log seed run", self._log_seed, candidate, record)
        # An accepted child is logged with its proposal, which follows at once: one nested run.

    def evaluation(self, record: EvaluationRecord) -> None:
        self._calls += record.summary.cases
        if record.phase == "validation":
            self._validation[record.candidate_id] = [(e.case_id, e.score) for e in record.evaluations]
        if record.phase in rec.PHASE_PREFIX:
            self._iteration_records.append(record)

    def proposal(self, proposal: Proposal) -> None:
        self._proposal_iterations.add(proposal.iteration)
        records, self._iteration_records = self._iteration_records, []
        if self.client is None or f"iteration-{proposal.iteration}" in self._logged_keys:
            return  # resumed: this iteration's nested run is already in the store
        self._safe(f"log proposal run (iteration {proposal.iteration})", self._log_proposal, proposal, records)

    def iteration(self, stats: IterationStats) -> None:
        self._trajectory.append((float(stats.metric_calls), stats.best_validation_mean))
        if self.client is None or stats.iteration in self._logged_steps:
            return
        from mlflow.entities import Metric

        now = rec.ms()
        values = rec.iteration_metrics(stats, len(self._proposal_iterations))
        self._metrics += [Metric(k, float(v), now, stats.iteration) for k, v in values.items()]
        self._buffered_steps += 1
        if (self._buffered_steps >= self.flush_every
                or time.monotonic() - self._flushed_at >= self.flush_seconds):
            self._flush()

    def checkpoint(self, payload: dict[str, Any]) -> None:
        # A resumed run replays from its last checkpoint, so metrics buffered up to it must
        # survive even a hard kill that never reaches fail(). They ride along in the checkpoint
        # (written anyway, atomically) instead of costing a store write per iteration; a resume
        # logs the ones the store lacks.
        if self._metrics:
            payload[CHECKPOINT_KEY] = [[m.key, m.value, m.timestamp, m.step] for m in self._metrics]

    def note(self, kind: str, data: dict[str, Any]) -> None:
        if self.client is not None and self.run_id is not None:
            text = rec.clip(json.dumps(data, ensure_ascii=False, default=str))
            self._safe(f"note {kind}", self.client.set_tag, self.run_id, rec.metric_key("note", kind), text)

    def finish(self, result: Result) -> None:
        if self.client is None or self.run_id is None:
            return
        self._flush()
        self._safe("log decision", store.log_decision, self.client, self.run_id, result,
                   experiment_name=self.experiment_name, seed=self._common.get("random_seed"),
                   proposals=len(self._proposal_iterations),
                   submit_requested=self._info is not None and self._info.submit)
        if self.plots:
            self._safe("log plots", store.log_plots, self.client, self.run_id, result,
                       experiment_name=self.experiment_name, pool=self._pool,
                       validation=self._validation, trajectory=self._trajectory)
        best_run = self._nested.get(result.best_id)
        if best_run is not None:
            self._safe("tag best candidate", self.client.set_tag, best_run, "is_best", "true")
        tags = {"mlflow_tracker.errors": str(len(self.errors))}
        if self.errors:
            tags["mlflow_tracker.first_error"] = rec.clip(self.errors[0])
        self._safe("log tracker status", store.log_batch, self.client, self.run_id, tags=tags)
        self._safe("end parent run", self.client.set_terminated, self.run_id, "FINISHED")
        if self.errors:
            log.warning("MLflow run %s is missing data: %d logging call(s) failed (first: %s)",
                        self.run_id, len(self.errors), self.errors[0])

    def fail(self, error: BaseException) -> None:
        """Mark the parent run KILLED (KeyboardInterrupt) or FAILED; never raises."""
        if self.client is None or self.run_id is None:
            return
        self._flush()
        killed = isinstance(error, KeyboardInterrupt)
        tags = rec.failure_tags(error, len(self.errors))
        self._safe("log failure tags", store.log_batch, self.client, self.run_id, tags=tags)
        trace = "".join(traceback.format_exception(error))
        self._safe("log traceback", store.log_files, self.client, self.run_id, {"error.txt": trace})
        self._safe("end parent run", self.client.set_terminated, self.run_id,
                   "KILLED" if killed else "FAILED")

    # -- parent run --------------------------------------------------------------------
    def _create_parent(self, run: RunInfo, resumed_from: str | None) -> None:
        seed = (run.config.get("search") or {}).get("random_seed")
        self._common = {"experiment": self.experiment_name, "random_seed": str(seed)}
        self.run_id = store.create_parent(self.client, self.experiment_id, run, self.experiment_name,
                                          resumed_from)
        store.log_parent_setup(self.client, self.run_id, run)

    def _resume(self, stored: dict[str, Any], run: RunInfo) -> None:
        """Continue the stored parent run; remember what it already holds so nothing doubles."""
        from mlflow.exceptions import MlflowException

        try:
            parent = self.client.get_run(stored["run_id"])
        except MlflowException:
            log.warning("MLflow run %s of the interrupted run is not in %s; logging the resumed run "
                        "as a new run", stored.get("run_id"), self.uri)
            self._create_parent(run, resumed_from=str(stored.get("run_id")))
            return
        self.run_id = parent.info.run_id
        self.experiment_id = parent.info.experiment_id
        tags = parent.data.tags
        self._common = {"experiment": tags.get("experiment", self.experiment_name),
                        "random_seed": tags.get("random_seed", "")}
        self.client.update_run(self.run_id, status="RUNNING")
        count = int(tags.get("resume_count", "0")) + 1
        store.log_batch(self.client, self.run_id, tags={"resume_count": str(count), "resumed": "true"})
        keys, nested = store.logged_children(self.client, self.experiment_id, self.run_id)
        self._logged_keys.update(keys)
        self._nested.update(nested)
        self._proposal_iterations = {int(k.split("-", 1)[1]) for k in self._logged_keys
                                     if k.startswith("iteration-")}
        self._logged_steps, trajectory = store.logged_trajectory(self.client, self.run_id)
        self._trajectory += trajectory

    def _restore_pool(self, run: RunInfo) -> None:
        """The pool the resumed search continues from (for lineage and heatmap plots)."""
        restored = store.checkpoint_pool(run.run_dir, CHECKPOINT_KEY)
        if restored is None:
            return
        pending, pool = restored
        missing = store.log_pending(self.client, str(self.run_id), pending, self._logged_steps)
        self._logged_steps.update(m.step for m in missing)
        self._trajectory += rec.trajectory_points(missing)
        for row in pool:
            scores = [(ev["case_id"], float(ev["score"])) for ev in row["validation"]]
            self._validation[row["id"]] = scores
            mean = rec.mean_score(scores)
            self._pool.append({"id": row["id"], "parent_id": row["parent_id"],
                               "iteration": row["iteration"], "validation_mean": mean})
            if row["parent_id"] is None:
                self._trajectory.append((float(len(scores)), mean))

    def _flush(self) -> None:
        if self.client is None or self.run_id is None or not self._metrics:
            return
        metrics, self._metrics, self._buffered_steps = self._metrics, [], 0
        self._flushed_at = time.monotonic()
        if self._safe("log iteration metrics", store.log_batch, self.client, self.run_id,
                      metrics=metrics) is not None:
            self._logged_steps.update(m.step for m in metrics)

    # -- nested runs ------------------------------------------------------------------
    def _log_seed(self, info: CandidateInfo, record: EvaluationRecord | None) -> None:
        self._nested[info.id] = self._nested_run(rec.seed_run(info, record))

    def _log_proposal(self, p: Proposal, records: list[EvaluationRecord]) -> None:
        run_id = self._nested_run(rec.proposal_run(p, records))
        if p.status == "accepted" and p.candidate_id:
            self._nested[p.candidate_id] = run_id

    def _nested_run(self, run: rec.NestedRun) -> str:
        run_id = store.log_nested_run(self.client, self.experiment_id, self.run_id, self._common, run,
                                      self._safe)
        self._logged_keys.add(run.key)
        return run_id
