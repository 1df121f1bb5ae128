"""The human-readable end-of-run summary."""

from __future__ import annotations

from pathlib import Path

from gepa_lab.core.result import Result


def format_summary(result: Result, experiment: str, run_dir: Path | None) -> str:
    bv, cv = result.baseline_validation, result.candidate_validation
    bh, ch = result.baseline_holdout, result.candidate_holdout
    winner = "seed (no candidate beat it)" if result.best_id == result.seed_id else result.best_id[:12]
    decision = "ELIGIBLE" if result.promotion_eligible else "NOT ELIGIBLE"
    lines = [
        f"gepa-lab {result.algorithm}  experiment={experiment}  random_seed={result.seeds['random_seed']}",
        f"  stop        {result.stop_reason} after {result.metric_calls} metric calls, "
        f"{result.candidate_count} candidates in the pool",
        f"  winner      {winner}",
        f"  validation  seed {bv.score:.4f} -> winner {cv.score:.4f}  ({bv.cases} cases)",
    ]
    if bh.cases:
        lines.append(
            f"  holdout     seed {bh.score:.4f} -> winner {ch.score:.4f}  "
            f"delta {result.holdout_delta:+.4f}  ({bh.cases} cases)"
        )
    else:
        lines.append("  holdout     none configured")
    lines.append(f"  decision    {decision}: {result.promotion_reason}")
    drops = [c for c in result.holdout_cases if c["critical"] and c["delta"] < 0]
    if drops:
        worst = ", ".join(f"{c['case_id']} {c['delta']:+.6f}" for c in drops)
        lines.append(f"  critical    drops vs seed: {worst} (promotion.critical_tolerance sets what counts)")
    if result.submission_reason:
        lines.append(f"  submission  {result.submission_reason}")
    if run_dir is not None:
        lines.append(f"  record      {run_dir}")
    return "\n".join(lines)
