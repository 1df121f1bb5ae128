"""The report of experiments/real_lm_study.py: tables from its results.json (see that script).

    python experiments/real_lm_study.py --work <dir> --report
"""

from __future__ import annotations

import csv
from pathlib import Path
from typing import Any

import numpy as np

from gepa_lab.comparison import Comparison, paired_comparison


def compare(rows: list[dict[str, Any]], differences: list[float] | None = None,
            cases: list[list[float]] | None = None) -> Comparison:
    """Paired holdout differences (default: winner minus seed), clustered by search seed, with the
    holdout cases resampled too (gepa_lab.comparison)."""
    cases = cases if cases is not None else [r["case_deltas"] for r in rows]
    differences = differences if differences is not None else [float(np.mean(c)) for c in cases]
    return paired_comparison(differences, [r["seed"] for r in rows], cases, seed=20261203)


def p_text(c: Comparison) -> str:
    return "n/a" if c.p_value is None else "< 0.001" if c.p_value < 0.001 else f"{c.p_value:.3f}"


def fmt(c: Comparison) -> str:
    if c.low is None or c.high is None:
        return f"{c.estimate:+.3f} (no interval: {c.why})"
    return f"{c.estimate:+.3f} [{c.low:+.3f}, {c.high:+.3f}]"


def search_table(rows: list[dict[str, Any]]) -> list[str]:
    lines = ["| env | task | parent | runs | seed holdout | winner holdout | delta [95 % CI, runs x cases] | "
             "sign-flip p | eligible | metric calls | task tokens | wall s (mean) | load |",
             "|---|---|---|---|---|---|---|---|---|---|---|---|---|"]
    groups: dict[tuple[str, str, str], list[dict[str, Any]]] = {}
    for row in rows:
        groups.setdefault((row["env"], row["task"], row["parent"]), []).append(row)
    for (env, task, parent), group in sorted(groups.items()):
        c = compare(group)
        lines.append(f"| {env} | {task} | {parent} | {len(group)} | "
                     f"{np.mean([r['seed_holdout'] for r in group]):.3f} | "
                     f"{np.mean([r['winner_holdout'] for r in group]):.3f} | {fmt(c)} | "
                     f"{p_text(c)} | "
                     f"{sum(r['eligible'] for r in group)}/{len(group)} | "
                     f"{np.mean([r['metric_calls'] for r in group]):.0f} | "
                     f"{np.mean([r['task_tokens'] for r in group]):,.0f} | {np.mean([r['wall_s'] for r in group]):.0f} | "
                     f"{np.mean([r['load'] for r in group]):.1f} |")
    return lines


def policy_table(rows: list[dict[str, Any]]) -> list[str]:
    """Pareto minus current-best winner holdout, paired by (env, task, seed)."""
    lines = ["| env | task | pairs | pareto - current_best holdout [95 % CI, seeds x cases] | better / tied / worse "
             "(per-case tolerance 0.01) | sign-flip p |", "|---|---|---|---|---|---|"]
    keyed = {(r["env"], r["task"], r["seed"], r["parent"]): r for r in rows}
    groups: dict[tuple[str, str], list[tuple[dict[str, Any], dict[str, Any]]]] = {}
    for (env, task, seed, parent), row in keyed.items():
        other = keyed.get((env, task, seed, "current_best"))
        if parent == "pareto" and other is not None:
            groups.setdefault((env, task), []).append((row, other))
    for (env, task), pairs in sorted(groups.items()):
        # both winners are judged on the same holdout cases: their per-case deltas' difference
        cases = [list(np.subtract(p["case_deltas"], b["case_deltas"])) for p, b in pairs]
        c = compare([p for p, _ in pairs], cases=cases)
        lines.append(f"| {env} | {task} | {len(pairs)} | {fmt(c)} | {c.better} / {c.tied} / {c.worse} | "
                     f"{p_text(c)} |")
    return lines


