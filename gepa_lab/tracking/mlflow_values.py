"""What a run, a pool member, a proposal and a decision put into MLflow: keys, params (never cut),
tags (cut visibly), metric values rounded for reading, tables, readable texts and diffs. Pure."""

from __future__ import annotations

import contextlib
import difflib
import json
import math
import re
from collections.abc import Mapping
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path
from typing import Any

from gepa_lab.core.artifacts import Artifact, artifact_dict
from gepa_lab.core.events import CandidateInfo, Proposal, RunInfo, ScoredBatch
from gepa_lab.core.result import Result

# MLflow 3.17 limits (mlflow/utils/validation.py), spelled out so this module imports without mlflow.
PARAM_MAX, TAG_MAX, KEY_MAX, DIGEST_MAX = 6000, 8000, 250, 36
_BAD_KEY_CHARS = re.compile(r"[^A-Za-z0-9_\-. /]")
RUN_FILE, LOCK_FILE = "mlflow_run.json", "mlflow.lock"  # in the run dir: the MLflow run a resume continues
DESCRIPTION_TAG = "mlflow.note.content"  # MLflow's run description (markdown)
NOTES_MARKER = "\n\n---\n### Researcher's notes\n"  # what follows it in a description is the notes'
SIMULATION_NOTE = "SkillCraft-sim is a simulation: these numbers calibrate the harness, not an LM."


def safe_key(*parts: str) -> str:
    """A metric / tag key MLflow accepts."""
    return _BAD_KEY_CHARS.sub("_", ".".join(parts))[:KEY_MAX]


def flatten_config(config: dict[str, Any], prefix: str = "") -> dict[str, str]:
    """Dotted keys -> text values; lists stay one JSON value (a list is one setting)."""
    out: dict[str, str] = {}
    for name, value in config.items():
        full = f"{prefix}{_BAD_KEY_CHARS.sub('_', str(name))}"
        if isinstance(value, dict) and value:
            out.update(flatten_config(value, full + "."))
        elif isinstance(value, (bool, type(None), list, tuple, dict)):
            out[full] = json.dumps(value, ensure_ascii=False, sort_keys=True, default=str)
        else:
            out[full] = str(value)
    return out


def split_params(flat: dict[str, str]) -> tuple[dict[str, str], dict[str, str]]:
    """(params, long values): a value too long is not cut, its param points to config/long_params.json."""
    long_values = {name: value for name, value in flat.items() if len(value) > PARAM_MAX or len(name) > KEY_MAX}
    params = {name: f"<{len(value)} chars: see artifact config/long_params.json>" if name in long_values else value
              for name, value in flat.items() if len(name) <= KEY_MAX}
    return params, long_values


def clip(text: str, limit: int = TAG_MAX) -> str:
    """For tags only, whose full text is also in an artifact; the cut is marked, never silent."""
    marker = f" …[{len(text) - limit + 40} chars cut; full text in artifacts]"
    return text if len(text) <= limit else text[: limit - len(marker)] + marker


def render(artifact: Artifact) -> str:
    """SKILL.md for skills, else a section per field (a prompt diffs line by line, not as one JSON)."""
    if callable(markdown := getattr(artifact, "render_markdown", None)):
        return str(markdown())
    return "\n".join(f"## {name}\n\n{chr(10).join(value) if isinstance(value, (list, tuple)) else value}\n"
                     for name, value in artifact.to_dict().items())


def diff_text(parent: str, child: str, fromfile: str = "parent", tofile: str = "candidate") -> str:
    """A unified diff of two rendered artifacts (a `.txt` artifact: MLflow previews it)."""
    diff = "".join(difflib.unified_diff(parent.splitlines(keepends=True), child.splitlines(keepends=True),
                                        fromfile=fromfile, tofile=tofile))
    return diff or f"{tofile} is identical to {fromfile}\n"


def readable(values: Mapping[str, float | None]) -> dict[str, float]:
    """Values for the UI's columns (no number format there): 4 decimals, 4 digits below 0.001, whole
    numbers whole (result.json keeps every bit); NaN, inf and None left out: useless to compare."""
    return {k: x if x.is_integer() else round(x, max(4, 3 - math.floor(math.log10(abs(x)))))
            for k, v in values.items() if v is not None and math.isfinite(x := float(v))}


def table(columns: Mapping[str, list[Any]]) -> dict[str, Any]:
    """MLflow's table layout (what `log_table` writes), for tables inside JSON files."""
    return {"columns": list(columns), "data": [list(row) for row in zip(*columns.values(), strict=True)]}


def scores_table(batch: ScoredBatch) -> dict[str, Any]:
    names = sorted({name for ev in batch.evaluations for name in ev.objectives})
    return table({"case_id": [ev.case_id for ev in batch.evaluations], "score": batch.scores,
                  **{name: [ev.objectives.get(name) for ev in batch.evaluations] for name in names}})


def validation_metrics(batch: ScoredBatch | None) -> dict[str, float]:
    """`validation_mean` and `validation.<objective>`: what candidates are compared on."""
    if batch is None:
        return {}
    summary = batch.summary
    return {"validation_mean": summary.score, **{safe_key("validation", k): v for k, v in summary.objectives.items()}}


