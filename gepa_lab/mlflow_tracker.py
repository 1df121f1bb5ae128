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
"""

from __future__ import annotations

import difflib
import json
import logging
import math
import os
import re
import subprocess
import tempfile
import time
import traceback
import urllib.request
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from gepa_lab.tracking import CandidateInfo, EvaluationRecord, IterationStats, Proposal, RunInfo

if TYPE_CHECKING:
    from gepa_lab.engine import Result

log = logging.getLogger("gepa_lab.mlflow")

RUN_FILE = "mlflow_run.json"  # in the run dir: the parent run id, reused on resume
CHECKPOINT_KEY = "mlflow_pending_metrics"  # parent metrics not yet in the store, per checkpoint
DEFAULT_EXPERIMENT = "gepa-lab"
# MLflow 3.17 limits (mlflow/utils/validation.py).
PARAM_MAX, TAG_MAX, KEY_MAX, DIGEST_MAX = 6000, 8000, 250, 36
# mlflow.utils.mlflow_tags names, spelled out so this module imports without mlflow.
PARENT_RUN_TAG, LOGGED_ARTIFACTS_TAG = "mlflow.parentRunId", "mlflow.loggedArtifacts"
_BAD_KEY_CHARS = re.compile(r"[^A-Za-z0-9_\-. /]")
_PHASE_PREFIX = {"feedback-parent": "minibatch_parent", "feedback-child": "minibatch_child",
                 "validation": "validation"}


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


def sqlite_path(uri: str) -> Path | None:
    """The database file of a `sqlite:///...` URI (relative paths against the cwd)."""
    if not uri.startswith("sqlite:///"):
        return None
    raw = uri[len("sqlite:///"):].split("?", 1)[0]
    return Path(raw).resolve() if raw and raw != ":memory:" else None


def build_tracker(cfg: MlflowTrackingConfig, experiment_name: str, run_dir: Path | None) -> MlflowTracker:
    return MlflowTracker(cfg.uri, experiment_name, run_dir, mlflow_experiment=cfg.experiment,
                         artifact_location=cfg.artifact_location, plots=cfg.plots,
                         flush_every=cfg.flush_every, flush_seconds=cfg.flush_seconds)


# -- pure helpers ---------------------------------------------------------------------------

def _param_text(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if value is None:
        return "null"
    if isinstance(value, (list, tuple, dict)):
        return json.dumps(value, ensure_ascii=False, sort_keys=True)
    return str(value)


def flatten_config(config: dict[str, Any], prefix: str = "") -> dict[str, str]:
    """Dotted keys -> text values; lists stay one JSON value (a list is one setting)."""
    out: dict[str, str] = {}
    for key, value in config.items():
        name = f"{prefix}{_BAD_KEY_CHARS.sub('_', str(key))}"
        if isinstance(value, dict) and value:
            out.update(flatten_config(value, name + "."))
        else:
            out[name] = _param_text(value)
    return out


def split_params(flat: dict[str, str]) -> tuple[dict[str, str], dict[str, str]]:
    """(params, long values). A value MLflow cannot store whole is not cut: the param says where
    the full value is, and the full value goes to the artifact `config/long_params.json`."""
    params, long_values = {}, {}
    for key, value in flat.items():
        if len(value) > PARAM_MAX or len(key) > KEY_MAX:
            long_values[key] = value
            if len(key) <= KEY_MAX:
                params[key] = f"<{len(value)} chars: see artifact config/long_params.json>"
        else:
            params[key] = value
    return params, long_values


def metric_key(*parts: str) -> str:
    return _BAD_KEY_CHARS.sub("_", ".".join(parts))[:KEY_MAX]


def clip(text: str, limit: int = TAG_MAX) -> str:
    """For tags only, whose full text is also in an artifact; the cut is marked, never silent."""
    if len(text) <= limit:
        return text
    marker = f" …[{len(text) - limit + 40} chars cut; full text in artifacts]"
    return text[: limit - len(marker)] + marker


def table(columns: list[str], rows: Iterable[Iterable[Any]]) -> dict[str, Any]:
    """MLflow's table artifact format (what `log_table` writes and `load_table` reads)."""
    return {"columns": columns, "data": [list(r) for r in rows]}


