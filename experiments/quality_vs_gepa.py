"""Search quality on SkillCraft-sim: gepa-lab vs the reference at equal metric budgets.

usage: python experiments/quality_vs_gepa.py [--families all] [--seeds 20] [--budget 1000] [--jobs 1]
                                             [--quick] [--out-dir DIR]
Writes experiments/reports/quality_vs_gepa.{md,csv} (--quick: a new temporary folder).

Every SkillCraft-sim family registered when the script runs, random seeds 1..N. Both engines get the
same evaluator (`SkillCraftEvaluator(family)`) and the same offline reflector
(`FeedbackReflector(seed=random seed)`, the CLI's default): gepa-lab directly, the reference through
an adapter and its `reflection_strategy`. Budget: `--budget` search metric calls on both sides
(gepa-lab's holdout comparison comes on top). The reference has no seed argument, so its adapter
picks the evaluation seed: `paired` (gepa-lab's scheme given to the reference: a new seed per
iteration through its public `on_iteration_start` callback, shared by parent and child, one
validation seed per run), `unpaired` (gepa-lab's `paired_seeds=False` scheme), `fixed` (one seed
for the whole run) and `fresh` (a new seed per evaluated batch). gepa-lab also runs unpaired. Each winner's holdout delta is
re-measured on 20 fresh holdout seeds; intervals are percentile bootstraps over runs.
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

ENGINES: dict[str, tuple[str, dict[str, Any], str]] = {
    "gepa-lab": ("gepa-lab", {}, "gepa-lab defaults: a fresh seed per proposal shared by parent and child "
                                 "(paired), one validation seed per run, Pareto parents, minibatch 3, k = 1, default "
                                 "promotion policy"),
    "gepa (paired)": ("gepa", {"seed_policy": "paired"},
                      "gepa.optimize defaults (Pareto, epoch-shuffled minibatch 3, round-robin components, strict "
                      "improvement) with gepa-lab's seed scheme: a new seed per iteration set in `on_iteration_start` "
                      "and shared by parent and child, one validation seed per run"),
    "gepa-lab (unpaired)": ("gepa-lab", {"paired_seeds": False},
                            "gepa-lab with `paired_seeds=False`: the child's minibatch gets its own fresh seed"),
    "gepa (unpaired)": ("gepa", {"seed_policy": "unpaired"},
                        "the reference with the same scheme: a new seed per minibatch evaluation, one validation "
                        "seed per run"),
    "gepa (fixed seed)": ("gepa", {"seed_policy": "fixed"}, "the reference with one evaluation seed per run "
                                                             "(a deterministic task)"),
    "gepa (fresh seed)": ("gepa", {"seed_policy": "fresh"}, "the reference with a new seed per evaluated batch, "
                                                             "validation included (noise, no pairing)"),
}
COMPARISONS = (("gepa-lab", "gepa (paired)", "engine; same seed scheme (paired)"),
               ("gepa-lab (unpaired)", "gepa (unpaired)", "engine; same seed scheme (unpaired)"),
               ("gepa-lab", "gepa-lab (unpaired)", "pairing, in gepa-lab"),
               ("gepa (paired)", "gepa (unpaired)", "pairing, in the reference"),
               ("gepa (unpaired)", "gepa (fresh seed)", "one validation seed vs a fresh one per batch, reference"),
               ("gepa-lab", "gepa (fixed seed)", "engine and seed scheme"),
               ("gepa-lab", "gepa (fresh seed)", "engine and seed scheme"))
CSV_COLUMNS = ("label", "engine", "family", "seed", "budget", "search_calls", "total_calls", "proposals", "accepted",
               "winner_is_seed", "eligible", "run_holdout_delta", "holdout_delta", "worse", "gain_per_1k_calls")


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
    fams = fams[:1] if args.quick and args.families == "all" else fams
    if set(fams) - set(registered):
        parser.error(f"unknown famil(ies) {sorted(set(fams) - set(registered))}; registered: {', '.join(registered)}")
    seeds = args.seeds or (2 if args.quick else 20)
    budget = args.budget or (200 if args.quick else 1000)
    env, monitor = _bench.environment(), _bench.LoadMonitor()

    specs = [{"label": label, "engine": engine, "family": f, "seed": s, "budget": budget,
              ("search" if engine == "gepa-lab" else "ref"): options}
             for f in fams for s in range(1, seeds + 1) for label, (engine, options, _) in ENGINES.items()]
    rows = _bench.quality_jobs(specs, args.jobs)
    load = monitor.stop()

    by = {(r["label"], r["family"], r["seed"]): r for r in rows}
    lines = _bench.header(
        "Search quality on SkillCraft-sim: gepa-lab vs reference gepa at equal metric budgets", env,
        _bench.command_line("quality_vs_gepa.py", argv), load,
        [f"families: {', '.join(fams)} (registered: {', '.join(registered)}); random seeds 1..{seeds} per family; "
         f"search budget {budget} metric calls on both sides (the seed's validation included; gepa-lab's holdout "
         "comparison, 40 calls, on top)",
         "same evaluator and offline reflector on both sides (`SkillCraftEvaluator`, `FeedbackReflector(seed)`); "
         "the reference gets them as adapter and `reflection_strategy`, with `skip_perfect_score=False` (gepa-lab's "
         "default) and a stopper with gepa-lab's rule (stop when one more proposal might not fit)",
         "holdout delta re-measured on 20 fresh holdout seeds (never used by a run), winner minus seed, paired per "
         "(case, seed); 'worse' = re-measured delta < 0; intervals: percentile bootstrap over runs (10,000 "
         "resamples, gepa-lab's `paired_interval`)" + (" — QUICK MODE: a smoke test, not a measurement"
                                                       if args.quick else "")])
    lines += ["## Engines", "", *[f"- **{label}**: {desc}" for label, (_, _, desc) in ENGINES.items()], ""]
    lines += ["## All families", "", *_bench.md_table(
        ("engine", "runs", "re-measured holdout delta, mean [95 % CI]", "winner worse than the seed",
         "winner = seed", "accepted / run", "search calls / run"),
        ([label, len(mine), _bench.mean_ci_text([r["holdout_delta"] for r in mine]),
          _bench.share_ci_text([r["worse"] for r in mine]), f"{sum(r['winner_is_seed'] for r in mine)}/{len(mine)}",
          f"{statistics.fmean(r['accepted'] for r in mine):.1f}",
          f"{statistics.fmean(r['search_calls'] for r in mine):.0f}"]
         for label in ENGINES for mine in [[r for r in rows if r["label"] == label]])), ""]
    promoted = [r for r in rows if r["label"] == "gepa-lab" and r["eligible"]]
    worse_promoted = [r["worse"] for r in promoted]
    lines += [f"gepa-lab (defaults) promoted {len(promoted)} of {len(fams) * seeds} winners (default promotion "
              "policy). **Promoted winners worse than the seed on the re-measure: "
              f"{_bench.share_ci_text(worse_promoted)}** (target 0)"
              + ("" if not promoted else (" — met" if not any(worse_promoted) else " — MISSED")) + ".", ""]

    diff_rows = []
    for a, b, what in COMPARISONS:
        pairs = [(by[(a, f, s)]["holdout_delta"], by[(b, f, s)]["holdout_delta"])
                 for f in fams for s in range(1, seeds + 1)]
        diffs = [x - y for x, y in pairs]
        lo, hi = _bench.interval(diffs)
        verdict = "not significant" if lo <= 0 <= hi else ("A ahead" if lo > 0 else "B ahead")
        diff_rows.append([f"{a} − {b}", what, f"{statistics.fmean(diffs):+.4f} [{lo:+.4f}, {hi:+.4f}]",
                          f"{sum(x > y for x, y in pairs)} / {sum(x == y for x, y in pairs)} / "
                          f"{sum(x < y for x, y in pairs)}", verdict])
    lines += ["## Differences, paired by (family, seed)", "", *_bench.md_table(
        ("A − B", "what differs", "mean difference in re-measured holdout delta [95 % CI]", "A better / tied / worse",
         "verdict"), diff_rows), ""]

    lines += ["## Per family (mean re-measured holdout delta; winners worse than the seed)", "", *_bench.md_table(
        ("family", *ENGINES, "gepa-lab promoted (worse)"),
        ([f, *[f"{statistics.fmean(r['holdout_delta'] for r in mine):+.4f} ({sum(r['worse'] for r in mine)}/"
               f"{len(mine)})" for label in ENGINES for mine in [[by[(label, f, s)] for s in range(1, seeds + 1)]]],
          f"{sum(1 for r in promoted if r['family'] == f)}/{seeds} "
          f"({sum(r['worse'] for r in promoted if r['family'] == f)})"] for f in fams)), ""]
    lines += ["## Caveats", "",
              "- SkillCraft-sim is a simulator and the reflector an offline stand-in for an LM "
              "(docs/skillcraft_sim.md): these figures compare search procedures on it, not on a real task.",
              "- Paired seeds are gepa-lab's feature; the reference has no seed argument and gets them here "
              "through its public callback. The two `engine; same seed scheme` rows are the like-for-like engine "
              "comparisons; the other rows mix the engine with the seed scheme.",
              "- The reference samples minibatches epoch-wise (its default), gepa-lab uniformly without "
              "replacement per iteration; both use instance-level Pareto parents and round-robin components.", ""]
    _bench.write_outputs("quality_vs_gepa", args, "\n".join(lines), rows, CSV_COLUMNS, env)


if __name__ == "__main__":
    main()
