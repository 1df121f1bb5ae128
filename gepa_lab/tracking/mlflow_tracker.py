"""MLflow tracking (docs/design.md §6): a run's decision, its pool and every proposal, comparable
in `mlflow ui` -- logged by a separate process so the search never waits for MLflow.

Layout in the store
- The MLflow experiment (default `gepa-lab`) holds the parent runs only: one per run, named
  `<experiment>-seed<N>-<experiment id prefix>`, tagged `experiment` (the gepa experiment),
  `random_seed`, `sweep_id`, ... Its saved view (`mlflow_links.DECISIONS_VIEW`, opened by every
  link gepa-lab prints) shows the decision columns: holdout delta and interval, eligible, reason,
  winner, cost, calls, the researcher's conclusion.
- `<experiment>-candidates` holds one run per pool member (the seed and every accepted child),
  linked to its parent by `gepa.parent_run_id` (and MLflow's `mlflow.parentRunId`): metrics, the
  candidate's text (`candidate.md`), its diff to its parent (`diff.txt`) and `candidate.json` (the
  artifact, what the reflector saw and replied, per-case scores): three files, three uploads.
- The parent holds per iteration (step = iteration) the `search/...` metrics, every proposal as a
  row of the `proposals.json` table, and at the end the decision (metrics, tags, description),
  tables and plots, all at the artifact root under the same names in every run (so MLflow's
  comparison shows them side by side).

Logging off the critical path: each hook turns the event into plain data and writes it to the
logging process's pipe before it returns (`mlflow_worker.py`); the engine waits only at start for
a remote store (until its parent run exists, so a bad store fails before anything is spent), in
`links()` until the parent run exists, and at the end of the run until everything is written.
At a round end (`round_end()`) the round's data is already out of the engine process; the logger
then writes the parent's metrics and the proposals table. What a SIGKILL can lose: the
README, "Comparing runs in MLflow".

Failure policy: `start()` raises `TrackingError` for a store that cannot work (unwritable SQLite
file, unreachable server, and for non-SQLite stores anything that stops the parent run from being
created). After that an MLflow error never stops the search (the run record in the run dir is the
source of truth): the logger counts it and the parent gets `mlflow_tracker.errors` (and
`mlflow_tracker.first_error`); the tracker logs a warning when the run ends.
"""

from __future__ import annotations

import json
import logging
import os
import pickle
import time
import traceback
import urllib.parse
from datetime import datetime
from pathlib import Path
from typing import Any

from gepa_lab.core.artifacts import Artifact, artifact_dict
from gepa_lab.core.errors import TrackingError, describe
from gepa_lab.core.events import CandidateInfo, IterationStats, Proposal, RunInfo
from gepa_lab.core.redact import redact
from gepa_lab.core.result import Result
from gepa_lab.tracking import mlflow_links
from gepa_lab.tracking.mlflow_process import ENV_DEFAULTS, POOL, LoggerProcess
from gepa_lab.tracking.mlflow_values import (
    clip,
    diff_text,
    flatten_config,
    readable,
    render,
    safe_key,
    scores_table,
    split_params,
    validation_metrics,
)
from gepa_lab.tracking.mlflow_worker import LINK_TAG, RUN_FILE, sqlite_path

log = logging.getLogger("gepa_lab.mlflow")

DEFAULT_EXPERIMENT = "gepa-lab"
SIMULATION_NOTE = "SkillCraft-sim is a simulation: these numbers calibrate the harness, not an LM."


# The runs tables the experiments open with (filter, order, columns and their widths).
VIEWS = json.loads(Path(__file__).with_name("mlflow_views.json").read_text(encoding="utf-8"))
PARENT_FILTER = VIEWS["decisions"]["searchFilter"]  # selects parent runs (`python -m gepa_lab.report`, `note`)