def render(artifact: dict[str, Any] | None) -> str:
    """Readable text of an artifact for display and diffs: SKILL.md for skills, else one section
    per field (a prompt's text diffs line by line, not as one JSON string)."""
    if artifact is None:
        return ""
    if artifact.get("kind", "skill") == "skill":
        from gepa_lab.artifacts import artifact_from_dict

        try:
            return artifact_from_dict(artifact).render_markdown()  # type: ignore[attr-defined]
        except ValueError:
            pass
    parts = []
    for key, value in artifact.items():
        text = "\n".join(map(str, value)) if isinstance(value, list) else str(value)
        parts.append(f"## {key}\n\n{text.rstrip()}\n")
    return "\n".join(parts)


def _ms(iso: str | None = None) -> int:
    if iso:
        try:
            return int(datetime.fromisoformat(iso).timestamp() * 1000)
        except ValueError:
            pass
    return int(time.time() * 1000)


def git_state(root: Path) -> tuple[str, bool] | None:
    """(commit, dirty) of the checkout holding `root`, or None outside a repository / no commit."""
    try:
        sha = subprocess.run(["git", "-C", str(root), "rev-parse", "--verify", "-q", "HEAD"],
                             capture_output=True, text=True, timeout=5)
        if sha.returncode != 0 or not sha.stdout.strip():
            return None
        status = subprocess.run(["git", "-C", str(root), "status", "--porcelain", "-uno"],
                                capture_output=True, text=True, timeout=5)
        return sha.stdout.strip(), bool(status.stdout.strip())
    except (OSError, subprocess.SubprocessError):
        return None


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

    # -- store access ------------------------------------------------------------------
    def _safe(self, what: str, fn: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
        try:
            return fn(*args, **kwargs)
        except Exception as exc:  # any MLflow / IO failure: count and report, keep searching
            message = f"{what}: {type(exc).__name__}: {exc}"
            self.errors.append(message)
            log.warning("MLflow logging failed (%s); the run record in the run dir still has it", message)
            return None

    def _experiment(self) -> str:
        from mlflow.exceptions import MlflowException

        found = self.client.get_experiment_by_name(self.mlflow_experiment)
        if found is not None:
            return str(found.experiment_id)
        location = self.artifact_location
        db = sqlite_path(self.uri)
        if location is None and db is not None:
            # Beside the database, not in whatever directory the process happens to run in.
            slug = re.sub(r"[^A-Za-z0-9_.-]+", "_", self.mlflow_experiment)
            location = (db.parent / "mlruns" / slug).as_uri()
        try:
            return str(self.client.create_experiment(self.mlflow_experiment, artifact_location=location))
        except MlflowException:  # created concurrently by a sibling job of a multirun
            found = self.client.get_experiment_by_name(self.mlflow_experiment)
            if found is None:
                raise
            return str(found.experiment_id)

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
        self._info = run
        self._preflight()
        try:
            from mlflow import MlflowClient

            self.client = MlflowClient(tracking_uri=self.uri)
            self.experiment_id = self._experiment()
            stored = self._stored_run() if run.resumed else None
            if stored is not None:
                self._resume(stored, run)
            else:
                if run.resumed:
                    log.warning("resumed run has no %s: a new MLflow run holds only what follows the "
                                "interruption (the run record has all of it)", RUN_FILE)
                self._create_parent(run, resumed_from=None)
            if run.resumed:
                self._restore_pool(run)
            self._write_run_file()
        except MlflowTrackingError:
            raise
        except Exception as exc:
            if self.run_id is not None:
                self._safe("mark parent FAILED", self.client.set_terminated, self.run_id, "FAILED")
            self.client = None
            raise MlflowTrackingError(f"cannot log to MLflow at {self.uri}: {type(exc).__name__}: {exc}") from exc

    def candidate(self, candidate: CandidateInfo) -> None:
        scores = self._validation.get(candidate.id, [])
        mean = math.fsum(s for _, s in scores) / len(scores) if scores else math.nan
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
        if record.phase in _PHASE_PREFIX:
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

        now = _ms()
        values = {
            "best_validation_mean": stats.best_validation_mean,
            "pool_size": stats.pool_size,
            "front_size": stats.front_size,
            "metric_calls": stats.metric_calls,
            "task_cost_usd": stats.task_cost_usd,
            "reflection_cost_usd": stats.reflection_cost_usd,
            "cost_usd": stats.task_cost_usd + stats.reflection_cost_usd,
            "proposals": len(self._proposal_iterations),
        }
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
            text = clip(json.dumps(data, ensure_ascii=False, default=str))
            self._safe(f"note {kind}", self.client.set_tag, self.run_id, metric_key("note", kind), text)

    def finish(self, result: Result) -> None:
        if self.client is None or self.run_id is None:
            return
        self._flush()
        self._safe("log decision", self._log_decision, result)
        if self.plots:
            self._safe("log plots", self._log_plots, result)
        best_run = self._nested.get(result.best_id)
        if best_run is not None:
            self._safe("tag best candidate", self.client.set_tag, best_run, "is_best", "true")
        tags = {"mlflow_tracker.errors": str(len(self.errors))}
        if self.errors:
            tags["mlflow_tracker.first_error"] = clip(self.errors[0])
        self._safe("log tracker status", self._log_batch, self.run_id, tags=tags)
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
        message = f"{type(error).__name__}: {error}"
        tags = {
            "error": clip(message),
            "stop_reason": "interrupted" if killed else "error",
            "promotion_eligible": "false",
            "promotion_reason": f"run did not finish ({type(error).__name__})",
            "mlflow_tracker.errors": str(len(self.errors)),
        }
        self._safe("log failure tags", self._log_batch, self.run_id, tags=tags)
        trace = "".join(traceback.format_exception(error))
        self._safe("log traceback", self._log_files, self.run_id, {"error.txt": trace})
        self._safe("end parent run", self.client.set_terminated, self.run_id,
                   "KILLED" if killed else "FAILED")

    # -- parent run --------------------------------------------------------------------
    def _create_parent(self, run: RunInfo, resumed_from: str | None) -> None:
        from mlflow.tracking.context.registry import resolve_tags

        import gepa_lab

        config = run.config
        seed = (config.get("search") or {}).get("random_seed")
        ds = run.dataset
        tags: dict[str, str] = {
            "gepa.run_kind": "parent",
            "experiment": self.experiment_name,
            "random_seed": str(seed),
            "algorithm": run.algorithm,
            "gepa.experiment_id": run.experiment_id,
            "gepa_lab.version": getattr(gepa_lab, "__version__", "unknown"),
            "dataset.id": ds.id,
            "dataset.version": ds.version,
            "submit": "true" if run.submit else "false",
            "promotion_eligible": "pending",
        }
        for split, digest in run.digests.items():
            tags[f"dataset.digest.{split}"] = digest
            tags[f"dataset.cases.{split}"] = str(len(ds.split(split)))
        for group, option in (config.get("hydra_choices") or {}).items():
            if option is not None and not str(group).startswith("hydra/"):
                tags[metric_key("hydra", str(group))] = str(option)
        git = git_state(Path(__file__).resolve().parent.parent) or git_state(Path.cwd())
        if git is not None:
            tags.update({"git.commit": git[0], "git.dirty": str(git[1]).lower(),
                         "mlflow.source.git.commit": git[0]})
        if run.run_dir:
            tags["run_dir"] = clip(str(Path(run.run_dir).resolve()))
        if resumed_from:
            tags["resumed_from_mlflow_run"] = resumed_from
        self._common = {"experiment": self.experiment_name, "random_seed": str(seed)}
        name = f"{self.experiment_name}-seed{seed}"
        parent = self.client.create_run(self.experiment_id, start_time=_ms(run.started_at),
                                        tags={**resolve_tags(), **tags}, run_name=name)
        self.run_id = parent.info.run_id
        params, long_values = split_params(flatten_config({k: v for k, v in config.items()
                                                            if k != "hydra_choices"}))
        self._log_batch(self.run_id, params=params)
        files: dict[str, Any] = {"config/resolved_config.json": config}
        if long_values:
            files["config/long_params.json"] = long_values
        files["seed/candidate.json"] = run.seed_artifact
        self._log_files(self.run_id, files)
        self._log_inputs(run)

    def _log_inputs(self, run: RunInfo) -> None:
        """Each split as a run input (context = split), digest = our sha256 prefix: MLflow's own
        pandas digest drops list / dict columns and only looks at the first 10,000 rows."""
        import pandas as pd
        from mlflow.data.pandas_dataset import from_pandas
        from mlflow.entities import DatasetInput, InputTag
        from mlflow.utils.mlflow_tags import MLFLOW_DATASET_CONTEXT

        inputs = []
        for split, digest in run.digests.items():
            cases = run.dataset.split(split)
            frame = pd.DataFrame(
                [{"id": c.id, "input": c.input, "expected": c.expected or "", "critical": c.critical,
                  "metadata": json.dumps(c.metadata, sort_keys=True)} for c in cases],
                columns=["id", "input", "expected", "critical", "metadata"],
            )
            dataset = from_pandas(frame, name=f"{run.dataset.id}/{split}",
                                  digest=digest[:DIGEST_MAX])
            inputs.append(DatasetInput(dataset=dataset._to_mlflow_entity(), tags=[
                InputTag(MLFLOW_DATASET_CONTEXT, split),
                InputTag("sha256", digest),
                InputTag("dataset.version", run.dataset.version),
            ]))
        self.client.log_inputs(self.run_id, datasets=inputs)

    def _stored_run(self) -> dict[str, Any] | None:
        path = self.run_dir / RUN_FILE if self.run_dir is not None else None
        if path is None or not path.is_file():
            return None
        return json.loads(path.read_text(encoding="utf-8"))

    def _write_run_file(self) -> None:
        if self.run_dir is None:
            return
        self.run_dir.mkdir(parents=True, exist_ok=True)
        record = {"run_id": self.run_id, "experiment_id": self.experiment_id,
                  "mlflow_experiment": self.mlflow_experiment, "tracking_uri": self.uri}
        tmp = self.run_dir / f".{RUN_FILE}.tmp"
        tmp.write_text(json.dumps(record, indent=2) + "\n", encoding="utf-8")
        os.replace(tmp, self.run_dir / RUN_FILE)

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
        self._log_batch(self.run_id, tags={"resume_count": str(count), "resumed": "true"})
        children = self.client.search_runs([self.experiment_id], f"tags.`{PARENT_RUN_TAG}` = '{self.run_id}'",
                                           max_results=50_000)  # MLflow's cap; one per proposal
        for child in children:
            key, cid = child.data.tags.get("gepa.key"), child.data.tags.get("candidate_id")
            if key:
                self._logged_keys.add(key)
            if cid and child.data.tags.get("status") in ("seed", "accepted"):
                self._nested[cid] = child.info.run_id
        self._proposal_iterations = {int(k.split("-", 1)[1]) for k in self._logged_keys
                                     if k.startswith("iteration-")}
        history = {k: {m.step: m.value for m in self.client.get_metric_history(self.run_id, k)}
                   for k in ("metric_calls", "best_validation_mean")}
        self._logged_steps = set(history["metric_calls"])
        self._trajectory += [(history["metric_calls"][s], history["best_validation_mean"].get(s, math.nan))
                             for s in sorted(self._logged_steps)]

    def _restore_pool(self, run: RunInfo) -> None:
        """The pool the resumed search continues from (for lineage and heatmap plots)."""
        from gepa_lab.checkpoint import CHECKPOINT_FILE, load_checkpoint

        if run.run_dir is None or not (Path(run.run_dir) / CHECKPOINT_FILE).is_file():
            return  # killed before the first checkpoint: the engine starts over from the seed
        try:
            checkpoint = load_checkpoint(Path(run.run_dir))
            pool = checkpoint["state"]["pool"]
        except (ValueError, KeyError, OSError) as exc:
            log.warning("resumed MLflow run: plots and metrics may miss earlier iterations (%s)", exc)
            return
        self._log_pending(checkpoint.get(CHECKPOINT_KEY) or [])
        for row in pool:
            scores = [(ev["case_id"], float(ev["score"])) for ev in row["validation"]]
            self._validation[row["id"]] = scores
            mean = math.fsum(s for _, s in scores) / len(scores) if scores else math.nan
            self._pool.append({"id": row["id"], "parent_id": row["parent_id"],
                               "iteration": row["iteration"], "validation_mean": mean})
            if row["parent_id"] is None:
                self._trajectory.append((float(len(scores)), mean))

    def _log_pending(self, rows: list[list[Any]]) -> None:
        """Metrics an interrupted run had buffered at its last checkpoint (see `checkpoint`)."""
        from mlflow.entities import Metric

        missing = [Metric(k, float(v), int(ts), int(step)) for k, v, ts, step in rows
                   if int(step) not in self._logged_steps]
        if missing:
            self._log_batch(str(self.run_id), metrics=missing)
            self._logged_steps.update(m.step for m in missing)
            by_step: dict[int, dict[str, float]] = {}
            for m in missing:
                by_step.setdefault(m.step, {})[m.key] = m.value
            self._trajectory += [(v["metric_calls"], v["best_validation_mean"]) for v in by_step.values()
                                 if "metric_calls" in v and "best_validation_mean" in v]

    def _flush(self) -> None:
        if self.client is None or self.run_id is None or not self._metrics:
            return
        metrics, self._metrics, self._buffered_steps = self._metrics, [], 0
        self._flushed_at = time.monotonic()
        if self._safe("log iteration metrics", self._log_batch, self.run_id, metrics=metrics) is not None:
            self._logged_steps.update(m.step for m in metrics)

    # -- nested runs -------------------------------------------------------------------
    def _log_seed(self, info: CandidateInfo, record: EvaluationRecord | None) -> None:
        metrics = {"iteration": -1.0}
        if record is not None:
            metrics.update(self._record_metrics(record))
        tags = {"candidate_id": info.id, "component": "", "iteration": "-1", "status": "seed",
                "reason": "seed artifact"}
        files = {"candidate.json": info.artifact, **self._render_files(info.artifact, None)}
        tables = {}
        if record is not None:
            tables["validation.json"] = self._validation_table(record)
        self._nested[info.id] = self._nested_run(
            "seed", f"seed-{info.id[:8]}", tags, metrics, files, tables)

    def _log_proposal(self, p: Proposal, records: list[EvaluationRecord]) -> None:
        tags = {"parent_id": p.parent_id, "component": p.component, "iteration": str(p.iteration),
                "status": p.status, "reason": clip(p.reason), "paired_seed": str(p.paired_seed),
                "minibatch": clip(",".join(p.minibatch))}
        if p.candidate_id:
            tags["candidate_id"] = p.candidate_id
        metrics: dict[str, float] = {"iteration": float(p.iteration),
                                     "minibatch_size": float(len(p.minibatch)),
                                     "minibatch_parent_sum": math.fsum(p.parent_scores)}
        if p.child_scores:
            metrics["minibatch_child_sum"] = math.fsum(p.child_scores)
        owner = {"feedback-parent": p.parent_id, "feedback-child": p.candidate_id, "validation": p.candidate_id}
        own = [r for r in records if r.phase in owner and r.candidate_id == owner[r.phase]]
        for record in own:
            metrics.update(self._record_metrics(record))
        files: dict[str, Any] = {
            "reflection.json": {"component": p.component, "records": p.records, "reply": p.reply,
                                "rationale": p.rationale, "status": p.status, "reason": p.reason},
        }
        if p.artifact is not None:
            files["candidate.json"] = p.artifact
            files.update(self._render_files(p.artifact, p.parent_artifact))
        child = dict(zip(p.minibatch, p.child_scores, strict=False))
        tables = {"minibatch.json": table(
            ["case_id", "parent_score", "child_score"],
            [(case, score, child.get(case)) for case, score in zip(p.minibatch, p.parent_scores, strict=False)],
        )}
        validation = next((r for r in own if r.phase == "validation"), None)
        if validation is not None:
            tables["validation.json"] = self._validation_table(validation)
        name = f"it{p.iteration:03d}-{p.status}" + (f"-{p.candidate_id[:8]}" if p.candidate_id else "")
        run_id = self._nested_run(f"iteration-{p.iteration}", name, tags, metrics, files, tables)
        if p.status == "accepted" and p.candidate_id:
            self._nested[p.candidate_id] = run_id

    @staticmethod
    def _record_metrics(record: EvaluationRecord) -> dict[str, float]:
        prefix = _PHASE_PREFIX[record.phase]
        out = {f"{prefix}_mean": record.summary.score}
        if record.phase == "validation":
            out["validation_cases"] = float(record.summary.cases)
        for name, value in record.summary.objectives.items():
            out[metric_key(prefix, name)] = value
        return out

    @staticmethod
    def _validation_table(record: EvaluationRecord) -> dict[str, Any]:
        objectives = sorted({k for e in record.evaluations for k in e.objectives})
        return table(["case_id", "score", *objectives],
                     [[e.case_id, e.score, *(e.objectives.get(k) for k in objectives)] for e in record.evaluations])

    @staticmethod
    def _render_files(artifact: dict[str, Any], parent: dict[str, Any] | None) -> dict[str, str]:
        files = {}
        text = render(artifact)
        if artifact.get("kind", "skill") == "skill":
            files["SKILL.md"] = text
        if parent is not None:
            files["diff.patch"] = "".join(difflib.unified_diff(
                render(parent).splitlines(keepends=True), text.splitlines(keepends=True),
                fromfile="parent", tofile="candidate"))
        return files

    def _nested_run(self, key: str, name: str, tags: dict[str, str], metrics: dict[str, float],
                    files: dict[str, Any], tables: dict[str, dict[str, Any]]) -> str:
        """create (tags) -> log_batch (metrics) -> log_artifacts (one dir) -> terminate."""
        all_tags = {**self._common, **tags, "gepa.run_kind": "candidate", "gepa.key": key,
                    PARENT_RUN_TAG: str(self.run_id)}
        if tables:
            all_tags[LOGGED_ARTIFACTS_TAG] = json.dumps([{"path": p, "type": "table"} for p in tables])
        now = _ms()
        child = self.client.create_run(self.experiment_id, start_time=now, tags=all_tags, run_name=name)
        run_id = child.info.run_id
        try:
            self._log_batch(run_id, metrics=self._metric_list(metrics, now, step=0))
            self._log_files(run_id, {**files, **tables})
        except BaseException as exc:  # never leave a nested run RUNNING, Ctrl-C included
            status = "KILLED" if isinstance(exc, KeyboardInterrupt) else "FAILED"
            self._safe("end unfinished nested run", self.client.set_terminated, run_id, status)
            raise
        self.client.set_terminated(run_id, "FINISHED")
        self._logged_keys.add(key)
        return run_id

    # -- decision and plots ------------------------------------------------------------
    def _log_decision(self, result: Result) -> None:
        assert self.run_id is not None
        has_holdout = result.baseline_holdout.cases > 0
        cost = getattr(result, "cost_usd", {}) or {}
        metrics: dict[str, float] = {
            "promotion_eligible": 1.0 if result.promotion_eligible else 0.0,
            "baseline_validation_mean": result.baseline_validation.score,
            "candidate_validation_mean": result.candidate_validation.score,
            # Run totals (holdout included), named apart from the per-iteration series.
            "total_metric_calls": float(result.metric_calls),
            "total_proposals": float(len(self._proposal_iterations)),
            "total_task_cost_usd": float(cost.get("task", 0.0)),
            "total_reflection_cost_usd": float(cost.get("reflection", 0.0)),
            "total_cost_usd": float(math.fsum(cost.values())),
            "candidate_count": float(result.candidate_count),
        }
        if has_holdout:
            metrics.update({"holdout_delta": result.holdout_delta,
                            "baseline_holdout_mean": result.baseline_holdout.score,
                            "candidate_holdout_mean": result.candidate_holdout.score,
                            "holdout_cases": float(result.baseline_holdout.cases)})
            for side, summary in (("holdout_baseline", result.baseline_holdout),
                                  ("holdout_candidate", result.candidate_holdout)):
                metrics.update({metric_key(side, k): v for k, v in summary.objectives.items()})
        for rule in result.promotion_rules:
            metrics[metric_key("rule", rule["rule"])] = 1.0 if rule["passed"] else 0.0
        revision = result.revision or {}
        if revision:
            submission = str(revision.get("status", "submitted"))
        else:
            submission = "not_submitted" if self._info is not None and self._info.submit else "not_requested"
        tags = {
            "promotion_eligible": "true" if result.promotion_eligible else "false",
            "promotion_reason": clip(result.promotion_reason),
            "stop_reason": result.stop_reason,
            "best_candidate_id": result.best_id,
            "submission.status": submission,
            "submission.revision_id": str(revision.get("revision_id", "")),
            "submission.reason": clip(result.submission_reason or ""),
            "mlflow.note.content": self._note(result, has_holdout),
            LOGGED_ARTIFACTS_TAG: json.dumps([
                {"path": "decision/holdout_comparison.json", "type": "table"},
                {"path": "decision/promotion_rules.json", "type": "table"},
            ]),
        }
        for rule in result.promotion_rules:
            tags[metric_key("rule", rule["rule"])] = "passed" if rule["passed"] else "failed"
        self._log_batch(self.run_id, metrics=self._metric_list(metrics, _ms(), step=0), tags=tags)
        files: dict[str, Any] = {
            "decision/holdout_comparison.json": table(
                ["case_id", "critical", "baseline", "candidate", "delta"],
                [(c["case_id"], c["critical"], c["baseline"], c["candidate"], c["delta"])
                 for c in result.holdout_cases]),
            "decision/promotion_rules.json": table(
                ["rule", "passed", "detail"], [(r["rule"], r["passed"], r["detail"]) for r in result.promotion_rules]),
            "decision/result.json": (result_dict := result.to_dict()),
        }
        best = result_dict["best"]
        files["best/candidate.json"] = best
        if best.get("kind", "skill") == "skill":
            files["best/SKILL.md"] = render(best)
        self._log_files(self.run_id, files)

    def _note(self, result: Result, has_holdout: bool) -> str:
        verdict = "ELIGIBLE" if result.promotion_eligible else "NOT ELIGIBLE"
        lines = [f"**{self.experiment_name}** seed {self._common.get('random_seed')}: **{verdict}** — "
                 f"{result.promotion_reason}",
                 "",
                 f"- validation: seed {result.baseline_validation.score:.4f} → best "
                 f"{result.candidate_validation.score:.4f} ({result.best_id[:12]})"]
        if has_holdout:
            lines.append(f"- holdout: {result.baseline_holdout.score:.4f} → {result.candidate_holdout.score:.4f} "
                         f"(delta {result.holdout_delta:+.4f}, {result.baseline_holdout.cases} cases)")
        lines.append(f"- stop: {result.stop_reason} after {result.metric_calls} metric calls; "
                     f"{len(self._proposal_iterations)} proposals, {result.candidate_count} candidates in the pool")
        return clip("\n".join(lines))

    def _log_plots(self, result: Result) -> None:
        from gepa_lab import plots

        cases: list[str] = []
        for scores in self._validation.values():
            cases = [c for c, _ in scores]
            break
        rows = []
        for node in self._pool:
            by_case = dict(self._validation.get(node["id"], []))
            rows.append([by_case.get(c) for c in cases])
        figures = {
            "lineage": plots.lineage_figure(self._pool, result.best_id,
                                            title=f"Candidate lineage: {self.experiment_name}"),
            "validation_heatmap": plots.heatmap_figure([n["id"] for n in self._pool], cases, rows),
            "best_vs_metric_calls": plots.trajectory_figure({self.experiment_name: self._trajectory}),
            "holdout_deltas": plots.holdout_delta_figure(result.holdout_cases),
        }
        with tempfile.TemporaryDirectory(prefix="gepa-lab-plots-") as tmp:
            plots.save_figures(figures, Path(tmp) / "plots")
            self.client.log_artifacts(self.run_id, tmp)

    # -- low-level writes --------------------------------------------------------------
    @staticmethod
    def _metric_list(values: dict[str, float], timestamp: int, step: int) -> list[Any]:
        from mlflow.entities import Metric

        # NaN / inf are legal MLflow values but useless in comparisons; skip them explicitly.
        return [Metric(k, float(v), timestamp, step) for k, v in values.items() if math.isfinite(float(v))]

    def _log_batch(self, run_id: str, *, metrics: list[Any] | None = None,
                   params: dict[str, str] | None = None, tags: dict[str, str] | None = None) -> bool:
        from mlflow.entities import Param, RunTag

        self.client.log_batch(run_id, metrics=metrics or [],
                              params=[Param(k, v) for k, v in (params or {}).items()],
                              tags=[RunTag(k, v) for k, v in (tags or {}).items()])
        return True

    def _log_files(self, run_id: str, files: dict[str, Any]) -> None:
        """All of a run's files in one `log_artifacts` call (one directory copy)."""
        with tempfile.TemporaryDirectory(prefix="gepa-lab-mlflow-") as tmp:
            for rel, content in files.items():
                path = Path(tmp) / rel
                path.parent.mkdir(parents=True, exist_ok=True)
                if isinstance(content, str):
                    path.write_text(content, encoding="utf-8")
                else:
                    path.write_text(json.dumps(content, indent=2, ensure_ascii=False, default=str) + "\n",
                                    encoding="utf-8")
            self.client.log_artifacts(run_id, tmp)