def repro_table(rows: list[dict[str, Any]]) -> list[str]:
    lines = ["| env | task | scorings compared | pools | candidates (mean) | identical scores | candidate means r | "
             "per-instance part r | sole front holders | still sole holder |", "|---|---|---|---|---|---|---|---|---|---|"]
    groups: dict[tuple[str, str, str], list[dict[str, Any]]] = {}
    for row in rows:
        groups.setdefault((row["env"], row["task"], row["pair"]), []).append(row)
    for (env, task, pair), group in sorted(groups.items()):
        def mean(key: str, group: list[dict[str, Any]] = group) -> str:
            values = [g[key] for g in group if g[key] == g[key]]  # NaN: undefined for that pool
            return f"{np.mean(values):.2f}" if values else "n/a"

        sole = sum(g["sole_holders"] for g in group)
        kept = sum(g["sole_kept"] * g["sole_holders"] for g in group if g["sole_holders"])
        lines.append(f"| {env} | {task} | {pair} | {len(group)} | {mean('candidates')} | {mean('identical')} | "
                     f"{mean('means_corr')} | {mean('instance_corr')} | {sole} | "
                     f"{(kept / sole if sole else float('nan')):.2f} |")
    return lines


def throughput_table(rows: list[dict[str, Any]]) -> list[str]:
    lines = ["| workers | rounds | calls/s (mean) | min | max | load (mean) |", "|---|---|---|---|---|---|"]
    for workers in sorted({r["workers"] for r in rows}):
        rates = [r["calls_per_s"] for r in rows if r["workers"] == workers]
        loads = [r["load"] for r in rows if r["workers"] == workers]
        lines.append(f"| {workers} | {len(rates)} | {np.mean(rates):.2f} | {min(rates):.2f} | {max(rates):.2f} | "
                     f"{np.mean(loads):.1f} |")
    return lines


def lm_table(rows: list[dict[str, Any]]) -> list[str]:
    lines = ["| seed | proposals | accepted | rejected at the minibatch | reply unusable | duplicate | reflection tokens | "
             "winner holdout (seed) | wall s |", "|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        lines.append(f"| {r['seed']} | {r['proposals']} | {r.get('candidate_accepted', 0)} | "
                     f"{r.get('candidate_rejected', 0)} | {r.get('reflection_rejected', 0)} | "
                     f"{r.get('candidate_duplicate', 0)} | {r['reflection_tokens']:,} | {r['winner_holdout']:.3f} "
                     f"({r['seed_holdout']:.3f}) | {r['wall_s']:.0f} |")
    return lines


def write_report(results: dict[str, Any], report: Path, csv_path: Path, machine: str) -> None:
    """The tables; what they mean is written in docs/research.md, which quotes them."""
    runs = [*results.get("search", []), *results.get("sim", [])]
    parts = ["# Real-model study: GEPA on SmolLM2-135M-Instruct, beside SkillCraft-sim", "",
             f"Machine: {machine}. Regenerate: `python experiments/real_lm_study.py --work <dir>` (hours on 2 "
             "cores), then `--report`. **These are a 135M model's numbers, not a large model's; SkillCraft-sim "
             "numbers calibrate the harness, not an LM.** What the tables mean: docs/research.md.", "",
             "## 1. Seed vs winner on Holdout", "", *search_table(runs), "", "",
             "## 2. Pareto vs current-best parent selection", "", *policy_table(runs), "", "",
             "## 3. Per-instance reproducibility of the final pools", "",
             *repro_table([*results.get("repro_real", []), *results.get("repro_sim", [])]), "",
             "## 4. The model as its own reflector (`reflector=lm`)", "",
             *lm_table(results.get("lm", [])), "", "## 5. Throughput against the server", "",
             *throughput_table(results.get("throughput", [])), ""]
    report.write_text("\n".join(parts).replace("\n\n\n", "\n\n"), encoding="utf-8")
    fields = ["env", "task", "parent", "reflector", "seed", "seed_validation", "winner_validation", "seed_holdout",
              "winner_holdout", "holdout_delta", "eligible", "reason", "metric_calls", "proposals", "pool",
              "task_tokens", "reflection_tokens", "wall_s", "load"]
    with open(csv_path, "w", newline="", encoding="utf-8") as out:
        writer = csv.DictWriter(out, fieldnames=fields, extrasaction="ignore")
        writer.writeheader()
        writer.writerows([*runs, *results.get("lm", [])])
