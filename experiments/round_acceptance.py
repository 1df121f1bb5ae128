"""Which of a round's improving children should join the pool? accept_top = all / top-2 / best at
parallel_proposals = 4, on SkillCraft-sim, by holdout gain per metric call.

usage: python experiments/round_acceptance.py [--families all] [--seeds 12] [--budget 1000] [--k 4]
                                              [--checkpoints 250,500] [--with-reference] [--jobs 1]
                                              [--quick] [--out-dir DIR]
Writes experiments/reports/round_acceptance.{md,csv} (--quick: experiments/reports/quick/).

gepa-lab with `SearchConfig(parallel_proposals=k, accept_top=None | 2 | 1)` next to k = 1, same
evaluator, reflector, budget and seeds. The holdout gain is the winner's delta re-measured on 20
fresh holdout seeds; the anytime columns re-measure the candidate the run would have returned with a
smaller search budget (the search is a prefix of the full one: stop rules are the only thing a
budget changes). `--with-reference` adds gepa's IndependentSampling(k) with AllImprovements /
TopKImprovements(2) / BestImprovement (fixed evaluation seed) for context.
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

CSV_COLUMNS = ("label", "engine", "family", "seed", "budget", "search_calls", "proposals", "accepted",
               "dropped_by_round_acceptance", "calls_per_accepted", "winner_is_seed", "eligible",
               "run_holdout_delta", "holdout_delta", "worse", "gain_per_1k_calls")


def configs(k: int, with_reference: bool) -> dict[str, tuple[str, dict[str, Any]]]:
    out: dict[str, tuple[str, dict[str, Any]]] = {
        "k=1": ("gepa-lab", {}),
        f"k={k}, all (accept_top=None)": ("gepa-lab", {"parallel_proposals": k, "accept_top": None}),
        f"k={k}, top-2 (accept_top=2)": ("gepa-lab", {"parallel_proposals": k, "accept_top": 2}),
        f"k={k}, best (accept_top=1)": ("gepa-lab", {"parallel_proposals": k, "accept_top": 1}),
    }
    if with_reference:
        for name, accept in (("AllImprovements", "all"), ("TopKImprovements(2)", "top2"), ("BestImprovement", "best")):
            out[f"reference k={k}, {name}"] = ("gepa", {"k": k, "accept": accept})
    return out


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--families", default="all")
    parser.add_argument("--seeds", type=int, default=None, help="random seeds 1..N per family (default 12; quick 2)")
    parser.add_argument("--budget", type=int, default=None, help="search metric calls (default 1000; quick 200)")
    parser.add_argument("--k", type=int, default=4, help="parallel_proposals of the round variants")
    parser.add_argument("--checkpoints", default=None, help="smaller search budgets to re-measure (default 250,500)")
    parser.add_argument("--with-reference", action="store_true")
    parser.add_argument("--jobs", type=int, default=1, help="processes (runs are not timed)")
    _bench.add_common_args(parser)
    argv = sys.argv[1:] if argv is None else argv
    args = parser.parse_args(argv)
    fams, registered = _bench.family_list(args.families, args.quick)
    seeds = args.seeds or (2 if args.quick else 12)
    budget = args.budget or (200 if args.quick else 1000)
    checkpoints = [int(x) for x in (args.checkpoints or ("100" if args.quick else "250,500")).split(",") if x]
    cfgs = configs(args.k, args.with_reference)
    env, monitor = _bench.environment(), _bench.LoadMonitor()
    specs = [{"label": label, "engine": engine, "family": f, "seed": s, "budget": budget, "checkpoints": checkpoints,
              **({"search": kw} if engine == "gepa-lab" else {"ref": kw})}
             for f in fams for s in range(1, seeds + 1) for label, (engine, kw) in cfgs.items()]
    rows = _bench.parallel_map(_bench.quality_job, specs, args.jobs)
    load = monitor.stop()
    labels = list(cfgs)
    all_label = labels[1]

    command = _bench.command_line("round_acceptance.py", argv)
    lines = _bench.header(
        f"Round acceptance at parallel_proposals = {args.k}: all vs top-2 vs best", env, command, load,
        [_bench.families_note(fams, registered),
         f"random seeds 1..{seeds} per family; search budget {budget} metric calls (gepa-lab's holdout "
         "comparison on top); evaluator `SkillCraftEvaluator`, reflector `FeedbackReflector(seed)`; every other "
         "search setting at its default",
         "holdout gain = the winner's holdout delta re-measured on 20 fresh holdout seeds (paired per case and "
         "seed); paired differences by (family, seed); percentile bootstrap intervals over runs"
         + (" — QUICK MODE: a smoke test, not a measurement" if args.quick else "")])
    lines += [f"## At the full budget ({budget} search calls)", "", *_bench.study_table(rows, labels, all_label), ""]
    lines += ["`metric calls per accepted` = search calls / candidates added to the pool (pooled over runs); "
              "`promoted` = gepa-lab's default promotion decision.", ""]
    lines += ["## Holdout gain per metric call along the run (anytime)", "",
              "| configuration | " + " | ".join(f"gain @{b} (per 1k calls)" for b in [*checkpoints, budget])
              + " | improving children dropped by the round rule / run |",
              "|---|" + "---|" * (len(checkpoints) + 2)]
    for label in labels:
        mine = [r for r in rows if r["label"] == label]
        cells = []
        for b in [*checkpoints, budget]:
            col = "holdout_delta" if b == budget else f"holdout_delta_at_{b}"
            g = statistics.fmean(r[col] for r in mine)
            cells.append(f"{g:+.4f} ({g / b * 1000:+.4f})")
        dropped = statistics.fmean(r["dropped_by_round_acceptance"] for r in mine) if mine[0]["engine"] == "gepa-lab" \
            else float("nan")
        lines.append(f"| {label} | " + " | ".join(cells) + f" | {_bench.fmt(dropped, 1)} |")
    lines += ["", f"Paired differences to `{all_label}` at each budget (mean [95 % CI], by family and seed):", "",
              "| configuration | " + " | ".join(f"@{b}" for b in [*checkpoints, budget]) + " |",
              "|---|" + "---|" * (len(checkpoints) + 1)]
    by_key = {(r["label"], r["family"], r["seed"]): r for r in rows}
    for label in labels:
        if label == all_label:
            continue
        cells = []
        for b in [*checkpoints, budget]:
            col = "holdout_delta" if b == budget else f"holdout_delta_at_{b}"
            pairs = [(by_key[(all_label, r["family"], r["seed"])][col], r[col]) for r in rows if r["label"] == label]
            m, lo, hi = _bench.paired_diff_ci([a for a, _ in pairs], [c for _, c in pairs])
            cells.append(f"{m:+.4f} [{lo:+.4f}, {hi:+.4f}]")
        lines.append(f"| {label} | " + " | ".join(cells) + " |")
    lines += [""]

    # the data's own verdict, for the k-proposal variants of gepa-lab
    key = {(r["label"], r["family"], r["seed"]): r for r in rows}
    variants = labels[1:4]
    means = {label: statistics.fmean(r["holdout_delta"] for r in rows if r["label"] == label) for label in variants}
    best = max(variants, key=lambda label: means[label])
    verdict = [f"Highest mean re-measured holdout gain at k = {args.k}: **{best}** ({means[best]:+.4f})."]
    for other in variants:
        if other == best:
            continue
        pairs = [(key[(other, f, s)]["holdout_delta"], key[(best, f, s)]["holdout_delta"])
                 for f in fams for s in range(1, seeds + 1)]
        m, lo, hi = _bench.paired_diff_ci([a for a, _ in pairs], [b for _, b in pairs])
        sig = "significant" if lo > 0 else "not significant (the interval spans 0)"
        verdict.append(f"{best} minus {other}: {m:+.4f} [{lo:+.4f}, {hi:+.4f}], {sig}.")
    lines += ["## Verdict (computed from the table)", "", *[f"- {v}" for v in verdict], ""]
    lines += ["## What the round rule changes", "",
              "- `all` adds every improving child of the round: more validations (20 calls each) per round, more "
              "candidates in the pool, more chances for a child that improved a 3-case minibatch by luck.",
              "- `best` / `top-2` drop the other improving children (their minibatch calls are spent, their "
              "validation is saved); the pool grows more slowly and the budget buys more proposals.",
              "- With k = 1 every variant is the same rule (a round has one proposal).", ""]
    text = "\n".join(lines)
    md, csv_path = _bench.write_outputs("round_acceptance", _bench.out_dir(args), text, rows,
                                        [*CSV_COLUMNS, *[f"holdout_delta_at_{b}" for b in checkpoints]], env)
    print(text)
    print(f"wrote {md} and {csv_path}")


if __name__ == "__main__":
    main()