def common_tags(run: RunInfo) -> dict[str, str]:
    """Tags of the parent and of every pool member's run (a sweep job's sweep id among them)."""
    sweep = run.config.get("sweep") or {}
    return {"experiment": run.name, "random_seed": str(run.search.random_seed),
            **({"sweep_id": str(sweep["id"])} if sweep.get("id") else {})}


def parent_tags(run: RunInfo) -> dict[str, str]:
    ds, sweep = run.dataset, run.config.get("sweep") or {}
    installed = "unknown"
    with contextlib.suppress(PackageNotFoundError):
        installed = version("gepa-lab")
    tags = {**common_tags(run), "gepa.run_kind": "parent", "algorithm": run.algorithm,
            "gepa.experiment_id": run.experiment_id, "gepa_lab.version": installed, "dataset.id": ds.id,
            "dataset.version": ds.version, "submit": str(run.submit).lower(), "promotion_eligible": "pending",
            "simulated": str(run.simulated).lower()}
    for split, digest in run.digests.items():
        tags |= {f"dataset.digest.{split}": digest, f"dataset.cases.{split}": str(len(ds.split(split)))}
    tags |= {safe_key("hydra", str(group)): str(option) for group, option in (run.config.get("hydra_choices") or {})
             .items() if option is not None and not str(group).startswith("hydra/")}
    if sweep.get("id"):
        tags |= {"sweep_dir": clip(str(sweep.get("dir", ""))), "sweep_job": str(sweep.get("job", ""))}
    return tags | ({"run_dir": clip(str(Path(run.run_dir).resolve()))} if run.run_dir else {})


def parent_files(run: RunInfo) -> tuple[dict[str, str], dict[str, Any]]:
    """(params, files): the resolved config flattened, the config itself, the seed."""
    params, long_values = split_params(flatten_config(
        {k: v for k, v in run.config.items() if k not in ("hydra_choices", "sweep")}))
    files: dict[str, Any] = {"config/resolved_config.json": run.config, "seed.json": artifact_dict(run.seed)}
    return params, files | ({"config/long_params.json": long_values} if long_values else {})


def _member(key: str, name: str, tags: dict[str, str], metrics: dict[str, float | None], artifact: Artifact,
            parent: Artifact | None, details: dict[str, Any]) -> dict[str, Any]:
    """A pool member's run: its text, its diff to its parent, one JSON of the rest."""
    text = render(artifact)
    diff = diff_text(render(parent), text) if parent is not None else "the seed has no parent: no diff\n"
    return {"key": key, "name": name, "candidate_id": tags["candidate_id"], "tags": tags, "metrics": readable(metrics),
            "files": {"candidate.md": text, "diff.txt": diff,
                      "candidate.json": {"artifact": artifact_dict(artifact), **details}}}


def seed_member(info: CandidateInfo) -> dict[str, Any]:
    tags = {"candidate_id": info.id, "parent_id": "", "component": "", "iteration": "-1", "status": "seed",
            "reason": "seed artifact"}
    return _member("seed", f"seed-{info.id[:8]}", tags, {"iteration": -1.0, **validation_metrics(info.validation)},
                   info.artifact, None, {"validation": scores_table(info.validation)})


def proposal_row(p: Proposal) -> dict[str, Any]:
    """A row of the parent's proposals table (every candidate's text too, the rejected ones')."""
    return {"iteration": p.iteration, "kind": p.kind, "status": p.status, "component": p.component,
            "parent_id": p.parent_id, "parents": ",".join(p.parents), "candidate_id": p.candidate_id,
            "candidate": render(p.artifact) if p.artifact is not None else None,
            "minibatch_parent_sum": p.parent_sum, "minibatch_child_sum": p.child_sum,
            "validation_mean": validation_metrics(p.validation_batch).get("validation_mean"),
            "reason": clip(p.reason, 500), "rationale": clip(p.rationale, 500), "paired_seed": p.paired_seed,
            "minibatch": ",".join(p.minibatch)}


def accepted_member(p: Proposal) -> dict[str, Any]:
    """An accepted child's run, with what the reflector saw and replied."""
    assert p.artifact is not None and p.candidate_id is not None
    row, cases = proposal_row(p), [ev.case_id for ev in p.parent_batch.evaluations]
    child = {ev.case_id: ev.score for ev in p.child_batch.evaluations} if p.child_batch else {}
    details = {"reflection": {"component": p.component, "records": p.records, "reply": p.reply,
                              "rationale": p.rationale, "status": p.status, "reason": p.reason},
               "minibatch": table({"case_id": cases, "parent_score": p.parent_batch.scores,
                                   "child_score": [child.get(c) for c in cases]}),
               **({"validation": scores_table(p.validation_batch)} if p.validation_batch is not None else {})}
    tags = {**{k: clip(str(row[k])) for k in ("candidate_id", "parent_id", "parents", "kind", "component",
                                              "iteration", "status", "paired_seed", "minibatch")},
            "reason": clip(p.reason)}
    metrics = {"iteration": float(p.iteration), "minibatch_parent_sum": p.parent_sum,
               **validation_metrics(p.validation_batch), "minibatch_child_sum": p.child_sum}
    return _member(f"iteration-{p.iteration}", f"it{p.iteration:03d}-{p.candidate_id[:8]}", tags, metrics,
                   p.artifact, p.parent, details)


