"""Does the harness's cost per metric call stay flat as a run grows? gepa-lab vs the reference.

usage: python experiments/scaling.py [--budgets 1000,4000,16000,20000] [--repeats 7,5,3,3]
                                     [--ref-repeats 3,1,1,1] [--seed 1] [--profile] [--quick] [--out-dir DIR]
Writes experiments/reports/scaling.{md,csv} (--quick: a new temporary folder).

The task is the recipe experiment (SkillCraft-sim recipe family, the default offline feedback
reflector, default search settings) with the run record on: gepa-lab gets a run directory
(`experiment.json`, `evaluations.jsonl`, `events.jsonl`: what `python -m gepa_lab experiment=recipe
tracking=none` writes, minus Hydra's files and the progress log), the reference its `run_dir`
(`gepa_state.bin` before every iteration, `candidate_tree.html`). Harness time = wall time minus
the time inside the evaluator and the reflector (measured in wrappers), divided by the run's metric
calls. Target: gepa-lab's harness ms per call at the largest budget <= 1.5x its value at the smallest.
"""

from __future__ import annotations

import argparse
import cProfile
import pstats
import sys
import tempfile
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT), str(ROOT / "experiments")]

import _bench  # noqa: E402

TARGET = 1.5
FAMILY = "recipe"
CSV_COLUMNS = ("kind", "engine", "budget", "repeat", "metric_calls", "proposals", "accepted", "wall_s",
               "evaluator_s", "reflector_s", "harness_s", "harness_ms_per_call", "harness_ms_per_proposal",
               "evaluator_ms_per_call", "window_end_calls", "seed")


def one_run(engine: str, budget: int, seed: int, snapshot_every: int) -> dict[str, Any]:
    task = _bench.skillcraft_task(FAMILY)
    clock = _bench.Clock(snapshot_every=snapshot_every)
    with tempfile.TemporaryDirectory(prefix="gepa-bench-") as tmp:
        if engine == "gepa-lab":  # the budget includes the holdout comparison (2 x 20 calls)
            out = _bench.run_lab(task, budget - 2 * len(task.dataset.holdout), seed, clock=clock,
                                 run_dir=Path(tmp) / "run")
        else:
            out = _bench.run_reference(task, budget, seed, clock=clock, run_dir=str(Path(tmp) / "run"))
    harness = out.wall_s - out.eval_s - out.refl_s
    return {"kind": "run", "engine": engine, "budget": budget, "metric_calls": out.total_calls,
            "proposals": out.proposals, "accepted": out.accepted, "wall_s": out.wall_s, "evaluator_s": out.eval_s,
            "reflector_s": out.refl_s, "harness_s": harness, "harness_ms_per_call": harness / out.total_calls * 1e3,
            "harness_ms_per_proposal": harness / max(1, out.proposals) * 1e3, "seed": seed,
            "evaluator_ms_per_call": out.eval_s / out.total_calls * 1e3,
            "snapshots": out.snapshots, "started": out.started}


def windows(run: dict[str, Any]) -> list[dict[str, Any]]:
    """Harness ms per call inside each window of `snapshot_every` calls (from the run's start)."""
    rows, prev = [], (run["started"], 0, 0.0, 0.0)
    for snap in run["snapshots"]:
        calls = snap[1] - prev[1]
        if calls > 0:
            harness = (snap[0] - prev[0]) - (snap[2] - prev[2]) - (snap[3] - prev[3])
            rows.append({"kind": "window", "engine": run["engine"], "budget": run["budget"],
                         "window_end_calls": snap[1], "metric_calls": calls, "harness_s": harness,
                         "harness_ms_per_call": harness / calls * 1e3, "seed": run["seed"]})
            prev = snap
    return rows


