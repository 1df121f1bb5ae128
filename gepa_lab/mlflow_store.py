"""MLflow store access for `gepa_lab.mlflow_tracker`: experiment lookup, parent and nested run
creation, batched writes, one-directory artifact uploads, dataset inputs, plots, what a resumed
parent run already holds, and the run file that names the parent run.

Each function takes an `MlflowClient`; mlflow (and matplotlib, for plots) is imported inside the
functions, so importing this module stays cheap.
"""

from __future__ import annotations

import json
import logging
import math
import os
import re
import subprocess
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from gepa_lab.mlflow_records import (
    DIGEST_MAX,
    LOGGED_ARTIFACTS_TAG,
    PARENT_RUN_TAG,
    NestedRun,
    clip,
    decision_files,
    decision_metrics_and_tags,
    metric_key,
    ms,
    parent_params_and_files,
    sqlite_path,
)
from gepa_lab.tracking import RunInfo

if TYPE_CHECKING:
    from gepa_lab.engine import Result

log = logging.getLogger("gepa_lab.mlflow")

RUN_FILE = "mlflow_run.json"  # in the run dir: the parent run id, reused on resume


def experiment_id(client: Any, name: str, artifact_location: str | None, uri: str) -> str:
    """The id of the MLflow experiment `name`, created if missing."""
    from mlflow.exceptions import MlflowException

    found = client.get_experiment_by_name(name)
    if found is not None:
        return str(found.experiment_id)
    location = artifact_location
    db = sqlite_path(uri)
    if location is None and db is not None:
        # Beside the database, not in whatever directory the process happens to run in.
        slug = re.sub(r"[^A-Za-z0-9_.-]+", "_", name)
        location = (db.parent / "mlruns" / slug).as_uri()
    try:
        return str(client.create_experiment(name, artifact_location=location))
    except MlflowException:  # created concurrently by a sibling job of a multirun
        found = client.get_experiment_by_name(name)
        if found is None:
            raise
        return str(found.experiment_id)


# -- runs ----------------------------------------------------------------------------------