def holdout_text(result: Result) -> str:
    """`+0.1757 [+0.0995, +0.2541] 95% CI`: the delta and its interval, short enough for a column."""
    if not result.baseline_holdout.cases:
        return "no holdout split"
    if (interval := result.holdout_interval) is None:
        return f"{result.holdout_delta:+.4f}"
    level = f" {result.confidence * 100:g}%" if result.confidence is not None else ""
    return f"{result.holdout_delta:+.4f} [{interval[0]:+.4f}, {interval[1]:+.4f}]{level} CI"


def decision_metrics(result: Result) -> dict[str, float]:
    """One name per quantity; `total_*` include the holdout comparison, `search/...` do not."""
    cost, holdout, interval, transfer = result.cost_usd or {}, result.baseline_holdout.cases, \
        result.holdout_interval, result.transfer or {}
    metrics: dict[str, float | None] = {
        "promotion_eligible": float(result.promotion_eligible),
        "seed_validation_mean": result.baseline_validation.score, "total_metric_calls": result.metric_calls,
        "total_cost_usd": sum(cost.values()),
        "total_task_cost_usd": cost.get("task", 0.0), "total_reflection_tokens": result.reflection_tokens,
        "holdout_reuse": result.holdout_reuse, "holdout_delta": result.holdout_delta if holdout else None,
        "seed_holdout_mean": result.baseline_holdout.score if holdout else None,
        "winner_holdout_mean": result.candidate_holdout.score if holdout else None,
        "holdout_delta_low": interval[0] if interval else None, "holdout_delta_high": interval[1] if interval else None,
        "transfer_delta": transfer.get("delta"), "transfer_seed_mean": transfer.get("baseline"),
        "transfer_winner_mean": transfer.get("candidate"),
        **{safe_key("rule", rule["rule"]): float(bool(rule["passed"])) for rule in result.promotion_rules}}
    for side, summary in (("seed_holdout", result.baseline_holdout), ("winner_holdout", result.candidate_holdout)):
        metrics |= {safe_key(side, k): v for k, v in summary.objectives.items()} if holdout else {}
    return readable(metrics)


def decision_tags(result: Result, submit: bool) -> dict[str, str]:
    revision = result.revision or {}
    submission = str(revision.get("status", "submitted")) if revision else \
        "not_submitted" if submit else "not_requested"
    return {"promotion_eligible": str(result.promotion_eligible).lower(),
            "promotion_reason": clip(result.promotion_reason), "stop_reason": result.stop_reason,
            "winner": "seed" if result.best_id == result.seed_id else result.best_id[:12],
            "holdout_delta_ci": holdout_text(result), "submission.status": submission,
            "submission.revision_id": str(revision.get("revision_id", "")),
            "submission.reason": clip(result.submission_reason or ""),
            # a rule's own status (e.g. skipped) when it has one
            **{safe_key("rule", r["rule"]): str(r.get("status") or ("passed" if r["passed"] else "failed"))
               for r in result.promotion_rules}}


def decision_files(run: RunInfo, result: Result) -> tuple[dict[str, Any], dict[str, dict[str, list[Any]]]]:
    """(files, tables): result, winner and its diff to the seed; holdout comparison and rules tables."""
    columns = ("case_id", "critical", "baseline", "candidate", "delta")
    fields = list(dict.fromkeys(["rule", "passed", "detail", *(k for r in result.promotion_rules for k in r)]))
    return ({"result.json": result.to_dict(), "winner.md": render(result.best),
             "winner.json": artifact_dict(result.best),
             "winner_diff.txt": diff_text(render(run.seed), render(result.best), "seed", "winner")},
            {"holdout_comparison.json": {c: [case[c] for case in result.holdout_cases] for c in columns},
             "promotion_rules.json": {c: [rule.get(c) for rule in result.promotion_rules] for c in fields}})


def description(run: RunInfo, result: Result, search_calls: int, links: Mapping[str, str]) -> str:
    """The parent run's description (markdown); `links` (text -> URL relative to the page: any host)."""
    verdict = "ELIGIBLE" if result.promotion_eligible else "NOT ELIGIBLE"
    winner = "the seed" if result.best_id == result.seed_id else f"`{result.best_id[:12]}`"
    lines = [f"**{verdict}**: {result.promotion_reason}.", " · ".join(f"[{k}]({v})" for k, v in links.items()),
             f"Holdout delta {holdout_text(result)} over {result.baseline_holdout.cases} cases; winner {winner} of "
             f"{result.candidate_count} pool members after {result.proposals} proposals ({result.stop_reason}; "
             f"{search_calls} metric calls in the search, {result.metric_calls} in all); every proposal: "
             "`proposals.json`."]
    return "\n\n".join(lines + ([SIMULATION_NOTE] if run.simulated else []))