def views() -> list[tuple[str, dict[str, Any]]]:
    """The runs table each experiment opens with (MLflow's shared view state, an experiment tag):
    the columns of `mlflow_views.json` in order, with widths that show their values whole."""

    def view(v: dict[str, Any]) -> dict[str, Any]:
        columns = list(v["columnWidths"])
        return {"searchFilter": v["searchFilter"], "orderByKey": v["orderByKey"], "orderByAsc": False,
                "selectedColumns": columns, "columnOrder": columns, "columnWidths": v["columnWidths"]}

    return [(mlflow_links.DECISIONS_VIEW, view(VIEWS["decisions"])),
            (mlflow_links.CANDIDATES_VIEW, view(VIEWS["candidates"]))]


def _version() -> str:
    """gepa-lab's installed version (from the package metadata: this module does not import the
    package root)."""
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("gepa-lab")
    except PackageNotFoundError:
        return "unknown"


def default_uri() -> str:
    """As MLflow itself: $MLFLOW_TRACKING_URI, else `mlflow.db` in the working directory, made
    absolute (Hydra does not chdir, but a later `mlflow ui` may run elsewhere)."""
    return os.environ.get("MLFLOW_TRACKING_URI") or f"sqlite:///{Path.cwd().resolve() / 'mlflow.db'}"


def candidates_experiment(experiment: str) -> str:
    """The sibling experiment holding the pool members' runs of `experiment`'s parent runs."""
    return f"{experiment}-candidates"


