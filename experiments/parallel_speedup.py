"""Parallel speed-up with a latency-bound evaluator: gepa-lab workers x parallel_proposals vs the
reference's IndependentSampling(k) with a threaded batch_evaluate and concurrent reflect_many.

usage: python experiments/parallel_speedup.py [--case-ms 50] [--reflect-ms 50] [--budget 400] [--repeats 3]
         [--workers 1,2,4,8] [--ks 1,2,4] [--sensitivity 0,200] [--quality-seeds 20] [--jobs 1]
         [--quick] [--out-dir DIR]
Writes experiments/reports/parallel_speedup.{md,csv} (--quick: a new temporary folder).

The task is SkillCraft-sim recipe with the offline feedback reflector. The evaluator sleeps
`case-ms` per case before scoring it (I/O-like latency that threads overlap; the scores stay the
simulator's deterministic ones) and the reflector sleeps `reflect-ms` per reflection (an LM call).
Both engines run at every worker count: gepa-lab with `EvaluationSettings(workers=N)`, the
reference with an adapter whose `batch_evaluate` runs on an N-thread pool, and with its
strongest documented set-up for reflection: a `reflection_strategy` whose `reflect_many` reflects
an iteration's k tasks concurrently. Every run, on either side, ends with the same holdout
comparison inside the timed wall. Speed-up = wall time per metric call of gepa-lab at workers 1 /
k 1 (same seed) over that of the configuration. Results do not depend on the sleeps, so holdout
gain per metric call at each k is measured on more seeds without them.
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

FAMILY = "recipe"
TARGET_SPEEDUP = 6.0
ENGINES = {"gepa-lab": "gepa-lab", "gepa": "reference"}
CSV_COLUMNS = ("kind", "engine", "workers", "k", "reflect_ms", "case_ms", "seed", "wall_s", "metric_calls",
               "proposals", "accepted", "ms_per_call", "speedup", "lab_over_ref", "holdout_delta",
               "gain_per_1k_calls", "fingerprint")


def timed_run(engine: str, workers: int, k: int, seed: int, case_ms: float, reflect_ms: float,
              budget: int) -> dict[str, Any]:
    task = _bench.skillcraft_task(FAMILY)
    if engine == "gepa-lab":
        out = _bench.run_lab(task, budget, seed, case_ms=case_ms, reflect_ms=reflect_ms, workers=workers,
                             parallel_proposals=k)
    else:
        out = _bench.run_reference(task, budget, seed, case_ms=case_ms, reflect_ms=reflect_ms, k=k, threads=workers,
                                   holdout=True)
    return {"kind": "timed", "engine": engine, "workers": workers, "k": k, "reflect_ms": reflect_ms,
            "case_ms": case_ms, "seed": seed, "wall_s": out.wall_s, "metric_calls": out.total_calls,
            "proposals": out.proposals, "accepted": out.accepted, "ms_per_call": out.wall_s / out.total_calls * 1e3,
            "fingerprint": _bench.fingerprint(out.winner.to_dict(), out.total_calls, out.accepted, out.pool_ids,
                                              out.holdout_delta_run),
            "pool_ids": out.pool_ids}


def parse_args(argv: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--case-ms", type=float, default=None, help="evaluator latency per case (default 50; quick 5)")
    parser.add_argument("--reflect-ms", type=float, default=None, help="per reflection (default 50; quick 5)")
    parser.add_argument("--budget", type=int, default=None, help="search metric calls per run (default 400)")
    parser.add_argument("--repeats", type=int, default=None, help="seeds 1..n of the timed grid (default 3)")
    parser.add_argument("--workers", default=None, help="default 1,2,4,8 (quick 1,8)")
    parser.add_argument("--ks", default=None, help="parallel_proposals / IndependentSampling k (default 1,2,4)")
    parser.add_argument("--sensitivity", default=None,
                        help="other reflector latencies (ms), at the largest worker count (default 0,200; quick none)")
    parser.add_argument("--sensitivity-repeats", type=int, default=2, help="seeds per latency (default 2)")
    parser.add_argument("--quality-seeds", type=int, default=None, help="no-sleep quality runs per k (default 20)")
    parser.add_argument("--jobs", type=int, default=1, help="processes for the (untimed) quality runs")
    _bench.add_common_args(parser)
    args = parser.parse_args(argv)
    q = args.quick
    args.case_ms = args.case_ms if args.case_ms is not None else (5.0 if q else 50.0)
    args.reflect_ms = args.reflect_ms if args.reflect_ms is not None else (5.0 if q else 50.0)
    args.budget = args.budget or (120 if q else 400)
    args.repeats = args.repeats or (1 if q else 3)
    args.workers = [int(x) for x in (args.workers or ("1,8" if q else "1,2,4,8")).split(",")]
    args.ks = [int(x) for x in (args.ks or ("1,4" if q else "1,2,4")).split(",")]
    args.sensitivity = [float(x) for x in (args.sensitivity if args.sensitivity is not None
                                           else ("" if q else "0,200")).split(",") if x.strip()]
    args.quality_seeds = args.quality_seeds or (2 if q else 20)
    if 1 not in args.workers or 1 not in args.ks:
        parser.error("--workers and --ks must include 1 (the baseline is gepa-lab workers 1 / k 1)")
    return args


def measure(args: argparse.Namespace) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """The timed grid (+ sensitivity), then the untimed quality runs."""
    for engine in ENGINES:  # warm-up: first-call imports are not charged to the baseline
        timed_run(engine, 1, 1, 0, 0.0, 0.0, 60)
    wmax, kmax = max(args.workers), max(args.ks)
    grids = [([(e, w, k) for w in args.workers for k in args.ks for e in ENGINES], args.reflect_ms, args.repeats)]
    grids += [([("gepa-lab", 1, 1), *[(e, wmax, k) for k in sorted({1, kmax}) for e in ENGINES]], r_ms,
               args.sensitivity_repeats) for r_ms in args.sensitivity]
    timed: list[dict[str, Any]] = []
    for grid, reflect_ms, repeats in grids:
        for r in range(repeats):  # configurations interleaved; the order flips every repeat
            for engine, w, k in (grid if r % 2 == 0 else grid[::-1]):
                timed.append(timed_run(engine, w, k, r + 1, args.case_ms, reflect_ms, args.budget))
                print(f"{engine:>8} w{w} k{k} reflect {reflect_ms:g} ms seed {r + 1}: {timed[-1]['wall_s']:.2f} s, "
                      f"{timed[-1]['metric_calls']} calls", flush=True)
    cells = {(x["engine"], x["workers"], x["k"], x["reflect_ms"], x["seed"]): x for x in timed}
    for row in timed:  # against gepa-lab workers 1 / k 1 with the same seed and reflector latency
        row["speedup"] = cells[("gepa-lab", 1, 1, row["reflect_ms"], row["seed"])]["ms_per_call"] / row["ms_per_call"]
        ref = cells.get(("gepa", row["workers"], row["k"], row["reflect_ms"], row["seed"]))
        row["lab_over_ref"] = row["ms_per_call"] / ref["ms_per_call"] if ref and row["engine"] == "gepa-lab" else None
    specs = [{"engine": e, "family": FAMILY, "seed": s, "budget": args.budget, "label": f"{e} k{k}",
              "search": {"parallel_proposals": k}, "ref": {"k": k}}
             for e in ENGINES for k in args.ks for s in range(1, args.quality_seeds + 1)]
    quality = [{**row, "kind": "quality", "k": spec["ref"]["k"], "metric_calls": row["search_calls"]}
               for spec, row in zip(specs, _bench.quality_jobs(specs, args.jobs), strict=True)]
    return timed, quality


def values(timed: list[dict[str, Any]], engine: str, w: int, k: int, key: str, r_ms: float) -> list[float]:
    return [x[key] for x in timed if (x["engine"], x["workers"], x["k"], x["reflect_ms"]) == (engine, w, k, r_ms)]


def identical(timed: list[dict[str, Any]], engine: str, k: int) -> bool:
    """Every seed's runs at this k have one fingerprint, whatever the worker count."""
    per_seed: dict[tuple[int, float], set[str]] = {}
    for x in timed:
        if x["engine"] == engine and x["k"] == k:
            per_seed.setdefault((x["seed"], x["reflect_ms"]), set()).add(x["fingerprint"])
    return bool(per_seed) and all(len(v) == 1 for v in per_seed.values())


