"""MLflow tracking (docs/design.md §6): every candidate, proposal and promotion decision of a run,
comparable in `mlflow ui`.

Layout in the store
- One MLflow experiment (default `gepa-lab`) for all gepa experiments; each parent run carries the
  gepa experiment as the tag `experiment`, so comparing seeds or experiments is a filter
  (`tags.experiment = 'recipe'`) or a group-by, never a cross-experiment hop.
- One parent run per run, `<experiment>-seed<N>`: tags, the flattened config as params, one
  dataset input per split, per-iteration metrics (one `log_batch` per iteration, step =
  iteration), and at the end the decision (metrics, tags, tables), the best candidate and plots.
- One nested run per candidate: the seed and every proposal (accepted, rejected, duplicate,
  reflection-rejected), keyed by the tag `gepa.key` (`seed`, `iteration-<n>`).

Only MLflow's public client API is used (`MlflowClient`, `mlflow.entities`, `mlflow.data`), no
fluent global state: tables through `log_table` (so `load_table` and the UI read them), plots
through `log_figure`, files through `log_dict` / `log_text`. Nothing is buffered. The tracker's
own resume state is `mlflow_run.json` in the run dir (parent run id, experiment id, tracking
URI); what the parent already holds (nested runs, metric steps) is read back from MLflow.

Failure policy: `start()` raises `TrackingError` (bad URI, unreachable server, unwritable store)
before anything is spent. After that an MLflow error never stops the search (the run record in
the run dir is the source of truth): it is logged as a warning, counted, and reported in the tag
`mlflow_tracker.errors` (with `mlflow_tracker.first_error`) when the run ends.
"""

from __future__ import annotations

import difflib
import json
import logging
import math
import os
import re
import time
import traceback
import urllib.parse
import urllib.request
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import datetime
from pathlib import Path
from typing import Any

from gepa_lab.core.artifacts import Artifact, artifact_dict
from gepa_lab.core.errors import TrackingError, describe
from gepa_lab.core.events import CandidateInfo, IterationStats, Proposal, RunInfo
from gepa_lab.core.result import Result
from gepa_lab.tracking.mlflow_values import (
    DIGEST_MAX,
    batch_metrics,
    clip,
    flatten_config,
    metric_list,
    render,
    safe_key,
    scores_table,
    split_params,
    tag_list,
)


def _version() -> str:
    """gepa-lab's installed version (read from the package metadata: this module sits below the
    package root and does not import it)."""
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("gepa-lab")
    except PackageNotFoundError:
        return "unknown"


log = logging.getLogger("gepa_lab.mlflow")

DEFAULT_EXPERIMENT = "gepa-lab"
SIMULATION_NOTE = "SkillCraft-sim is a simulation: these numbers calibrate the harness, not an LM."
RUN_FILE = "mlflow_run.json"  # in the run dir: the parent run a resume continues
PARENT_RUN_TAG = "mlflow.parentRunId"
ENV_DEFAULTS = {  # offline; and stdout is the CLI's summary, not a "View run at" line per run
    "MLFLOW_DISABLE_TELEMETRY": "true", "LITELLM_LOCAL_MODEL_COST_MAP": "True",
    "MLFLOW_SUPPRESS_PRINTING_URL_TO_STDOUT": "true"}


# -- the store ---------------------------------------------------------------------------

def default_uri() -> str:
    """As MLflow itself: $MLFLOW_TRACKING_URI, else `mlflow.db` in the working directory, made
    absolute (Hydra does not chdir, but a later `mlflow ui` may run elsewhere)."""
    return os.environ.get("MLFLOW_TRACKING_URI") or f"sqlite:///{Path.cwd().resolve() / 'mlflow.db'}"


def sqlite_path(uri: str) -> Path | None:
    """The database file of a `sqlite:///...` URI (relative paths against the cwd)."""
    if not uri.startswith("sqlite:///"):
        return None
    raw = uri[len("sqlite:///"):].split("?", 1)[0]
    return Path(raw).resolve() if raw and raw != ":memory:" else None


