"""Search quality on SkillCraft-sim: gepa-lab vs the reference at equal metric budgets.

usage: python experiments/quality_vs_gepa.py [--families all] [--seeds 20] [--budget 1000] [--jobs 1]
                                             [--quick] [--out-dir DIR]
Writes experiments/reports/quality_vs_gepa.{md,csv} (--quick: experiments/reports/quick/).

Every SkillCraft-sim family registered when the script runs, random seeds 1..N. Both engines get the
same evaluator (`SkillCraftEvaluator(family)`) and the same offline reflector
(`FeedbackReflector(seed=random seed)`, the CLI's default): gepa-lab directly, the reference through
an adapter (its `evaluate` / `make_reflective_dataset`) and its `custom_candidate_proposer`.
Budget: `--budget` metric calls for the search on both sides (gepa-lab's holdout comparison comes on
top, the reference has none). The reference has no seed argument, so two adapters are run: `fixed`
(one evaluation seed for the whole run: a deterministic task) and `fresh` (a new seed per evaluated
batch: LM-like sampling noise). Each winner's holdout delta is re-measured on 20 fresh holdout
seeds (seed and winner on the 20 holdout cases per seed, paired); intervals are percentile
bootstraps over runs.
"""

from __future__ import annotations

import argparse
import statistics
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT), str(ROOT / "experiments")]

import _bench  # noqa: E402

ENGINES = {
    "gepa-lab": ("gepa-lab", {}, "gepa-lab defaults (paired seeds, Pareto parents, minibatch 3, k = 1) and its "
                                 "default promotion policy"),
    "gepa (fixed seed)": ("gepa", {"seed_policy": "fixed"}, "gepa.optimize defaults (Pareto, epoch-shuffled "
                                                              "minibatch 3, round-robin components, strict "
                                                              "improvement), one evaluation seed per run"),
    "gepa (fresh seed)": ("gepa", {"seed_policy": "fresh"}, "the same, a new evaluation seed per evaluated batch"),
}
CSV_COLUMNS = ("label", "engine", "family", "seed", "budget", "search_calls", "total_calls", "proposals", "accepted",
               "calls_per_accepted", "winner_is_seed", "eligible", "reason", "run_holdout_delta", "holdout_delta",
               "worse", "gain_per_1k_calls")