def profile_growth(small: int, large: int, seed: int, top: int = 14) -> list[str]:
    """cProfile gepa-lab at the smallest and the largest budget: the gepa_lab functions whose
    cumulative time per metric call grows most between the two."""
    task = _bench.skillcraft_task(FAMILY)
    per_call: dict[int, dict[tuple[str, int, str], tuple[float, int]]] = {}
    for budget in (small, large):
        profiler = cProfile.Profile()
        with tempfile.TemporaryDirectory(prefix="gepa-bench-") as tmp:
            profiler.enable()
            out = _bench.run_lab(task, budget - 2 * len(task.dataset.holdout), seed, run_dir=Path(tmp) / "run")
            profiler.disable()
        stats = pstats.Stats(profiler).stats  # type: ignore[attr-defined]
        per_call[budget] = {("/".join(Path(k[0]).parts[-2:]), k[1], k[2]): (v[3] / out.total_calls * 1e3, v[1])
                            for k, v in stats.items() if "gepa_lab/" in k[0]}
    a, b = per_call[small], per_call[large]
    grown = sorted(set(a) | set(b), key=lambda k: b.get(k, (0, 0))[0] - a.get(k, (0, 0))[0], reverse=True)[:top]
    return [f"cProfile of one gepa-lab run at {small:,} and at {large:,} calls (seed {seed}): the gepa_lab functions "
            "whose cumulative time per metric call grows most (profiling inflates absolute values):", "",
            *_bench.md_table(("function", f"calls @{small}", f"calls @{large}", f"cum ms/call @{small}",
                              f"cum ms/call @{large}", "growth"),
                             ([f"`{k[0]}:{k[1]}({k[2]})`", a.get(k, (0, 0))[1], b.get(k, (0, 0))[1],
                               f"{a.get(k, (0, 0))[0]:.4f}", f"{b.get(k, (0, 0))[0]:.4f}",
                               f"{b.get(k, (0, 0))[0] - a.get(k, (0, 0))[0]:+.4f}"] for k in grown)), ""]


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--budgets", default=None, help="metric calls per run (default 1000,4000,16000,20000)")
    parser.add_argument("--repeats", default=None, help="gepa-lab repeats per budget (default 7,5,3,3)")
    parser.add_argument("--ref-repeats", default=None, help="reference repeats per budget (default 3,1,1,1)")
    parser.add_argument("--seed", type=int, default=1, help="search.random_seed of every run (timing repeats)")
    parser.add_argument("--profile", action="store_true",
                        help="add the cProfile comparison even if the target is met (added when missed)")
    _bench.add_common_args(parser)
    argv = sys.argv[1:] if argv is None else argv
    args = parser.parse_args(argv)
    budgets = [int(x) for x in (args.budgets or ("200,600" if args.quick else "1000,4000,16000,20000")).split(",")]
    ones = ",".join("1" for _ in budgets)
    repeats = [int(x) for x in (args.repeats or (ones if args.quick else "7,5,3,3")).split(",")]
    ref_repeats = [int(x) for x in (args.ref_repeats or (ones if args.quick else "3,1,1,1")).split(",")]
    if not (len(budgets) == len(repeats) == len(ref_repeats)) or min(budgets) < 100:
        parser.error("--budgets, --repeats and --ref-repeats need one entry per budget; budgets >= 100")
    snapshot_every = 100 if args.quick else 1000
    env, monitor = _bench.environment(), _bench.LoadMonitor()
    for engine in ("gepa-lab", "gepa"):  # warm-up: first-call imports are not charged to the smallest budget
        one_run(engine, 100, args.seed, 0)

    runs: list[dict[str, Any]] = []
    for r in range(max(repeats + ref_repeats)):  # interleaved: budgets and engines share the noise
        for budget, n_lab, n_ref in zip(budgets, repeats, ref_repeats, strict=True):
            for engine, n in (("gepa-lab", n_lab), ("gepa", n_ref)):
                if r < n:
                    runs.append({**one_run(engine, budget, args.seed, snapshot_every), "repeat": r + 1})
                    print(f"{engine:>8} {budget:>6} calls (repeat {r + 1}): harness "
                          f"{runs[-1]['harness_ms_per_call']:.3f} ms/call, wall {runs[-1]['wall_s']:.1f} s", flush=True)
    load = monitor.stop()

    def med(engine: str, budget: int, key: str) -> float:
        return _bench.median(x[key] for x in runs if x["engine"] == engine and x["budget"] == budget)

    small, large = budgets[0], budgets[-1]
    growth = {e: med(e, large, "harness_ms_per_call") / med(e, small, "harness_ms_per_call") for e in ("gepa-lab", "gepa")}
    met = growth["gepa-lab"] <= TARGET
    paired = [(x["harness_ms_per_call"], y["harness_ms_per_call"]) for x in runs for y in runs
              if x["engine"] == y["engine"] == "gepa-lab" and x["repeat"] == y["repeat"] and x["budget"] == large
              and y["budget"] == small]
    biggest = [max((x for x in runs if x["engine"] == e and x["budget"] == large), key=lambda x: x["repeat"])
               for e in ("gepa-lab", "gepa")]
    window_rows = [w for run in biggest for w in windows(run)]

    lines = _bench.header(
        "Harness cost per metric call as a run grows: gepa-lab vs reference gepa", env,
        _bench.command_line("scaling.py", argv), load,
        [f"task: SkillCraft-sim `{FAMILY}` (20 feedback / 20 validation / 20 holdout cases), offline "
         f"`FeedbackReflector(seed={args.seed})`, default search settings (k = 1, minibatch 3, Pareto parents), "
         f"random seed {args.seed} for every run (repeats measure timing noise, not search variance)",
         "run record on: gepa-lab `optimize(..., run_dir=...)` (experiment.json, evaluations.jsonl, events.jsonl; "
         "no MLflow); the reference `gepa.optimize(..., run_dir=...)` with the same evaluator (an adapter) and "
         "reflector (its `reflection_strategy`), a budget stopper that never exceeds the budget, a silent logger",
         "budget = the run's metric calls: gepa-lab's includes its holdout comparison (2 x 20 calls)",
         "harness time = wall time - time inside the evaluator - time inside the reflector, per metric call; "
         "medians over repeats (gepa-lab " + ", ".join(f"{n}x@{b}" for b, n in zip(budgets, repeats, strict=True))
         + "; reference " + ", ".join(f"{n}x@{b}" for b, n in zip(budgets, ref_repeats, strict=True))
         + "; the reference is slow at large budgets, hence fewer repeats); one untimed warm-up run per engine first"
         + (" — QUICK MODE: a smoke test, not a measurement" if args.quick else "")])
    lines += ["## Per run", "", *_bench.md_table(
        ("budget", "gepa-lab harness ms/call", "gepa-lab ms/proposal", "gepa-lab proposals / accepted",
         "reference harness ms/call", "reference ms/proposal", "reference proposals / accepted", "lab / reference",
         "evaluator ms/call (gepa-lab runs)"),
        ([f"{b:,}", *[x for e in ("gepa-lab", "gepa") for x in (
            f"{med(e, b, 'harness_ms_per_call'):.3f} ({med(e, b, 'harness_ms_per_call') / med(e, small, 'harness_ms_per_call'):.2f}x)",
            f"{med(e, b, 'harness_ms_per_proposal'):.2f}", f"{med(e, b, 'proposals'):.0f} / {med(e, b, 'accepted'):.0f}")],
          f"{med('gepa-lab', b, 'harness_ms_per_call') / med('gepa', b, 'harness_ms_per_call'):.2f}",
          f"{med('gepa-lab', b, 'evaluator_ms_per_call'):.3f}"] for b in budgets)),
        "", f"(x) = relative to the same engine at {small:,} calls. The evaluator column is the simulator's own time "
        "per call in the gepa-lab runs: the same kind of work at every budget, so when it moves the machine's speed "
        "moved too (shared machine).", "",
        "gepa-lab at " + f"{large:,} / {small:,} calls, per repeat (runs of the same repeat ran minutes apart, "
        "repeats further apart): " + ", ".join(f"{a / b:.2f}x" for a, b in paired) + ".", "",
        f"**Target** (gepa-lab at {large:,} calls <= {TARGET}x its per-call harness time at {small:,}): "
        f"{growth['gepa-lab']:.2f}x — **{'met' if met else 'MISSED'}**. The reference on the same task: "
        f"{growth['gepa']:.2f}x.", ""]
    by_end = {(w["engine"], w["window_end_calls"] // snapshot_every): w["harness_ms_per_call"] for w in window_rows}
    lines += [f"## The curve inside the {large:,}-call run (one run per engine, windows of {snapshot_every:,} calls)",
              "", *_bench.md_table(("calls so far", "gepa-lab harness ms/call in the window",
                                    "reference harness ms/call in the window"),
                                   ([f"{n * snapshot_every:,}", *[f"{by_end[(e, n)]:.3f}" if (e, n) in by_end else "n/a"
                                                                 for e in ("gepa-lab", "gepa")]]
                                    for n in sorted({k[1] for k in by_end}))),
              "", "A window's figure is the marginal cost of those calls (no start-up or finish costs).", "",
              "## Reading it", "",
              "- Per-run harness time per call mixes what one proposal costs the harness and how many metric calls "
              "a proposal buys: late in a run most children are rejected at the minibatch (6 calls) instead of "
              "accepted (6 + 20 calls), so a constant per-proposal cost shows up as a rising per-call cost; the "
              "ms/proposal column separates the two.",
              "- The reference re-pickles its whole state before every iteration, so its per-call cost grows with "
              "the run (the window column); gepa-lab appends to its JSON-lines record.", ""]
    if args.profile or (not met and not args.quick):
        lines += ["## Profile (gepa-lab)", "", *profile_growth(small, large, args.seed)]
    rows = [{k: v for k, v in run.items() if k not in ("snapshots", "started")} for run in runs] + window_rows
    _bench.write_outputs("scaling", args, "\n".join(lines), rows, CSV_COLUMNS, env)


if __name__ == "__main__":
    main()