class MlflowTracker:
    """Tracker (`gepa_lab.core.events.Tracker`) that logs a run to MLflow. Built from
    `conf/tracking/mlflow.yaml`; everything per run arrives in `start(run)`."""

    _run: RunInfo  # the run being logged (set by start)

    def __init__(self, uri: str | None = None, experiment: str = DEFAULT_EXPERIMENT,
                 artifact_location: str | None = None, plots: bool = True):
        self.uri = uri or default_uri()
        self._uri_chosen = uri is not None or bool(os.environ.get("MLFLOW_TRACKING_URI"))
        self.experiment = experiment  # the MLflow experiment (the gepa experiment is a tag)
        self.artifact_location = artifact_location  # for a new experiment; None: beside a SQLite db
        self.plots = plots
        self._worker: LoggerProcess | None = None
        self._reset()
        POOL.prespawn(self._store_kind())

    def _store_kind(self) -> str:
        return "rest" if mlflow_links.is_server(self.uri) else "sql"

    def _reset(self) -> None:
        self.run_id: str | None = None  # the parent run
        self.experiment_id: str | None = None
        self.candidates_experiment_id: str | None = None
        self.reuse: int | None = None  # the store's runs already decided on this holdout split
        self.errors: list[str] = []
        self.error_count = 0
        self._started = False  # the logger's `started` reply was read
        self._start_error: str | None = None
        self._search_calls = 0  # budget spent by the search (the last iteration's)
        self.logger_state: dict[str, Any] = {}  # the logging process's last reply (its CPU seconds, ...)

    # -- talking to the logger -----------------------------------------------------------------
    def _send(self, op: str, payload: Any) -> None:
        if self._worker is None:
            return
        try:
            self._worker.send(op, payload)
        except OSError as exc:  # the logger died: the search goes on, the run record has everything
            self._lost(f"{op}: {describe(exc)}")

    def _await(self, kind: str) -> None:
        """Read the logger's replies up to the next `kind` one (or until the logger is gone)."""
        while self._worker is not None:
            try:
                got, state = self._worker.receive()
            except (EOFError, OSError, pickle.UnpicklingError) as exc:
                self._lost(f"waiting for {kind}: {describe(exc)}")
                return
            self.logger_state = state
            self.errors, self.error_count = list(state["errors"]), int(state["error_count"])
            if got == "started":
                self._started, self._start_error = True, state["start_error"]
                self.run_id, self.experiment_id = state["run_id"], state["experiment_id"]
                self.candidates_experiment_id, self.uri = state["candidates_experiment_id"], state["uri"]
                self.reuse = state["holdout_reuse"]
            if got == kind:
                return

    def _lost(self, what: str) -> None:
        code = self._worker.proc.poll() if self._worker is not None else None
        self.errors.append(f"{what} (the MLflow logging process ended, exit code {code})")
        self.error_count += 1
        self._worker = None
        log.warning("MLflow logging stopped: %s; the run record in the run dir has everything", self.errors[-1])

    def _await_start(self) -> None:
        if not self._started:
            if self.plots:  # the engine would only wait here: import matplotlib meanwhile, for finish()
                import gepa_lab.tracking.plots  # noqa: F401
            self._await("started")
            if self._start_error:
                log.warning("MLflow logging failed at start (%s); the run record in the run dir has everything",
                            self._start_error)

    def _close(self) -> None:
        """Wait until the logger has written everything (it replies `ended`), then free it."""
        worker = self._worker
        if worker is None:
            return
        try:
            self._await("ended")
        except BaseException:  # a second Ctrl-C: the logger finishes in the background
            worker.close()
            self._worker = None
            raise
        if self._worker is not None:
            POOL.release(self._worker)
            self._worker = None
        if self.error_count:
            log.warning("MLflow run %s is missing data: %d logging call(s) failed (first: %s)",
                        self.run_id, self.error_count, self.errors[0] if self.errors else "?")

    # -- start ---------------------------------------------------------------------------------
    def start(self, run: RunInfo) -> None:
        for name, value in ENV_DEFAULTS.items():
            os.environ.setdefault(name, value)
        self._reset()
        self._run = run
        stored = self._stored_run(run)
        if stored and not self._uri_chosen and stored.get("tracking_uri"):
            self.uri = str(stored["tracking_uri"])  # the interrupted run's store, wherever we run now
        db = sqlite_path(self.uri)
        if db is not None:
            self.uri = f"sqlite:///{db}"  # the logger runs elsewhere: no relative paths
        self._preflight(db)
        if self._worker is not None:  # a tracker started twice without an end: drop the old logger
            self._worker.close()
        self._worker = POOL.acquire(self._store_kind())
        self._send("start", self._start_payload(run, db, stored))
        if db is None:  # a remote store: fail now, before anything is spent, if it does not work
            self._await_start()
            if self._start_error is not None or self._worker is None:
                self._worker = None
                raise TrackingError(f"cannot log to MLflow at {mlflow_links.masked(self.uri)}: "
                                    f"{self._start_error or self.errors[-1]}")

    @staticmethod
    def _stored_run(run: RunInfo) -> dict[str, Any] | None:
        run_file = Path(run.run_dir) / RUN_FILE if run.run_dir else None
        if run.resume is None or run_file is None or not run_file.is_file():
            return None
        try:
            return dict(json.loads(run_file.read_text(encoding="utf-8")))
        except (OSError, ValueError) as exc:
            log.warning("cannot read %s (%s): the resumed run gets a new MLflow run", run_file, exc)
            return None

    def _preflight(self, db: Path | None) -> None:
        """What would otherwise fail late: an HTTP store is retried with backoff for minutes; a
        SQLite store needs a writable file (MLflow creates the file but not its folder)."""
        why = mlflow_links.unreachable(self.uri)
        if why is not None:
            raise TrackingError(why)
        if db is not None:
            try:
                db.parent.mkdir(parents=True, exist_ok=True)
                with open(db, "ab"):
                    pass
            except OSError as exc:
                raise TrackingError(f"cannot write the MLflow store {db} ({exc.strerror or exc}); run from a "
                                    "writable directory or set tracking.uri=sqlite:///<writable path>/mlflow.db"
                                    ) from exc

    def _location(self, db: Path | None, experiment: str) -> str | None:
        """Artifacts of a new experiment: as configured, else `mlruns/<experiment>` beside SQLite."""
        if self.artifact_location is not None:
            return self.artifact_location.rstrip("/") + ("" if experiment == self.experiment else f"/{experiment}")
        if db is None:
            return None
        return (db.parent / "mlruns" / "".join(c if c.isalnum() or c in "_.-" else "_" for c in experiment)).as_uri()

    def _start_payload(self, run: RunInfo, db: Path | None, stored: dict[str, Any] | None) -> dict[str, Any]:
        common = {"experiment": run.name, "random_seed": str(run.search.random_seed)}
        sweep = run.config.get("sweep") or {}  # a multirun job (gepa_lab/cli.py): filter a sweep by its id
        if sweep.get("id"):
            common["sweep_id"] = str(sweep["id"])
        ds = run.dataset
        tags = {**common, "gepa.run_kind": "parent", "algorithm": run.algorithm,
                "gepa.experiment_id": run.experiment_id, "gepa_lab.version": _version(),
                "dataset.id": ds.id, "dataset.version": ds.version, "submit": str(run.submit).lower(),
                "promotion_eligible": "pending", "simulated": str(run.simulated).lower()}
        for split, digest in run.digests.items():
            tags[f"dataset.digest.{split}"] = digest
            tags[f"dataset.cases.{split}"] = str(len(ds.split(split)))
        for group, option in (run.config.get("hydra_choices") or {}).items():
            if option is not None and not str(group).startswith("hydra/"):
                tags[safe_key("hydra", str(group))] = str(option)
        if sweep.get("id"):
            tags.update({"sweep_dir": clip(str(sweep.get("dir", ""))), "sweep_job": str(sweep.get("job", ""))})
        if run.run_dir:
            tags["run_dir"] = clip(str(Path(run.run_dir).resolve()))
        if stored and stored.get("run_id"):
            tags["resumed_from_mlflow_run"] = str(stored["run_id"])
        params, long_values = split_params(flatten_config(
            {k: v for k, v in run.config.items() if k not in ("hydra_choices", "sweep")}))
        files: dict[str, Any] = {"config/resolved_config.json": run.config, "seed.json": artifact_dict(run.seed)}
        if long_values:
            files["config/long_params.json"] = long_values
        inputs = [{"split": split, "digest": digest, "name": f"{ds.id}/{split}", "version": ds.version,
                   "rows": [{"id": c.id, "input": c.input, "expected": c.expected or "", "critical": c.critical,
                             "metadata": json.dumps(dict(c.metadata), sort_keys=True)} for c in ds.split(split)]}
                  for split, digest in run.digests.items()]
        names = (self.experiment, candidates_experiment(self.experiment))
        return {
            "uri": self.uri, "env": {k: v for k, v in os.environ.items() if k.startswith("MLFLOW_")},
            # (name, artifact location, view) of the parents' experiment, then the candidates'.
            "experiments": [(name, self._location(db, name), view) for name, view in zip(names, views(), strict=True)],
            "first_metric": "holdout_delta", "run_dir": run.run_dir,
            "reopen": (stored or {}).get("run_id"),
            "resume_iteration": run.resume.iteration if run.resume is not None else None,
            "run_name": f"{run.name}-seed{run.search.random_seed}-{run.experiment_id[:8]}",
            "start_ms": int(datetime.fromisoformat(run.started_at).timestamp() * 1000),
            "tags": tags, "common": common, "params": params, "files": files, "inputs": inputs,
            "holdout_digest": run.digests.get("holdout") if run.dataset.holdout else None,
            "description": f"Running (gepa experiment `{run.name}`, random seed {run.search.random_seed}).",
            # The commit of the gepa_lab checkout, else of the working directory.
            "git_paths": [str(Path(__file__).resolve().parents[1]), os.getcwd()]}

    def holdout_reuse(self) -> int | None:
        self._await_start()
        return self.reuse

    def links(self) -> dict[str, str]:
        """Where the run is: ids, the tracking URI (left out when it holds a password), the run's
        URL and, for a local store, the `mlflow ui` command that serves it."""
        self._await_start()
        if not self.run_id or not self.experiment_id:
            return {}
        links = {"mlflow_run_id": self.run_id, "mlflow_experiment_id": str(self.experiment_id),
                 "mlflow_run_url": mlflow_links.run_url(self.uri, self.experiment_id, self.run_id)}
        command = mlflow_links.ui_command(self.uri)
        if command:
            links["mlflow_ui_command"] = command
        if urllib.parse.urlsplit(self.uri).password is None:  # a URI with a password stays out
            links["mlflow_tracking_uri"] = self.uri  # where a later tracker logs to the same run
        return links

    # -- during the search ---------------------------------------------------------------------
    def candidate(self, info: CandidateInfo) -> None:
        """The seed's run. (An accepted child is logged with its proposal, which follows.)"""
        if info.parent_id is not None:
            return
        self._send("candidate", {
            "key": "seed", "name": f"seed-{info.id[:8]}", "candidate_id": info.id,
            "tags": {"candidate_id": info.id, "parent_id": "", "component": "", "iteration": "-1",
                     "status": "seed", "reason": "seed artifact"},
            "metrics": readable({"iteration": -1.0, **validation_metrics(info.validation)}),
            "files": self._files(info.artifact, None, {"validation": _table(scores_table(info.validation))})})

    @staticmethod
    def _files(artifact: Artifact, parent: Artifact | None, details: dict[str, Any]) -> dict[str, Any]:
        """A pool member's files: its text, its diff to its parent, and one JSON of the rest."""
        text = render(artifact)
        diff = diff_text(render(parent), text) if parent is not None else "the seed has no parent: no diff\n"
        return {"candidate.md": text, "diff.txt": diff, "candidate.json": {"artifact": artifact_dict(artifact),
                                                                           **details}}

    def proposal(self, p: Proposal) -> None:
        """Every proposal: a row of the proposals table; an accepted one also its candidate run."""
        validation = validation_metrics(p.validation_batch)
        row = {
            "iteration": p.iteration, "kind": p.kind, "status": p.status, "component": p.component,
            "parent_id": p.parent_id, "parents": ",".join(p.parents), "candidate_id": p.candidate_id,
            # Every candidate's text is in MLflow, the rejected ones' too (here, not in runs of their own).
            "candidate": render(p.artifact) if p.artifact is not None else None, "minibatch_parent_sum": p.parent_sum,
            "minibatch_child_sum": p.child_sum, "validation_mean": validation.get("validation_mean"),
            "reason": clip(p.reason, 500), "rationale": clip(p.rationale, 500), "paired_seed": p.paired_seed,
            "minibatch": ",".join(p.minibatch)}
        self._send("row", row)
        if p.status != "accepted" or p.candidate_id is None or p.artifact is None:
            return
        metrics = {"iteration": float(p.iteration), "minibatch_parent_sum": p.parent_sum, **validation,
                   "minibatch_child_sum": p.child_sum}
        child = {ev.case_id: ev.score for ev in p.child_batch.evaluations} if p.child_batch else {}
        cases = [ev.case_id for ev in p.parent_batch.evaluations]
        details = {"reflection": {"component": p.component, "records": p.records, "reply": p.reply,
                                  "rationale": p.rationale, "status": p.status, "reason": p.reason},
                   "minibatch": _table({"case_id": cases, "parent_score": p.parent_batch.scores,
                                        "child_score": [child.get(c) for c in cases]})}
        if p.validation_batch is not None:
            details["validation"] = _table(scores_table(p.validation_batch))
        tagged = ("candidate_id", "parent_id", "parents", "kind", "component", "iteration", "status", "paired_seed",
                  "minibatch")
        self._send("candidate", {
            "key": f"iteration-{p.iteration}", "name": f"it{p.iteration:03d}-{p.candidate_id[:8]}",
            "candidate_id": p.candidate_id, "metrics": readable(metrics),
            "tags": {**{k: clip(str(row[k])) for k in tagged}, "reason": clip(p.reason)},
            "files": self._files(p.artifact, p.parent, details)})

    def iteration(self, stats: IterationStats) -> None:
        values = {"best_validation_mean": stats.best_validation_mean, "pool_size": stats.pool_size,
                  "front_size": stats.front_size, "metric_calls": stats.metric_calls, "proposals": stats.proposals,
                  "cost_usd": stats.task_cost_usd + stats.reflection_cost_usd,
                  "task_cost_usd": stats.task_cost_usd, "reflection_cost_usd": stats.reflection_cost_usd}
        self._search_calls = stats.metric_calls
        self._send("series", (stats.iteration, readable({f"search/{k}": v for k, v in values.items()})))

    def round_end(self) -> None:
        """A round of proposals is durably recorded: its data is already with the logger, which
        now writes the parent's metrics and the proposals table (no waiting here)."""
        self._send("round_end", None)

    def note(self, kind: str, data: dict[str, Any]) -> None:
        self._send("tags", {safe_key("note", kind): clip(json.dumps(data, ensure_ascii=False, default=str))})

    # -- the end -------------------------------------------------------------------------------
    def finish(self, result: Result) -> None:
        if self._worker is None:
            return
        self.links()  # the run ids, for the description's link
        files: dict[str, Any] = {"result.json": result.to_dict(), "winner.md": render(result.best),
                                 "winner.json": artifact_dict(result.best),
                                 "winner_diff.txt": diff_text(render(self._run.seed), render(result.best),
                                                              "seed", "winner")}
        columns = ("case_id", "critical", "baseline", "candidate", "delta")
        fields = list(dict.fromkeys(["rule", "passed", "detail", *(k for r in result.promotion_rules for k in r)]))
        self._send("decision", {
            "metrics": readable(self._decision_metrics(result)), "tags": self._decision_tags(result),
            "description": self._description(result), "files": files, "best_id": result.best_id,
            "tables": {"holdout_comparison.json": {c: [case[c] for case in result.holdout_cases] for c in columns},
                       "promotion_rules.json": {c: [rule.get(c) for rule in result.promotion_rules] for c in fields}}})
        # Drawn while the logger writes the decision; the run ends once they are uploaded too.
        self._send("end", {"status": "FINISHED", "tags": {}, "plots": self._plots(result) if self.plots else {}})
        self._close()

    def fail(self, error: BaseException) -> None:
        """End the parent run KILLED (KeyboardInterrupt) or FAILED, with the error; never raises
        (but a second Ctrl-C while the logger drains)."""
        if self._worker is None:
            return
        killed = isinstance(error, KeyboardInterrupt)
        self._send("end", {
            # Redacted like every error text: a provider's error may echo the API key.
            "status": "KILLED" if killed else "FAILED",
            "error": (redact("".join(traceback.format_exception(error))),
                      f"interruptions/{time.strftime('%Y%m%d-%H%M%S')}-{type(error).__name__}.txt"),
            "tags": {"error": clip(describe(error)), "stop_reason": "interrupted" if killed else "error",
                     "promotion_eligible": "false",
                     "promotion_reason": f"run did not finish ({type(error).__name__})"}})
        self._close()

    @staticmethod
    def _decision_metrics(result: Result) -> dict[str, float]:
        """One name per quantity: what the per-iteration `search/...` series already ends on
        (proposals, pool size, reflection cost) is not repeated; `total_*` include the holdout
        comparison, `search/metric_calls` does not."""
        cost = result.cost_usd or {}
        metrics: dict[str, float] = {
            "promotion_eligible": float(result.promotion_eligible),
            "seed_validation_mean": result.baseline_validation.score,
            "total_metric_calls": result.metric_calls, "total_cost_usd": sum(cost.values()),
            "total_task_cost_usd": cost.get("task", 0.0), "total_reflection_tokens": result.reflection_tokens}
        if result.holdout_reuse is not None:
            metrics["holdout_reuse"] = result.holdout_reuse
        if result.baseline_holdout.cases:
            metrics.update({"holdout_delta": result.holdout_delta, "seed_holdout_mean": result.baseline_holdout.score,
                            "winner_holdout_mean": result.candidate_holdout.score})
            for side, summary in (("seed_holdout", result.baseline_holdout),
                                  ("winner_holdout", result.candidate_holdout)):
                metrics.update({safe_key(side, k): v for k, v in summary.objectives.items()})
        if result.holdout_interval is not None:
            metrics.update({"holdout_delta_low": result.holdout_interval[0],
                            "holdout_delta_high": result.holdout_interval[1]})
        if result.transfer is not None and result.transfer["delta"] is not None:
            metrics.update({"transfer_delta": result.transfer["delta"],
                            "transfer_seed_mean": result.transfer["baseline"],
                            "transfer_winner_mean": result.transfer["candidate"]})
        for rule in result.promotion_rules:
            metrics[safe_key("rule", rule["rule"])] = float(bool(rule["passed"]))
        return metrics

    def _decision_tags(self, result: Result) -> dict[str, str]:
        revision = result.revision or {}
        tags = {"promotion_eligible": str(result.promotion_eligible).lower(),
                "promotion_reason": clip(result.promotion_reason), "stop_reason": result.stop_reason,
                "winner": "seed" if result.best_id == result.seed_id else result.best_id[:12],
                "holdout_delta_ci": _holdout_text(result),
                "submission.status": str(revision.get("status", "submitted")) if revision
                else "not_submitted" if self._run.submit else "not_requested",
                "submission.revision_id": str(revision.get("revision_id", "")),
                "submission.reason": clip(result.submission_reason or "")}
        for rule in result.promotion_rules:  # a rule's own status (e.g. skipped) when it has one
            tags[safe_key("rule", rule["rule"])] = str(rule.get("status") or ("passed" if rule["passed"] else "failed"))
        return tags

    def _description(self, result: Result) -> str:
        """The run's description in the UI (markdown); links are relative, so they work on any host."""
        verdict = "ELIGIBLE" if result.promotion_eligible else "NOT ELIGIBLE"
        winner = "the seed" if result.best_id == result.seed_id else f"`{result.best_id[:12]}`"
        lines = [f"**{verdict}**: {result.promotion_reason}.",
                 f"Holdout delta {_holdout_text(result)} over {result.baseline_holdout.cases} cases; winner {winner} "
                 f"of {result.candidate_count} pool members "
                 f"after {result.proposals} proposals ({result.stop_reason}; {self._search_calls} metric calls in "
                 f"the search, {result.metric_calls} in all)."]
        if self.candidates_experiment_id and self.run_id:
            query = urllib.parse.urlencode({"searchFilter": f"tags.`{LINK_TAG}` = '{self.run_id}'"})
            lines.append(f"[This run's pool members](#/experiments/{self.candidates_experiment_id}/runs?{query}"
                         f"&{mlflow_links.CLASSIC_VIEW}) (candidates experiment); every proposal: `proposals.json`.")
        if self._run.simulated:
            lines.append(SIMULATION_NOTE)
        return "\n\n".join(lines)

    def _plots(self, result: Result) -> dict[str, bytes]:
        from gepa_lab.tracking.plots import png, run_figures

        label = f"{self._run.name}, random seed {self._run.search.random_seed}"
        try:
            return {f"{name}.png": png(figure) for name, figure in run_figures(result, label).items()}
        except Exception as exc:  # a plot never costs the run its decision
            self.errors.append(f"draw the plots: {describe(exc)}")
            log.warning("MLflow plots not drawn: %s", describe(exc))
            return {}


def _holdout_text(result: Result) -> str:
    """`+0.1757 [+0.0995, +0.2541] 95% CI`: the delta and its interval, short enough for a column."""
    if not result.baseline_holdout.cases:
        return "no holdout split"
    text = f"{result.holdout_delta:+.4f}"
    if result.holdout_interval is not None:
        low, high = result.holdout_interval
        level = f" {result.confidence * 100:g}%" if result.confidence is not None else ""
        text += f" [{low:+.4f}, {high:+.4f}]{level} CI"
    return text


def _table(columns: dict[str, list[Any]]) -> dict[str, Any]:
    """MLflow's table layout (what `log_table` writes), for per-candidate tables written as files."""
    return {"columns": list(columns), "data": [list(row) for row in zip(*columns.values(), strict=True)]}