def create_parent(client: Any, experiment_id: str | None, run: RunInfo, experiment_name: str,
                  resumed_from: str | None) -> str:
    """A new parent run with its tags (ours over MLflow's context tags); returns its id."""
    from mlflow.tracking.context.registry import resolve_tags

    import gepa_lab

    config = run.config
    seed = (config.get("search") or {}).get("random_seed")
    ds = run.dataset
    tags: dict[str, str] = {
        "gepa.run_kind": "parent",
        "experiment": experiment_name,
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
    parent = client.create_run(experiment_id, start_time=ms(run.started_at),
                               tags={**resolve_tags(), **tags}, run_name=f"{experiment_name}-seed{seed}")
    return str(parent.info.run_id)


def log_parent_setup(client: Any, run_id: str, run: RunInfo) -> None:
    """A new parent run's params (the flattened config), config and seed files, dataset inputs."""
    params, files = parent_params_and_files(run)
    log_batch(client, run_id, params=params)
    log_files(client, run_id, files)
    log_inputs(client, run_id, run)


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


def log_nested_run(client: Any, experiment_id: str | None, parent_run_id: str | None,
                   common: dict[str, str], run: NestedRun, safe: Callable[..., Any]) -> str:
    """create (tags) -> log_batch (metrics) -> log_artifacts (one dir) -> terminate. `safe`
    (the tracker's error counter) wraps the cleanup of a run whose writes failed."""
    all_tags = {**common, **run.tags, "gepa.run_kind": "candidate", "gepa.key": run.key,
                PARENT_RUN_TAG: str(parent_run_id)}
    if run.tables:
        all_tags[LOGGED_ARTIFACTS_TAG] = json.dumps([{"path": p, "type": "table"} for p in run.tables])
    now = ms()
    child = client.create_run(experiment_id, start_time=now, tags=all_tags, run_name=run.name)
    run_id: str = child.info.run_id
    try:
        log_batch(client, run_id, metrics=metric_list(run.metrics, now, step=0))
        log_files(client, run_id, {**run.files, **run.tables})
    except BaseException as exc:  # never leave a nested run RUNNING, Ctrl-C included
        status = "KILLED" if isinstance(exc, KeyboardInterrupt) else "FAILED"
        safe("end unfinished nested run", client.set_terminated, run_id, status)
        raise
    client.set_terminated(run_id, "FINISHED")
    return run_id


def log_decision(client: Any, run_id: str, result: Result, *, experiment_name: str, seed: str | None,
                 proposals: int, submit_requested: bool) -> None:
    """The parent run's decision: final metrics and tags, then the decision and best-candidate files."""
    metrics, tags = decision_metrics_and_tags(result, experiment_name=experiment_name, seed=seed,
                                              proposals=proposals, submit_requested=submit_requested)
    log_batch(client, run_id, metrics=metric_list(metrics, ms(), step=0), tags=tags)
    log_files(client, run_id, decision_files(result))


def log_pending(client: Any, run_id: str, rows: list[list[Any]], logged_steps: set[int]) -> list[Any]:
    """Parent metrics an interrupted run had buffered at its last checkpoint (see the tracker's
    `checkpoint`) and the store lacks; returns those it logged."""
    from mlflow.entities import Metric

    missing = [Metric(k, float(v), int(ts), int(step)) for k, v, ts, step in rows
               if int(step) not in logged_steps]
    if missing:
        log_batch(client, run_id, metrics=missing)
    return missing


def logged_children(client: Any, experiment_id: str | None, run_id: str) -> tuple[set[str], dict[str, str]]:
    """(keys of the nested runs a parent run holds, candidate id -> run id of seed and accepted)."""
    keys: set[str] = set()
    nested: dict[str, str] = {}
    children = client.search_runs([experiment_id], f"tags.`{PARENT_RUN_TAG}` = '{run_id}'",
                                  max_results=50_000)  # MLflow's cap; one per proposal
    for child in children:
        key, cid = child.data.tags.get("gepa.key"), child.data.tags.get("candidate_id")
        if key:
            keys.add(key)
        if cid and child.data.tags.get("status") in ("seed", "accepted"):
            nested[cid] = child.info.run_id
    return keys, nested


def logged_trajectory(client: Any, run_id: str) -> tuple[set[int], list[tuple[float, float]]]:
    """(iterations whose parent metrics are in the store, their (metric calls, best mean))."""
    history = {k: {m.step: m.value for m in client.get_metric_history(run_id, k)}
               for k in ("metric_calls", "best_validation_mean")}
    steps = set(history["metric_calls"])
    return steps, [(history["metric_calls"][s], history["best_validation_mean"].get(s, math.nan))
                   for s in sorted(steps)]


# -- writes ----------------------------------------------------------------------------------

def metric_list(values: dict[str, float], timestamp: int, step: int) -> list[Any]:
    from mlflow.entities import Metric

    # NaN / inf are legal MLflow values but useless in comparisons; skip them explicitly.
    return [Metric(k, float(v), timestamp, step) for k, v in values.items() if math.isfinite(float(v))]


def log_batch(client: Any, run_id: str, *, metrics: list[Any] | None = None,
              params: dict[str, str] | None = None, tags: dict[str, str] | None = None) -> bool:
    from mlflow.entities import Param, RunTag

    client.log_batch(run_id, metrics=metrics or [],
                     params=[Param(k, v) for k, v in (params or {}).items()],
                     tags=[RunTag(k, v) for k, v in (tags or {}).items()])
    return True


def log_files(client: Any, run_id: str, files: dict[str, Any]) -> None:
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
        client.log_artifacts(run_id, tmp)


def log_inputs(client: Any, run_id: str, run: RunInfo) -> None:
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
    client.log_inputs(run_id, datasets=inputs)


def log_plots(client: Any, run_id: str, result: Result, *, experiment_name: str,
              pool: list[dict[str, Any]], validation: dict[str, list[tuple[str, float]]],
              trajectory: list[tuple[float, float]]) -> None:
    """Lineage, validation heatmap, best-vs-metric-calls and holdout deltas under `plots/`."""
    from gepa_lab import plots

    cases: list[str] = []
    for scores in validation.values():
        cases = [c for c, _ in scores]
        break
    rows = []
    for node in pool:
        by_case = dict(validation.get(node["id"], []))
        rows.append([by_case.get(c) for c in cases])
    figures = {
        "lineage": plots.lineage_figure(pool, result.best_id,
                                        title=f"Candidate lineage: {experiment_name}"),
        "validation_heatmap": plots.heatmap_figure([n["id"] for n in pool], cases, rows),
        "best_vs_metric_calls": plots.trajectory_figure({experiment_name: trajectory}),
        "holdout_deltas": plots.holdout_delta_figure(result.holdout_cases),
    }
    with tempfile.TemporaryDirectory(prefix="gepa-lab-plots-") as tmp:
        plots.save_figures(figures, Path(tmp) / "plots")
        client.log_artifacts(run_id, tmp)


def read_run_file(run_dir: Path | None) -> dict[str, Any] | None:
    path = run_dir / RUN_FILE if run_dir is not None else None
    if path is None or not path.is_file():
        return None
    return json.loads(path.read_text(encoding="utf-8"))


def write_run_file(run_dir: Path | None, record: dict[str, Any]) -> None:
    if run_dir is None:
        return
    run_dir.mkdir(parents=True, exist_ok=True)
    tmp = run_dir / f".{RUN_FILE}.tmp"
    tmp.write_text(json.dumps(record, indent=2) + "\n", encoding="utf-8")
    os.replace(tmp, run_dir / RUN_FILE)


def checkpoint_pool(run_dir: str | None, pending_key: str,
                    ) -> tuple[list[list[Any]], list[dict[str, Any]]] | None:
    """(parent metrics buffered at the last checkpoint, the pool) a resumed search continues from."""
    from gepa_lab.checkpoint import CHECKPOINT_FILE, load_checkpoint

    if run_dir is None or not (Path(run_dir) / CHECKPOINT_FILE).is_file():
        return None  # killed before the first checkpoint: the engine starts over from the seed
    try:
        checkpoint = load_checkpoint(Path(run_dir))
        pool = checkpoint["state"]["pool"]
    except (ValueError, KeyError, OSError) as exc:
        log.warning("resumed MLflow run: plots and metrics may miss earlier iterations (%s)", exc)
        return None
    return checkpoint.get(pending_key) or [], pool