@contextmanager
def store_init_lock(uri: str) -> Iterator[None]:
    """For a SQLite store: one process at a time creates or upgrades its tables (MLflow's own
    initialisation races when parallel sweep jobs open a new store: `table metrics already
    exists`). An `flock` on `<db>.lock` beside the database; other stores need none."""
    db = sqlite_path(uri)
    if db is None:
        yield
        return
    import fcntl

    with open(db.with_name(db.name + ".lock"), "a") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


class MlflowTracker:
    """Tracker (`gepa_lab.core.events.Tracker`) that logs a run to MLflow. Built from
    `conf/tracking/mlflow.yaml`; everything per run arrives in `start(run)`."""

    def __init__(self, uri: str | None = None, experiment: str = DEFAULT_EXPERIMENT,
                 artifact_location: str | None = None, plots: bool = True):
        self.uri = uri or default_uri()
        self._uri_chosen = uri is not None or bool(os.environ.get("MLFLOW_TRACKING_URI"))
        self.experiment = experiment  # the MLflow experiment (the gepa experiment is a tag)
        self.artifact_location = artifact_location  # for a new experiment; None: beside a SQLite db
        self.plots = plots
        self.client: Any = None
        self.run_id: str | None = None  # the parent run
        self.experiment_id: str | None = None
        self._new_run()

    def _new_run(self) -> None:
        self.run_id = None
        self.errors: list[str] = []
        self._submit = False
        self._simulated = False
        self._common: dict[str, str] = {}  # tags every nested run repeats, for filtering
        self._logged_keys: set[str] = set()  # nested runs in the store (gepa.key)
        self._logged_steps: set[int] = set()  # per-iteration metric steps in the store
        self._nested: dict[str, str] = {}  # candidate id -> nested run id (seed and accepted)

    def links(self) -> dict[str, str]:
        if not self.run_id:
            return {}
        links = {"mlflow_run_id": self.run_id, "mlflow_experiment_id": str(self.experiment_id)}
        if self.uri and urllib.parse.urlsplit(self.uri).password is None:  # a URI with a password stays out
            links["mlflow_tracking_uri"] = self.uri  # where a later tracker logs to the same run
        return links

    def _safe(self, what: str, fn: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
        try:
            return fn(*args, **kwargs)
        except Exception as exc:  # any MLflow / IO failure: count and report, keep searching
            self.errors.append(f"{what}: {describe(exc)}")
            log.warning("MLflow logging failed (%s); the run record in the run dir still has it", self.errors[-1])
            return None

    # -- start ---------------------------------------------------------------------------------
    def start(self, run: RunInfo) -> None:
        for name, value in ENV_DEFAULTS.items():
            os.environ.setdefault(name, value)
        self._new_run()
        self._submit = run.submit
        self._common = {"experiment": run.name, "random_seed": str(run.search.random_seed)}
        self._simulated = run.simulated
        sweep = run.config.get("sweep") or {}  # a multirun job (gepa_lab/cli.py): filter a sweep by its id
        if sweep.get("id"):
            self._common["sweep_id"] = str(sweep["id"])
        run_file = Path(run.run_dir) / RUN_FILE if run.run_dir else None
        stored = None
        if run.resume is not None and run_file is not None and run_file.is_file():
            try:
                stored = dict(json.loads(run_file.read_text(encoding="utf-8")))
            except (OSError, ValueError) as exc:
                log.warning("cannot read %s (%s): the resumed run gets a new MLflow run", run_file, exc)
        if stored and not self._uri_chosen and stored.get("tracking_uri"):
            self.uri = str(stored["tracking_uri"])  # the interrupted run's store, wherever we run now
        self._preflight()
        try:
            from mlflow import MlflowClient

            with store_init_lock(self.uri):  # parallel sweep jobs opening one new SQLite store
                self.client = MlflowClient(tracking_uri=self.uri)
                self.experiment_id = self._experiment_id()
            if stored is None or not self._reopen(str(stored.get("run_id"))):
                if run.resume is not None:
                    log.warning("resumed run: no MLflow run of the interrupted run in %s; a new MLflow run "
                                "holds what follows (the run record has all of it)", self.uri)
                self._create_parent(run, resumed_from=stored.get("run_id") if stored else None)
            if run_file is not None:
                run_file.parent.mkdir(parents=True, exist_ok=True)
                tmp = run_file.with_name(f".{RUN_FILE}.tmp")
                tmp.write_text(json.dumps({"run_id": self.run_id, "experiment_id": self.experiment_id,
                                           "tracking_uri": self.uri}, indent=2) + "\n", encoding="utf-8")
                os.replace(tmp, run_file)
        except Exception as exc:
            if self.run_id is not None:
                self._safe("mark the parent run FAILED", self.client.set_terminated, self.run_id, "FAILED")
            self.client = None
            raise TrackingError(f"cannot log to MLflow at {self.uri}: {describe(exc)}") from exc

    def _preflight(self) -> None:
        """An HTTP store would otherwise be retried with backoff for minutes before failing;
        SQLite creates the file but not its folder."""
        if self.uri.startswith(("http://", "https://")):
            try:
                with urllib.request.urlopen(self.uri.rstrip("/") + "/health", timeout=10) as reply:
                    reply.read()
            except OSError as exc:
                raise TrackingError(f"MLflow tracking server {self.uri} is not reachable: {exc}") from exc
        db = sqlite_path(self.uri)
        if db is not None:
            try:  # MLflow would retry an unwritable SQLite file for minutes before failing
                db.parent.mkdir(parents=True, exist_ok=True)
                with open(db, "ab"):
                    pass
            except OSError as exc:
                raise TrackingError(f"cannot write the MLflow store {db} ({exc.strerror or exc}); run from a "
                                    "writable directory or set tracking.uri=sqlite:///<writable path>/mlflow.db"
                                    ) from exc

    def _experiment_id(self) -> str:
        """The MLflow experiment's id, created if missing (artifacts beside a SQLite store)."""
        from mlflow.exceptions import MlflowException

        found = self.client.get_experiment_by_name(self.experiment)
        if found is not None:
            return str(found.experiment_id)
        location, db = self.artifact_location, sqlite_path(self.uri)
        if location is None and db is not None:
            location = (db.parent / "mlruns" / re.sub(r"[^A-Za-z0-9_.-]+", "_", self.experiment)).as_uri()
        try:
            return str(self.client.create_experiment(self.experiment, artifact_location=location))
        except MlflowException:  # created concurrently by a sibling job of a multirun
            found = self.client.get_experiment_by_name(self.experiment)
            if found is None:
                raise
            return str(found.experiment_id)

    def _create_parent(self, run: RunInfo, resumed_from: str | None) -> None:
        from mlflow.entities import Param
        from mlflow.utils.git_utils import get_git_commit
        from mlflow.utils.mlflow_tags import MLFLOW_GIT_COMMIT

        ds = run.dataset
        tags = {**self._common, "gepa.run_kind": "parent", "algorithm": run.algorithm,
                "gepa.experiment_id": run.experiment_id, "gepa_lab.version": _version(),
                "dataset.id": ds.id, "dataset.version": ds.version, "submit": str(run.submit).lower(),
                "promotion_eligible": "pending", "simulated": str(run.simulated).lower()}
        for split, digest in run.digests.items():
            tags[f"dataset.digest.{split}"] = digest
            tags[f"dataset.cases.{split}"] = str(len(ds.split(split)))
        for group, option in (run.config.get("hydra_choices") or {}).items():
            if option is not None and not str(group).startswith("hydra/"):
                tags[safe_key("hydra", str(group))] = str(option)
        sweep = run.config.get("sweep") or {}
        if sweep.get("id"):
            tags.update({"sweep_dir": clip(str(sweep.get("dir", ""))), "sweep_job": str(sweep.get("job", ""))})
        # The client adds no source tags (only fluent start_run does): the commit of the gepa_lab
        # checkout, else of the working directory; none outside a git checkout.
        commit = get_git_commit(str(Path(__file__).resolve().parents[1])) or get_git_commit(os.getcwd())
        if commit:
            tags[MLFLOW_GIT_COMMIT] = commit
        if run.run_dir:
            tags["run_dir"] = clip(str(Path(run.run_dir).resolve()))
        if resumed_from:
            tags["resumed_from_mlflow_run"] = str(resumed_from)
        started = int(datetime.fromisoformat(run.started_at).timestamp() * 1000)
        self.run_id = self.client.create_run(self.experiment_id, start_time=started, tags=tags,
                                             run_name=f"{run.name}-seed{run.search.random_seed}-{run.experiment_id[:8]}").info.run_id
        params, long_values = split_params(flatten_config(
            {k: v for k, v in run.config.items() if k not in ("hydra_choices", "sweep")}))
        self.client.log_batch(self.run_id, params=[Param(k, v) for k, v in params.items()])
        self.client.log_dict(self.run_id, run.config, "config/resolved_config.json")
        if long_values:
            self.client.log_dict(self.run_id, long_values, "config/long_params.json")
        self.client.log_dict(self.run_id, artifact_dict(run.seed), "seed/candidate.json")
        inputs = self._dataset_inputs(run)
        for attempt in range(3):
            try:
                self.client.log_inputs(self.run_id, datasets=inputs)
                break
            except Exception:  # parallel jobs registering one new dataset: MLflow's insert races (PostgreSQL)
                if attempt == 2:
                    raise
                time.sleep(0.5 * (attempt + 1))

    def _dataset_inputs(self, run: RunInfo) -> list[Any]:
        """One input per split (context = split). The MLflow digest is a 36-char prefix of our
        sha256 (the full hash is an input tag): MLflow's own pandas digest skips list / dict
        columns and looks at the first 10,000 rows only."""
        import pandas as pd
        from mlflow.data.code_dataset_source import CodeDatasetSource
        from mlflow.data.pandas_dataset import from_pandas
        from mlflow.entities import Dataset, DatasetInput, InputTag
        from mlflow.utils.mlflow_tags import MLFLOW_DATASET_CONTEXT

        # Loaded by gepa_lab; the run record (experiment.json in the run dir) holds every case.
        source = CodeDatasetSource({"gepa_lab.run_dir": str(run.run_dir or "")})
        inputs = []
        for split, digest in run.digests.items():
            frame = pd.DataFrame(
                [{"id": c.id, "input": c.input, "expected": c.expected or "", "critical": c.critical,
                  "metadata": json.dumps(dict(c.metadata), sort_keys=True)} for c in run.dataset.split(split)],
                columns=["id", "input", "expected", "critical", "metadata"])
            data = from_pandas(frame, source=source, name=f"{run.dataset.id}/{split}", digest=digest[:DIGEST_MAX])
            inputs.append(DatasetInput(Dataset(**data.to_dict()), [
                InputTag(MLFLOW_DATASET_CONTEXT, split), InputTag("sha256", digest),
                InputTag("dataset.version", run.dataset.version)]))
        return inputs

    # -- resume --------------------------------------------------------------------------------
    def _reopen(self, run_id: str) -> bool:
        """Continue the interrupted run's parent; learn from the store what it already holds, so
        the iterations the engine replays are not logged twice. False: no such run here."""
        from mlflow.exceptions import MlflowException

        try:
            parent = self.client.get_run(run_id)
        except MlflowException:
            return False
        if parent.info.lifecycle_stage != "active":
            return False
        self.run_id, self.experiment_id = parent.info.run_id, parent.info.experiment_id
        tags = parent.data.tags
        self.client.update_run(self.run_id, status="RUNNING")
        self.client.log_batch(self.run_id, tags=tag_list({
            "resume_count": str(int(tags.get("resume_count", "0")) + 1), "promotion_eligible": "pending"}))
        for stale in ("error", "stop_reason"):  # the interruption's outcome; interruptions/ keeps it
            if stale in tags:
                self.client.delete_tag(self.run_id, stale)
        for child in self._children():
            if child.info.status != "FINISHED":  # cut short mid-write: logged again when replayed
                self.client.delete_run(child.info.run_id)
                continue
            child_tags = child.data.tags
            self._logged_keys.add(child_tags.get("gepa.key", ""))
            if child_tags.get("status") in ("seed", "accepted") and child_tags.get("candidate_id"):
                self._nested[child_tags["candidate_id"]] = child.info.run_id
        # One log_batch per iteration is atomic: one key's steps are every key's.
        self._logged_steps = {m.step for m in self.client.get_metric_history(self.run_id, "best_validation_mean")}
        log.info("resuming MLflow run %s: %d nested runs and %d iterations already logged",
                 self.run_id, len(self._logged_keys), len(self._logged_steps))
        return True

    def _children(self) -> list[Any]:
        found: list[Any] = []
        token = None
        while True:
            page = self.client.search_runs([self.experiment_id], f"tags.`{PARENT_RUN_TAG}` = '{self.run_id}'",
                                           max_results=1000, page_token=token)
            found += list(page)
            token = page.token
            if not token:
                return found

    # -- nested runs ---------------------------------------------------------------------------
    def candidate(self, info: CandidateInfo) -> None:
        """The seed's nested run. (An accepted child is logged with its proposal, which follows.)"""
        if info.parent_id is not None or self.client is None or "seed" in self._logged_keys:
            return
        tags = {"candidate_id": info.id, "parent_id": "", "component": "", "iteration": "-1",
                "status": "seed", "reason": "seed artifact"}
        metrics = {"iteration": -1.0, **batch_metrics(info.validation)}
        run_id = self._safe("log the seed's run", self._log_nested, "seed", f"seed-{info.id[:8]}", tags, metrics,
                            info.artifact, None, {}, {"validation.json": scores_table(info.validation)})
        if run_id:
            self._nested[info.id] = run_id

    def proposal(self, p: Proposal) -> None:
        run_key = f"iteration-{p.iteration}"
        if self.client is None or run_key in self._logged_keys:
            return  # resumed: the engine replays an iteration this run already logged
        tags = {"parent_id": p.parent_id, "component": p.component, "iteration": str(p.iteration),
                "status": p.status, "reason": clip(p.reason), "paired_seed": str(p.paired_seed),
                "minibatch": clip(",".join(p.minibatch))}
        if p.candidate_id:
            tags["candidate_id"] = p.candidate_id
        metrics = {"iteration": float(p.iteration), "minibatch_size": float(len(p.minibatch)),
                   "minibatch_parent_sum": p.parent_sum}
        if p.child_sum is not None:
            metrics["minibatch_child_sum"] = p.child_sum
        for batch in (p.parent_batch, p.child_batch, p.validation_batch):
            metrics.update(batch_metrics(batch))
        cases = [ev.case_id for ev in p.parent_batch.evaluations]
        child = {ev.case_id: ev.score for ev in p.child_batch.evaluations} if p.child_batch else {}
        tables: dict[str, dict[str, list[Any]]] = {"minibatch.json": {
            "case_id": cases, "parent_score": p.parent_batch.scores, "child_score": [child.get(c) for c in cases]}}
        if p.validation_batch is not None:
            tables["validation.json"] = scores_table(p.validation_batch)
        reflection = {"component": p.component, "records": p.records, "reply": p.reply,
                      "rationale": p.rationale, "status": p.status, "reason": p.reason}
        name = f"it{p.iteration:03d}-{p.status}" + (f"-{p.candidate_id[:8]}" if p.candidate_id else "")
        run_id = self._safe(f"log the proposal's run (iteration {p.iteration})", self._log_nested, run_key, name,
                            tags, metrics, p.artifact, p.parent, {"reflection.json": reflection}, tables)
        if run_id and p.status == "accepted" and p.candidate_id:
            self._nested[p.candidate_id] = run_id

    def _log_nested(self, run_key: str, name: str, tags: dict[str, str], metrics: dict[str, float],
                    artifact: Artifact | None, parent: Artifact | None, files: dict[str, Any],
                    tables: dict[str, dict[str, list[Any]]]) -> str:
        """create (tags) -> log_batch (metrics) -> files and tables -> FINISHED; a run whose
        writes did not all happen ends FAILED / KILLED (a resume logs it again)."""
        client = self.client
        all_tags = {**self._common, **tags, "gepa.run_kind": "candidate", "gepa.key": run_key,
                    PARENT_RUN_TAG: str(self.run_id)}
        run_id: str = client.create_run(self.experiment_id, tags=all_tags, run_name=name).info.run_id
        try:
            client.log_batch(run_id, metrics=metric_list(metrics, step=0))
            if artifact is not None:
                client.log_dict(run_id, artifact_dict(artifact), "candidate.json")
                text = render(artifact)
                if artifact.kind == "skill":
                    client.log_text(run_id, text, "SKILL.md")
                if parent is not None:
                    client.log_text(run_id, "".join(difflib.unified_diff(
                        render(parent).splitlines(keepends=True), text.splitlines(keepends=True),
                        fromfile="parent", tofile="candidate")), "diff.patch")
            for path, content in files.items():
                client.log_dict(run_id, content, path)
            for path, table in tables.items():
                client.log_table(run_id, table, path)
        except BaseException as exc:  # never leave a nested run RUNNING, Ctrl-C included
            status = "KILLED" if isinstance(exc, KeyboardInterrupt) else "FAILED"
            self._safe("end an unfinished nested run", client.set_terminated, run_id, status)
            raise
        client.set_terminated(run_id, "FINISHED")
        self._logged_keys.add(run_key)
        return run_id

    # -- parent run: per iteration, notes, end -------------------------------------------------
    def iteration(self, stats: IterationStats) -> None:
        """One `log_batch` per iteration (step = iteration), written at once: nothing to lose."""
        if self.client is None or stats.iteration in self._logged_steps:
            return
        values = {"best_validation_mean": stats.best_validation_mean, "pool_size": stats.pool_size,
                  "front_size": stats.front_size, "metric_calls": stats.metric_calls,
                  "task_cost_usd": stats.task_cost_usd, "reflection_cost_usd": stats.reflection_cost_usd,
                  "cost_usd": stats.task_cost_usd + stats.reflection_cost_usd, "proposals": stats.proposals}
        self._safe(f"log iteration {stats.iteration} metrics", self.client.log_batch, self.run_id,
                   metrics=metric_list(values, step=stats.iteration))

    def note(self, kind: str, data: dict[str, Any]) -> None:
        if self.client is not None and self.run_id is not None:
            text = clip(json.dumps(data, ensure_ascii=False, default=str))
            self._safe(f"note {kind}", self.client.set_tag, self.run_id, safe_key("note", kind), text)

    def finish(self, result: Result) -> None:
        if self.client is None or self.run_id is None:
            return
        self._safe("log the decision", self._log_decision, result)
        if self.plots:
            self._safe("log the plots", self._log_plots, result)
        best_run = self._nested.get(result.best_id)
        if best_run is not None:
            self._safe("tag the best candidate", self.client.set_tag, best_run, "is_best", "true")
        self._end("FINISHED", {})

    def fail(self, error: BaseException) -> None:
        """End the parent run KILLED (KeyboardInterrupt) or FAILED, with the error; never raises."""
        if self.client is None or self.run_id is None:
            return
        killed = isinstance(error, KeyboardInterrupt)
        # Kept as history: a later resume finishes the run, and the file says when it stopped.
        stamp = time.strftime("%Y%m%d-%H%M%S")
        self._safe("log the error", self.client.log_text, self.run_id,
                   "".join(traceback.format_exception(error)), f"interruptions/{stamp}-{type(error).__name__}.txt")
        self._end("KILLED" if killed else "FAILED", {
            "error": clip(describe(error)), "stop_reason": "interrupted" if killed else "error",
            "promotion_eligible": "false", "promotion_reason": f"run did not finish ({type(error).__name__})"})

    def _end(self, status: str, tags: dict[str, str]) -> None:
        tags = {**tags, "mlflow_tracker.errors": str(len(self.errors))}
        if self.errors:
            tags["mlflow_tracker.first_error"] = clip(self.errors[0])
        self._safe("log the tracker status", self.client.log_batch, self.run_id, tags=tag_list(tags))
        self._safe("end the parent run", self.client.set_terminated, self.run_id, status)
        if self.errors:
            log.warning("MLflow run %s is missing data: %d logging call(s) failed (first: %s)",
                        self.run_id, len(self.errors), self.errors[0])

    def _log_decision(self, result: Result) -> None:
        """Final metrics and tags (verdict, rules, totals), the decision tables and files."""
        cost = result.cost_usd or {}
        metrics: dict[str, float] = {
            "promotion_eligible": float(result.promotion_eligible),
            "baseline_validation_mean": result.baseline_validation.score,
            "candidate_validation_mean": result.candidate_validation.score,
            # Run totals (holdout included), named apart from the per-iteration series.
            "total_metric_calls": result.metric_calls, "total_proposals": result.proposals,
            "total_task_cost_usd": cost.get("task", 0.0), "total_reflection_cost_usd": cost.get("reflection", 0.0),
            "total_cost_usd": math.fsum(cost.values()), "total_reflection_tokens": result.reflection_tokens,
            "candidate_count": result.candidate_count}
        if result.holdout_interval is not None:
            metrics.update({"holdout_delta_low": result.holdout_interval[0],
                            "holdout_delta_high": result.holdout_interval[1],
                            "holdout_confidence": result.confidence or 0.0})
        if result.baseline_holdout.cases:
            metrics.update({"holdout_delta": result.holdout_delta, "holdout_cases": result.baseline_holdout.cases,
                            "baseline_holdout_mean": result.baseline_holdout.score,
                            "candidate_holdout_mean": result.candidate_holdout.score})
            for side, summary in (("holdout_baseline", result.baseline_holdout),
                                  ("holdout_candidate", result.candidate_holdout)):
                metrics.update({safe_key(side, k): v for k, v in summary.objectives.items()})
        if result.transfer is not None and result.transfer["delta"] is not None:
            metrics.update({"transfer_delta": result.transfer["delta"],
                            "transfer_baseline_mean": result.transfer["baseline"],
                            "transfer_candidate_mean": result.transfer["candidate"]})
        revision = result.revision or {}
        verdict = "ELIGIBLE" if result.promotion_eligible else "NOT ELIGIBLE"
        tags = {"promotion_eligible": str(result.promotion_eligible).lower(),
                "promotion_reason": clip(result.promotion_reason), "stop_reason": result.stop_reason,
                "best_candidate_id": result.best_id,
                "submission.status": str(revision.get("status", "submitted")) if revision
                else "not_submitted" if self._submit else "not_requested",
                "submission.revision_id": str(revision.get("revision_id", "")),
                "submission.reason": clip(result.submission_reason or ""),
                # The run's description in the UI.
                "mlflow.note.content": clip(
                    f"**{verdict}**: {result.promotion_reason}. Holdout delta {result.holdout_delta:+.4f} "
                    f"over {result.baseline_holdout.cases} cases; best {result.best_id[:12]} of "
                    f"{result.candidate_count} candidates after {result.proposals} proposals "
                    f"({result.stop_reason}, {result.metric_calls} metric calls)."
                    + (f" {SIMULATION_NOTE}" if self._simulated else ""))}
        for rule in result.promotion_rules:  # a rule's own status (e.g. skipped) when it has one
            metrics[safe_key("rule", rule["rule"])] = float(bool(rule["passed"]))
            tags[safe_key("rule", rule["rule"])] = str(rule.get("status") or ("passed" if rule["passed"] else "failed"))
        client, run_id = self.client, self.run_id
        client.log_batch(run_id, metrics=metric_list(metrics, step=0), tags=tag_list(tags))
        columns = ("case_id", "critical", "baseline", "candidate", "delta")
        client.log_table(run_id, {c: [case[c] for case in result.holdout_cases] for c in columns},
                         "decision/holdout_comparison.json")
        fields = list(dict.fromkeys(["rule", "passed", "detail", *(k for r in result.promotion_rules for k in r)]))
        client.log_table(run_id, {c: [rule.get(c) for rule in result.promotion_rules] for c in fields},
                         "decision/promotion_rules.json")
        client.log_dict(run_id, result.to_dict(), "decision/result.json")
        client.log_dict(run_id, artifact_dict(result.best), "best/candidate.json")
        if result.best.kind == "skill":
            client.log_text(run_id, render(result.best), "best/SKILL.md")

    def _log_plots(self, result: Result) -> None:
        from gepa_lab.tracking.plots import run_figures

        for name, figure in run_figures(result, self._common.get("experiment", "")).items():
            self.client.log_figure(self.run_id, figure, f"plots/{name}.png", save_kwargs={"dpi": 110})
