"""The human-readable end-of-run summary (stdout)."""

from __future__ import annotations

from pathlib import Path

from gepa_lab.core.result import Result

# Decisions on one holdout split past which keeping the best of them is tuning on it.
HOLDOUT_REUSE_WARNING = 5


def _plural(n: int, word: str) -> str:
    return f"{n} {word}" if n == 1 else f"{n} {word}s"


def format_summary(result: Result, experiment: str, run_dir: Path | None, *, simulated: bool = False) -> str:
    """`simulated`: the evaluator's costs and scores come from a simulation (SkillCraft-sim)."""
    bv, cv = result.baseline_validation, result.candidate_validation
    winner = "seed (no candidate beat it)" if result.best_id == result.seed_id else result.best_id[:12]
    lines = [
        f"gepa-lab {result.algorithm}  experiment={experiment}  random_seed={result.seeds['random_seed']}",
        *(["  simulated   SkillCraft-sim: these scores calibrate the harness, not an LM"] if simulated else []),
        f"  stop        {result.stop_reason} after {_plural(result.metric_calls, 'metric call')}, "
        f"{_plural(result.proposals, 'proposal')}, {_plural(result.candidate_count, 'candidate')} in the pool",
        f"  winner      {winner}",
        f"  validation  seed {bv.score:.4f} -> winner {cv.score:.4f}  "
        f"({_plural(len(result.validation_case_ids), 'case')})",
        *_decision(result, simulated), *_process(result), *_links(result),
    ]
    if run_dir is not None:
        lines.append(f"  record      {run_dir}")
    return "\n".join(lines)


def _decision(result: Result, simulated: bool) -> list[str]:
    """Holdout, transfer, the decision and its critical cases, cost, submission."""
    bh, ch = result.baseline_holdout, result.candidate_holdout
    lines = ["  holdout     none configured"]
    if result.holdout_cases:
        interval = ""
        if result.holdout_interval is not None and result.confidence is not None:
            low, high = result.holdout_interval
            interval = f" [{result.confidence * 100:g}% CI {low:+.4f}, {high:+.4f}]"
        repeats = f" x {result.holdout_repeats} repeats" if result.holdout_repeats > 1 else ""
        count, distinct = len(result.holdout_cases), result.holdout_distinct
        cases = f"{distinct} distinct of {count} cases" if distinct is not None and distinct < count else \
            _plural(count, "case")
        lines = [f"  holdout     seed {bh.score:.4f} -> winner {ch.score:.4f}  delta {result.holdout_delta:+.4f}"
                 f"{interval}  ({cases}{repeats})"]
    if result.transfer is not None:
        t = result.transfer
        lines.append(f"  transfer    {t['evaluator']}: " + ("no winner to check" if t["delta"] is None else
                     f"seed {t['baseline']:.4f} -> winner {t['candidate']:.4f}  delta {t['delta']:+.4f}"))
    deciding = next((r["rule"] for r in result.promotion_rules if r.get("status") == "failed"), None)
    decision = "ELIGIBLE" if result.promotion_eligible else "NOT ELIGIBLE"
    lines.append(f"  decision    {decision}: {result.promotion_reason}" + (f"  (rule {deciding})" if deciding else ""))
    drops = [c for c in result.holdout_cases if c["critical"] and c["delta"] < 0]
    if drops:
        worst = ", ".join(f"{c['case_id']} {c['delta']:+.6f}" for c in drops)
        lines.append(f"  critical    score drops vs seed: {worst} (judged on quality; promotion.critical_tolerance)")
    task, reflection = result.cost_usd.get("task", 0.0), result.cost_usd.get("reflection", 0.0)
    if task or reflection:
        tokens = f" ({result.reflection_tokens} tokens)" if result.reflection_tokens else ""
        lines.append(f"  cost        task ${task:.4f} + reflection ${reflection:.4f}{tokens}"
                     + ("  (simulated: SkillCraft-sim tokens x a set price, not an LM bill)" if simulated else ""))
    if result.task_tokens or result.reflection_tokens:
        lines.append(f"  tokens      task {result.task_tokens:,} + reflection {result.reflection_tokens:,} "
                     "(the models' own usage reports)")
    if result.submission_reason:
        lines.append(f"  submission  {result.submission_reason}")
    return lines


def _process(result: Result) -> list[str]:
    """How this decision came about: decided again, skipped proposals, pre-flight warnings."""
    lines = []
    if result.decision_number > 1:
        lines.append(f"  decided     again (decision {result.decision_number}): "
                     f"{_plural(result.decision_paid_evaluations, 'new evaluation')} paid, the rest from the record")
    if result.skipped_proposals:
        lines.append(f"  skipped     {_plural(result.skipped_proposals, 'proposal')} from parents already perfect on "
                     "their minibatch")
    if result.holdout_reuse:  # the look ledger's count (gepa_lab/runs/looks.py)
        lines.append(f"  looks       {_plural(result.holdout_reuse, 'earlier decision')} on this holdout split"
                     + (": keeping the best of them tunes on it (confirm the choice on a sealed split: python -m "
                        "gepa_lab.report --confirm)" if result.holdout_reuse >= HOLDOUT_REUSE_WARNING else ""))
    return lines + [f"  warning     {warning}" for warning in result.warnings]


def _links(result: Result) -> list[str]:
    links, lines = dict(result.links), []
    url, command, run_name = (links.pop(k, None) for k in ("mlflow_run_url", "mlflow_ui_command", "mlflow_run_name"))
    if url:  # every run's decision, this one named (the rest is on its page); the run id stays for `gepa_lab.note`
        lines.append(f"  mlflow      {url}" + (f"  (this run: {run_name})" if run_name else ""))
        if command:
            lines.append(f"              serve it first: {command}")
        links = {k: v for k, v in links.items() if k not in ("mlflow_experiment_id", "mlflow_tracking_uri")}
    return lines + [f"  {name:<11} {value}" for name, value in sorted(links.items())]
