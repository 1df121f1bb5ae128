"""The report of experiments/real_lm_study.py: tables from its results.json (see that script).

    python experiments/real_lm_study.py --work <dir> --report
"""

from __future__ import annotations

import csv
from pathlib import Path
from typing import Any

import numpy as np

RNG = np.random.default_rng(20261203)


def two_way_interval(deltas: np.ndarray, resamples: int = 4000) -> tuple[float, float, float] | None:
    """Mean of a runs x cases matrix of paired holdout deltas with a 95 % bootstrap interval that
    resamples runs and holdout cases together; None below 5 runs."""
    if deltas.ndim != 2 or deltas.shape[0] < 5:
        return None
    runs, cases = deltas.shape
    stats = np.empty(resamples)
    for i in range(resamples):
        stats[i] = deltas[RNG.integers(0, runs, runs)][:, RNG.integers(0, cases, cases)].mean()
    return float(deltas.mean()), float(np.quantile(stats, 0.025)), float(np.quantile(stats, 0.975))


def fmt(value: tuple[float, float, float] | None) -> str:
    return "no interval (< 5 runs)" if value is None else f"{value[0]:+.3f} [{value[1]:+.3f}, {value[2]:+.3f}]"


def sign_flip_p(differences: np.ndarray, resamples: int = 20000) -> float:
    """Two-sided sign-flip permutation p-value of the mean of paired differences."""
    if len(differences) == 0 or not np.any(differences):
        return 1.0
    observed = abs(differences.mean())
    signs = RNG.choice([-1.0, 1.0], size=(resamples, len(differences)))
    return float((np.abs((signs * differences).mean(axis=1)) >= observed - 1e-12).mean())


def search_table(rows: list[dict[str, Any]]) -> list[str]:
    lines = ["| env | task | parent | runs | seed holdout | winner holdout | delta [95 % CI, runs x cases] | "
             "eligible | metric calls | task tokens | wall s (mean) | load |",
             "|---|---|---|---|---|---|---|---|---|---|---|---|"]
    groups: dict[tuple[str, str, str], list[dict[str, Any]]] = {}
    for row in rows:
        groups.setdefault((row["env"], row["task"], row["parent"]), []).append(row)
    for (env, task, parent), group in sorted(groups.items()):
        deltas = np.array([r["case_deltas"] for r in group])
        lines.append(f"| {env} | {task} | {parent} | {len(group)} | "
                     f"{np.mean([r['seed_holdout'] for r in group]):.3f} | "
                     f"{np.mean([r['winner_holdout'] for r in group]):.3f} | {fmt(two_way_interval(deltas))} | "
                     f"{sum(r['eligible'] for r in group)}/{len(group)} | "
                     f"{np.mean([r['metric_calls'] for r in group]):.0f} | "
                     f"{np.mean([r['task_tokens'] for r in group]):,.0f} | {np.mean([r['wall_s'] for r in group]):.0f} | "
                     f"{np.mean([r['load'] for r in group]):.1f} |")
    return lines


def policy_table(rows: list[dict[str, Any]]) -> list[str]:
    """Pareto minus current-best winner holdout, paired by (env, task, seed)."""
    lines = ["| env | task | pairs | pareto - current_best holdout [95 % CI, runs x cases] | better / tied / worse "
             "(tolerance 1e-3) | sign-flip p |", "|---|---|---|---|---|---|"]
    keyed = {(r["env"], r["task"], r["seed"], r["parent"]): r for r in rows}
    groups: dict[tuple[str, str], list[tuple[dict[str, Any], dict[str, Any]]]] = {}
    for (env, task, seed, parent), row in keyed.items():
        other = keyed.get((env, task, seed, "current_best"))
        if parent == "pareto" and other is not None:
            groups.setdefault((env, task), []).append((row, other))
    for (env, task), pairs in sorted(groups.items()):
        per_case = np.array([np.array(p["case_deltas"]) - np.array(c["case_deltas"]) for p, c in pairs])
        diffs = np.array([p["winner_holdout"] - c["winner_holdout"] for p, c in pairs])
        better, worse = int((diffs > 1e-3).sum()), int((diffs < -1e-3).sum())
        lines.append(f"| {env} | {task} | {len(pairs)} | {fmt(two_way_interval(per_case))} | "
                     f"{better} / {len(pairs) - better - worse} / {worse} | {sign_flip_p(diffs):.2f} |")
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


def write_report(results: dict[str, Any], report: Path, csv_path: Path, machine: str,
                 text: dict[str, str] | None = None) -> None:
    """`text`: the prose sections by name (written by hand after reading the numbers)."""
    text = text or {}
    runs = [*results.get("search", []), *results.get("sim", [])]
    parts = ["# Real-model study: GEPA on SmolLM2-135M-Instruct, beside SkillCraft-sim", "",
             f"Machine: {machine}. Regenerate: `python experiments/real_lm_study.py --work <dir>` (hours on 2 "
             "cores), then `--report`. **These are a 135M model's numbers, not a large model's; SkillCraft-sim "
             "numbers calibrate the harness, not an LM.**", "", text.get("summary", ""), "",
             "## 1. Seed vs winner on Holdout", "", *search_table(runs), "", text.get("search", ""), "",
             "## 2. Pareto vs current-best parent selection", "", *policy_table(runs), "", text.get("policy", ""), "",
             "## 3. Per-instance reproducibility of the final pools", "",
             *repro_table([*results.get("repro_real", []), *results.get("repro_sim", [])]), "",
             text.get("repro", ""), "", "## 4. The model as its own reflector (`reflector=lm`)", "",
             *lm_table(results.get("lm", [])), "", text.get("lm", ""), "", "## 5. Throughput against the server", "",
             *throughput_table(results.get("throughput", [])), "", text.get("throughput", ""), ""]
    report.write_text("\n".join(parts).replace("\n\n\n", "\n\n"), encoding="utf-8")
    fields = ["env", "task", "parent", "reflector", "seed", "seed_validation", "winner_validation", "seed_holdout",
              "winner_holdout", "holdout_delta", "eligible", "reason", "metric_calls", "proposals", "pool",
              "task_tokens", "reflection_tokens", "wall_s", "load"]
    with open(csv_path, "w", newline="", encoding="utf-8") as out:
        writer = csv.DictWriter(out, fieldnames=fields, extrasaction="ignore")
        writer.writeheader()
        writer.writerows([*runs, *results.get("lm", [])])
