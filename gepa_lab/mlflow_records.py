"""What the MLflow tracker writes, as plain data: config params (flattened, long values kept
whole), per-iteration and failure values of the parent run, the nested-run payload of each
candidate (metrics, tables, rendered files, diff) and the decision payload (holdout comparison
table, promotion rules, note). Pure functions: nothing here imports mlflow or talks to a store
(`gepa_lab.mlflow_store` does, for `gepa_lab.mlflow_tracker`)."""

from __future__ import annotations

import difflib
import json
import math
import re
import time
from collections.abc import Iterable
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any, NamedTuple

from gepa_lab.tracking import CandidateInfo, EvaluationRecord, IterationStats, Proposal, RunInfo

if TYPE_CHECKING:
    from gepa_lab.engine import Result

# MLflow 3.17 limits (mlflow/utils/validation.py).
PARAM_MAX, TAG_MAX, KEY_MAX, DIGEST_MAX = 6000, 8000, 250, 36
# mlflow.utils.mlflow_tags names, spelled out so this module imports without mlflow.
PARENT_RUN_TAG, LOGGED_ARTIFACTS_TAG = "mlflow.parentRunId", "mlflow.loggedArtifacts"
_BAD_KEY_CHARS = re.compile(r"[^A-Za-z0-9_\-. /]")
PHASE_PREFIX = {"feedback-parent": "minibatch_parent", "feedback-child": "minibatch_child",
                "validation": "validation"}


# -- pure helpers ---------------------------------------------------------------------------

def sqlite_path(uri: str) -> Path | None:
    """The database file of a `sqlite:///...` URI (relative paths against the cwd)."""
    if not uri.startswith("sqlite:///"):
        return None
    raw = uri[len("sqlite:///"):].split("?", 1)[0]
    return Path(raw).resolve() if raw and raw != ":memory:" else None


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


def ms(iso: str | None = None) -> int:
    """Epoch milliseconds of an ISO timestamp, else of now."""
    if iso:
        try:
            return int(datetime.fromisoformat(iso).timestamp() * 1000)
        except ValueError:
            pass
    return int(time.time() * 1000)


# -- parent run -----------------------------------------------------------------------------

def parent_params_and_files(run: RunInfo) -> tuple[dict[str, str], dict[str, Any]]:
    """(params, files) of a new parent run: the flattened config and the full config, long
    values and seed artifact."""
    config = run.config
    params, long_values = split_params(flatten_config({k: v for k, v in config.items()
                                                        if k != "hydra_choices"}))
    files: dict[str, Any] = {"config/resolved_config.json": config}
    if long_values:
        files["config/long_params.json"] = long_values
    files["seed/candidate.json"] = run.seed_artifact
    return params, files


def iteration_metrics(stats: IterationStats, proposals: int) -> dict[str, float]:
    """The parent run's per-iteration series (step = iteration)."""
    return {
        "best_validation_mean": stats.best_validation_mean,
        "pool_size": stats.pool_size,
        "front_size": stats.front_size,
        "metric_calls": stats.metric_calls,
        "task_cost_usd": stats.task_cost_usd,
        "reflection_cost_usd": stats.reflection_cost_usd,
        "cost_usd": stats.task_cost_usd + stats.reflection_cost_usd,
        "proposals": proposals,
    }


def failure_tags(error: BaseException, errors: int) -> dict[str, str]:
    """The parent run's tags when the run stops on an error or an interrupt."""
    return {
        "error": clip(f"{type(error).__name__}: {error}"),
        "stop_reason": "interrupted" if isinstance(error, KeyboardInterrupt) else "error",
        "promotion_eligible": "false",
        "promotion_reason": f"run did not finish ({type(error).__name__})",
        "mlflow_tracker.errors": str(errors),
    }


def trajectory_points(metrics: list[Any]) -> list[tuple[float, float]]:
    """(metric calls, best validation mean) of each step among parent metrics (MLflow `Metric`s)."""
    by_step: dict[int, dict[str, float]] = {}
    for m in metrics:
        by_step.setdefault(m.step, {})[m.key] = m.value
    return [(v["metric_calls"], v["best_validation_mean"]) for v in by_step.values()
            if "metric_calls" in v and "best_validation_mean" in v]


def mean_score(scores: list[tuple[str, float]]) -> float:
    return math.fsum(s for _, s in scores) / len(scores) if scores else math.nan


# -- nested runs ----------------------------------------------------------------------------

class NestedRun(NamedTuple):
    """One candidate's nested run: `key` marks it as logged (resume), `name` is the run name."""

    key: str
    name: str
    tags: dict[str, str]
    metrics: dict[str, float]
    files: dict[str, Any]
    tables: dict[str, dict[str, Any]]


def seed_run(info: CandidateInfo, record: EvaluationRecord | None) -> NestedRun:
    metrics = {"iteration": -1.0}
    if record is not None:
        metrics.update(record_metrics(record))
    tags = {"candidate_id": info.id, "component": "", "iteration": "-1", "status": "seed",
            "reason": "seed artifact"}
    files = {"candidate.json": info.artifact, **render_files(info.artifact, None)}
    tables = {}
    if record is not None:
        tables["validation.json"] = validation_table(record)
    return NestedRun("seed", f"seed-{info.id[:8]}", tags, metrics, files, tables)