def summary_rows(rows: list[dict[str, Any]], labels: list[str]) -> list[str]:
    lines = ["| engine | runs | re-measured holdout delta, mean [95 % CI] | winner worse than the seed "
             "| winner = seed | accepted / run | search calls / run |", "|---|---|---|---|---|---|---|"]
    for label in labels:
        mine = [r for r in rows if r["label"] == label]
        lines.append(f"| {label} | {len(mine)} | {_bench.mean_ci_text([r['holdout_delta'] for r in mine])} "
                     f"| {_bench.share_ci_text([r['worse'] for r in mine])} "
                     f"| {sum(r['winner_is_seed'] for r in mine)}/{len(mine)} "
                     f"| {statistics.fmean(r['accepted'] for r in mine):.1f} "
                     f"| {statistics.fmean(r['search_calls'] for r in mine):.0f} |")
    return lines


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--families", default="all", help="comma-separated, or all registered (default)")
    parser.add_argument("--seeds", type=int, default=None, help="random seeds 1..N per family (default 20; quick 2)")
    parser.add_argument("--budget", type=int, default=None, help="search metric calls (default 1000; quick 200)")
    parser.add_argument("--jobs", type=int, default=1, help="processes (runs are not timed)")
    _bench.add_common_args(parser)
    argv = sys.argv[1:] if argv is None else argv
    args = parser.parse_args(argv)
    registered = _bench.families()
    fams = list(registered) if args.families == "all" else [f.strip() for f in args.families.split(",")]
    if args.quick and args.families == "all":
        fams = fams[:1]
    unknown = [f for f in fams if f not in registered]
    if unknown:
        parser.error(f"unknown famil(ies) {unknown}; registered: {', '.join(registered)}")
    seeds = args.seeds or (2 if args.quick else 20)
    budget = args.budget or (200 if args.quick else 1000)
    env, monitor = _bench.environment(), _bench.LoadMonitor()

    specs = []
    for family in fams:
        for seed in range(1, seeds + 1):
            for label, (engine, ref, _) in ENGINES.items():
                specs.append({"label": label, "engine": engine, "family": family, "seed": seed, "budget": budget,
                              "ref": ref})
    rows = _bench.parallel_map(_bench.quality_job, specs, args.jobs)
    load = monitor.stop()
    labels = list(ENGINES)

    lab = [r for r in rows if r["label"] == "gepa-lab"]
    promoted = [r for r in lab if r["eligible"]]
    command = _bench.command_line("quality_vs_gepa.py", argv)
    lines = _bench.header(
        "Search quality on SkillCraft-sim: gepa-lab vs reference gepa at equal metric budgets", env, command, load,
        [f"families: {', '.join(fams)} (registered now: {', '.join(registered)})"
         + ("" if len(registered) >= 5 else f" — the other {5 - len(registered)} of the five planned families are "
            "not in the registry yet; rerun the script when they are"),
         f"random seeds 1..{seeds} per family; search budget {budget} metric calls on both sides (the seed's "
         "validation included; gepa-lab's holdout comparison, 40 calls, on top)",
         "same evaluator and offline reflector on both sides (`SkillCraftEvaluator`, `FeedbackReflector(seed)`); "
         "the reference gets them as adapter and `custom_candidate_proposer`, with `skip_perfect_score=False` and "
         "a stopper with gepa-lab's rule (stop when one more proposal might not fit)",
         "holdout delta re-measured on 20 fresh holdout seeds (never used by a run), winner minus seed, paired per "
         "(case, seed); 'worse' = re-measured delta < 0; intervals: percentile bootstrap over runs (10,000 "
         "resamples)" + (" — QUICK MODE: a smoke test, not a measurement" if args.quick else "")])
    lines += ["## Engines", ""] + [f"- **{label}**: {desc}" for label, (_, _, desc) in ENGINES.items()] + [""]
    lines += ["## All families", "", *summary_rows(rows, labels), ""]
    worse_promoted = [r["worse"] for r in promoted]
    lines += [f"gepa-lab promoted {len(promoted)} of {len(lab)} winners (default promotion policy: paired-bootstrap "
              "interval above 0, critical cases, gates). **Promoted winners that are worse than the seed on the "
              f"re-measure: {_bench.share_ci_text(worse_promoted)}** (target 0)"
              + ("." if not promoted else (" — target met." if not any(worse_promoted) else " — target MISSED.")), ""]
    lines += ["### gepa-lab minus the reference, paired by (family, seed)", "",
              "| comparison | mean difference in re-measured holdout delta [95 % CI] | gepa-lab better / tied / worse |",
              "|---|---|---|"]
    key = {(r["label"], r["family"], r["seed"]): r for r in rows}
    behind = []
    for other in labels[1:]:
        pairs = [(key[(other, f, s)]["holdout_delta"], key[("gepa-lab", f, s)]["holdout_delta"])
                 for f in fams for s in range(1, seeds + 1)]
        m, lo, hi = _bench.paired_diff_ci([p[0] for p in pairs], [p[1] for p in pairs])
        better = sum(b > a for a, b in pairs)
        tied = sum(b == a for a, b in pairs)
        lines.append(f"| gepa-lab - {other} | {m:+.4f} [{lo:+.4f}, {hi:+.4f}] | {better} / {tied} / "
                     f"{len(pairs) - better - tied} |")
        if m < 0:
            behind.append(f"{other}: by {-m:.4f} in mean re-measured holdout delta "
                          f"({'significant' if hi < 0 else 'not significant: the interval spans 0'})")
    lines += ["", ("**Where gepa-lab is behind:** " + "; ".join(behind) + ".") if behind
              else "gepa-lab is not behind either reference variant on the pooled mean.", ""]
    lines += ["## Per family", "",
              "| family | " + " | ".join(f"{label}: delta (worse)" for label in labels) + " | gepa-lab promoted "
              "(worse) |", "|---|" + "---|" * (len(labels) + 1)]
    for f in fams:
        cells = []
        for label in labels:
            mine = [r for r in rows if r["label"] == label and r["family"] == f]
            cells.append(f"{statistics.fmean(r['holdout_delta'] for r in mine):+.4f} "
                         f"({sum(r['worse'] for r in mine)}/{len(mine)})")
        prom = [r for r in lab if r["family"] == f and r["eligible"]]
        cells.append(f"{len(prom)}/{seeds} ({sum(r['worse'] for r in prom)})")
        lines.append(f"| {f} | " + " | ".join(cells) + " |")
    lines += ["",
              "## Caveats", "",
              "- SkillCraft-sim is a simulator and the reflector is an offline stand-in for an LM (docs/skillcraft_sim.md); "
              "these figures compare the search procedures on it, not on a real task.",
              "- The reference has no notion of evaluation seeds; `fixed` gives it a deterministic task (which "
              "pairs parent and child implicitly), `fresh` gives it unpaired noise. gepa-lab draws a fresh paired "
              "seed per minibatch and one validation seed per run.",
              "- The reference samples minibatches epoch-wise (its default), gepa-lab uniformly without "
              "replacement per iteration; both use instance-level Pareto parents and round-robin components.",
              ""]
    text = "\n".join(lines)
    md, csv_path = _bench.write_outputs("quality_vs_gepa", _bench.out_dir(args), text, rows, CSV_COLUMNS, env)
    print(text)
    print(f"wrote {md} and {csv_path}")


if __name__ == "__main__":
    main()