def gain_table(quality: list[dict[str, Any]], ks: list[int]) -> list[str]:
    rows = []
    for e, name in ENGINES.items():
        base = {x["seed"]: x["gain_per_1k_calls"] for x in quality if x["engine"] == e and x["k"] == 1}
        for k in ks:
            mine = sorted((x for x in quality if x["engine"] == e and x["k"] == k), key=lambda x: x["seed"])
            diff = "—" if k == 1 else _bench.mean_ci_text([x["gain_per_1k_calls"] - base[x["seed"]] for x in mine])
            rows.append([name, k, _bench.mean_ci_text([x["holdout_delta"] for x in mine]),
                         f"{statistics.fmean(x['gain_per_1k_calls'] for x in mine):+.4f}", diff,
                         f"{statistics.fmean(x['accepted'] for x in mine):.1f}",
                         f"{statistics.fmean(x['proposals'] for x in mine):.1f}"])
    return _bench.md_table(("engine", "k", "holdout gain (mean [95 % CI])", "gain per 1k calls",
                            "minus k = 1 (per 1k calls)", "accepted", "proposals"), rows)


def report(args: argparse.Namespace, argv: list[str], env: dict[str, str], load: str, timed: list[dict[str, Any]],
           quality: list[dict[str, Any]]) -> str:
    ks, workers, wmax, kmax = args.ks, args.workers, max(args.workers), max(args.ks)

    def spread(engine: str, w: int, k: int, key: str = "speedup", r_ms: float = args.reflect_ms) -> str:
        v = values(timed, engine, w, k, key, r_ms)
        return "—" if not v else f"{statistics.median(v):.2f}x" + (
            f" ({min(v):.2f}–{max(v):.2f})" if len(v) > 1 else "")

    def med(engine: str, w: int, k: int, key: str) -> float:
        return _bench.median(values(timed, engine, w, k, key, args.reflect_ms))

    twins_equal = all(t["pool_ids"] == qr["pool_ids"] for t in timed if t["engine"] == "gepa-lab" for qr in quality
                      if qr["engine"] == "gepa-lab" and qr["k"] == t["k"] and qr["seed"] == t["seed"])
    headline, ref_headline = (med(e, wmax, kmax, "speedup") for e in ENGINES)
    lines = _bench.header(
        f"Parallel speed-up with a {args.case_ms:g} ms-per-case evaluator: gepa-lab vs reference gepa", env,
        _bench.command_line("parallel_speedup.py", argv), load,
        [f"task: SkillCraft-sim `{FAMILY}`, `FeedbackReflector`; the evaluator sleeps {args.case_ms:g} ms per case "
         f"(then scores it: deterministic), the reflector {args.reflect_ms:g} ms per reflection (other latencies under "
         f"Sensitivity); search budget {args.budget} metric calls + the holdout comparison (40 calls) on both sides",
         "gepa-lab: `EvaluationSettings(workers=N)` (threads, one case per call) x `SearchConfig(parallel_proposals="
         "k)`; reference: `gepa.optimize(sampling_strategy=IndependentSampling(k), reflection_strategy=...)` whose "
         "`reflect_many` reflects the k tasks of an iteration concurrently (one thread per task), an adapter whose "
         "`batch_evaluate` (and `evaluate`) runs every case of every item on an N-thread pool, a stopper that never "
         "exceeds the budget; after `optimize` the reference scores seed and winner on Holdout with the same pool, "
         "inside the timed wall",
         f"timed grid: seeds 1..{args.repeats} (speed-ups and ratios are per seed, then the median (min–max)), "
         "configurations interleaved, order flipped every repeat, one untimed warm-up run per engine first"
         + (" — QUICK MODE: a smoke test, not a measurement" if args.quick else "")])
    k_cols = [f"k = {k}" for k in ks]
    lines += [f"## Speed-up over gepa-lab workers 1 / k 1 (reflector {args.reflect_ms:g} ms)", "", *_bench.md_table(
        ("", *k_cols), ([f"{name}, workers {w}", *[spread(e, w, k) for k in ks]]
                        for w in workers for e, name in ENGINES.items())), ""]
    lines += ["## gepa-lab ms per metric call / the reference's, same workers and k (below 1: gepa-lab faster)", "",
              *_bench.md_table(("", *k_cols), ([f"workers {w}", *[spread("gepa-lab", w, k, "lab_over_ref")
                                                                 for k in ks]] for w in workers)), ""]
    lines += ["Wall time in seconds and metric calls (medians):", "", *_bench.md_table(
        ("", *k_cols), ([f"{name}, workers {w}", *[f"{med(e, w, k, 'wall_s'):.1f} s / {med(e, w, k, 'metric_calls'):.0f}"
                                                   for k in ks]] for w in workers for e, name in ENGINES.items())), ""]
    lines += [f"**Target** (gepa-lab >= {TARGET_SPEEDUP:g}x at {wmax} workers, k = {kmax}): {headline:.2f}x — "
              f"**{'met' if headline >= TARGET_SPEEDUP else 'MISSED'}**. The reference in the same configuration: "
              f"{ref_headline:.2f}x; gepa-lab's ms per call is {med('gepa-lab', wmax, kmax, 'lab_over_ref'):.2f}x the "
              "reference's there.", "",
              "Identical results across worker counts for a fixed k (winner, metric calls, accepted; for gepa-lab "
              "also pool ids and holdout delta; per seed): "
              + "; ".join(f"{name}: " + ", ".join(f"k = {k} {'yes' if identical(timed, e, k) else 'NO'}" for k in ks)
                          for e, name in ENGINES.items())
              + f". Sleeps change nothing (each timed gepa-lab run equals its no-sleep twin): "
                f"{'yes' if twins_equal else 'NO'}.", ""]
    if args.sensitivity:
        lines += [f"## Sensitivity to the reflector's latency (workers {wmax}; seeds 1..{args.sensitivity_repeats}; "
                  "the first row is the main grid)", "", *_bench.md_table(
                      ("reflector ms", *[f"{name} k{k}" for k in sorted({1, kmax}) for name in ENGINES.values()],
                       f"gepa-lab / reference ms per call, k{kmax}"),
                      ([f"{r_ms:g}", *[spread(e, wmax, k, r_ms=r_ms) for k in sorted({1, kmax}) for e in ENGINES],
                        spread("gepa-lab", wmax, kmax, "lab_over_ref", r_ms)]
                       for r_ms in [args.reflect_ms, *args.sensitivity])), ""]
    lines += [f"## Holdout gain per metric call at each k ({args.quality_seeds} seeds, no sleeps, same budget)", "",
              "Holdout gain = the winner's holdout delta re-measured on 20 fresh holdout seeds; per 1,000 search "
              "metric calls; the difference to k = 1 is paired by seed (bootstrap 95 % interval).", "",
              *gain_table(quality, ks), ""]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> None:
    argv = sys.argv[1:] if argv is None else argv
    args = parse_args(argv)
    env, monitor = _bench.environment(), _bench.LoadMonitor()
    timed, quality = measure(args)
    load = monitor.stop()
    rows = [{k: v for k, v in x.items() if k != "pool_ids"} for x in timed + quality]
    _bench.write_outputs("parallel_speedup", args, report(args, argv, env, load, timed, quality), rows, CSV_COLUMNS,
                         env)


if __name__ == "__main__":
    main()