def proposal_run(p: Proposal, records: list[EvaluationRecord]) -> NestedRun:
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
        metrics.update(record_metrics(record))
    files: dict[str, Any] = {
        "reflection.json": {"component": p.component, "records": p.records, "reply": p.reply,
                            "rationale": p.rationale, "status": p.status, "reason": p.reason},
    }
    if p.artifact is not None:
        files["candidate.json"] = p.artifact
        files.update(render_files(p.artifact, p.parent_artifact))
    child = dict(zip(p.minibatch, p.child_scores, strict=False))
    tables = {"minibatch.json": table(
        ["case_id", "parent_score", "child_score"],
        [(case, score, child.get(case)) for case, score in zip(p.minibatch, p.parent_scores, strict=False)],
    )}
    validation = next((r for r in own if r.phase == "validation"), None)
    if validation is not None:
        tables["validation.json"] = validation_table(validation)
    name = f"it{p.iteration:03d}-{p.status}" + (f"-{p.candidate_id[:8]}" if p.candidate_id else "")
    return NestedRun(f"iteration-{p.iteration}", name, tags, metrics, files, tables)


def record_metrics(record: EvaluationRecord) -> dict[str, float]:
    prefix = PHASE_PREFIX[record.phase]
    out = {f"{prefix}_mean": record.summary.score}
    if record.phase == "validation":
        out["validation_cases"] = float(record.summary.cases)
    for name, value in record.summary.objectives.items():
        out[metric_key(prefix, name)] = value
    return out


def validation_table(record: EvaluationRecord) -> dict[str, Any]:
    objectives = sorted({k for e in record.evaluations for k in e.objectives})
    return table(["case_id", "score", *objectives],
                 [[e.case_id, e.score, *(e.objectives.get(k) for k in objectives)] for e in record.evaluations])


def render_files(artifact: dict[str, Any], parent: dict[str, Any] | None) -> dict[str, str]:
    files = {}
    text = render(artifact)
    if artifact.get("kind", "skill") == "skill":
        files["SKILL.md"] = text
    if parent is not None:
        files["diff.patch"] = "".join(difflib.unified_diff(
            render(parent).splitlines(keepends=True), text.splitlines(keepends=True),
            fromfile="parent", tofile="candidate"))
    return files


# -- decision -------------------------------------------------------------------------------

def decision_metrics_and_tags(result: Result, *, experiment_name: str, seed: str | None,
                              proposals: int, submit_requested: bool,
                              ) -> tuple[dict[str, float], dict[str, str]]:
    """The parent run's final metrics and tags: promotion verdict, rule outcomes, run totals."""
    has_holdout = result.baseline_holdout.cases > 0
    cost = getattr(result, "cost_usd", {}) or {}
    metrics: dict[str, float] = {
        "promotion_eligible": 1.0 if result.promotion_eligible else 0.0,
        "baseline_validation_mean": result.baseline_validation.score,
        "candidate_validation_mean": result.candidate_validation.score,
        # Run totals (holdout included), named apart from the per-iteration series.
        "total_metric_calls": float(result.metric_calls),
        "total_proposals": float(proposals),
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
        submission = "not_submitted" if submit_requested else "not_requested"
    tags = {
        "promotion_eligible": "true" if result.promotion_eligible else "false",
        "promotion_reason": clip(result.promotion_reason),
        "stop_reason": result.stop_reason,
        "best_candidate_id": result.best_id,
        "submission.status": submission,
        "submission.revision_id": str(revision.get("revision_id", "")),
        "submission.reason": clip(result.submission_reason or ""),
        "mlflow.note.content": decision_note(result, has_holdout, experiment_name=experiment_name,
                                             seed=seed, proposals=proposals),
        LOGGED_ARTIFACTS_TAG: json.dumps([
            {"path": "decision/holdout_comparison.json", "type": "table"},
            {"path": "decision/promotion_rules.json", "type": "table"},
        ]),
    }
    for rule in result.promotion_rules:
        tags[metric_key("rule", rule["rule"])] = "passed" if rule["passed"] else "failed"
    return metrics, tags


def decision_files(result: Result) -> dict[str, Any]:
    """The decision artifacts: holdout comparison and rule tables, the result, the best candidate."""
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
    return files


def decision_note(result: Result, has_holdout: bool, *, experiment_name: str, seed: str | None,
                  proposals: int) -> str:
    """The parent run's description (`mlflow.note.content`), in Markdown."""
    verdict = "ELIGIBLE" if result.promotion_eligible else "NOT ELIGIBLE"
    lines = [f"**{experiment_name}** seed {seed}: **{verdict}** — {result.promotion_reason}",
             "",
             f"- validation: seed {result.baseline_validation.score:.4f} → best "
             f"{result.candidate_validation.score:.4f} ({result.best_id[:12]})"]
    if has_holdout:
        lines.append(f"- holdout: {result.baseline_holdout.score:.4f} → {result.candidate_holdout.score:.4f} "
                     f"(delta {result.holdout_delta:+.4f}, {result.baseline_holdout.cases} cases)")
    lines.append(f"- stop: {result.stop_reason} after {result.metric_calls} metric calls; "
                 f"{proposals} proposals, {result.candidate_count} candidates in the pool")
    return clip("\n".join(lines))
