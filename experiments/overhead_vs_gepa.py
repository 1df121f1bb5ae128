"""Engine overhead per metric call: gepa-lab vs the reference `gepa.optimize`, in one process.

usage: python experiments/overhead_vs_gepa.py [--repeats 7] [--calls 2000] [--scenarios reject,mixed,accept]
                                              [--quick] [--out-dir DIR]
Writes experiments/reports/overhead_vs_gepa.{md,csv} (--quick: a new temporary folder). The task
is near-free (a pure scoring function and a reflector that appends a marker), so the time measured
is the engines' own cost. Runs are interleaved, their order alternating (gepa, gepa-lab, gepa-lab
batched; then gepa-lab batched, gepa-lab, gepa; ...) so all sides share the machine's noise. The performance rule: gepa-lab's ms per metric call <= 1.0x
the reference's, in memory and with the run record. A row that misses gets a cProfile of one
gepa-lab run in that mode in the report.
"""

from __future__ import annotations

import argparse
import cProfile
import logging
import pstats
import statistics
import sys
import tempfile
import time
import zlib
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT), str(ROOT / "experiments")]

import _bench  # noqa: E402
import gepa  # noqa: E402
from gepa.core.adapter import EvaluationBatch  # noqa: E402

from gepa_lab import Case, Dataset, Evaluation, PromptArtifact, SearchConfig, optimize  # noqa: E402

TARGET = 1.0
N_FEEDBACK = N_VALIDATION = 20
Score = Callable[[str, str], float]


def _constant(text: str, case_id: str) -> float:
    return 0.5


def _hashed(text: str, case_id: str) -> float:
    return zlib.crc32(f"{text}\x00{case_id}".encode()) / 0xFFFFFFFF


def _longer_is_better(text: str, case_id: str) -> float:
    return 1.0 - 1.0 / (len(text) + 1)


SCENARIOS: dict[str, tuple[Score, str]] = {
    "reject": (_constant, "every case scores 0.5 for every candidate, so a child ties its parent and is never "
                          "accepted: only selection, minibatch, reflection and the rejection path run."),
    "mixed": (_hashed, "score = crc32(candidate text, case id) scaled to [0, 1]: some children win the minibatch "
                       "(then pay 20 validation calls and join the pool) and others lose."),
    "accept": (_longer_is_better, "score = 1 - 1/(len(text)+1): the reflector always lengthens the text, so every "
                                  "child beats its parent and is validated and added to the pool."),
}


# ---------------------------------------------------------------- reference side (gepa public API only)

class NoOpAdapter:
    """Minimal GEPAAdapter: data instances are case ids; the score is `score(candidate text, case id)`."""

    propose_new_texts = None

    def __init__(self, score: Score) -> None:
        self.score = score

    def evaluate(self, batch: list[str], candidate: dict[str, str], capture_traces: bool = False) -> EvaluationBatch:
        text = candidate["text"]
        return EvaluationBatch(outputs=[""] * len(batch), scores=[self.score(text, c) for c in batch],
                               trajectories=list(batch) if capture_traces else None)

    def make_reflective_dataset(self, candidate: dict[str, str], eval_batch: EvaluationBatch,
                                components_to_update: list[str]) -> dict[str, list[dict[str, Any]]]:
        rows = [{"Inputs": case_id, "Generated Outputs": "", "Feedback": f"score {score}"}
                for case_id, score in zip(eval_batch.trajectories or [], eval_batch.scores, strict=False)]
        return {name: rows for name in components_to_update}


class CounterProposer:
    """`custom_candidate_proposer`: appends a counter marker. At k = 1 it is the reference's cheapest
    proposal path (a `reflection_strategy` object measured slower per call here)."""

    def __init__(self) -> None:
        self.calls = 0

    def __call__(self, candidate: dict[str, str], reflective_dataset: Any,
                 components_to_update: list[str]) -> dict[str, str]:
        self.calls += 1
        return {name: candidate[name] + f" r{self.calls}" for name in components_to_update}


def run_gepa(score: Score, calls: int, seed: int, record: bool) -> dict[str, float]:
    adapter, proposer = NoOpAdapter(score), CounterProposer()
    with tempfile.TemporaryDirectory() as tmp:
        started, cpu = time.perf_counter(), time.thread_time()
        result = gepa.optimize(
            seed_candidate={"text": "seed"}, trainset=[f"fb-{i}" for i in range(N_FEEDBACK)],
            valset=[f"val-{i}" for i in range(N_VALIDATION)], adapter=adapter, custom_candidate_proposer=proposer,
            reflection_minibatch_size=3, max_metric_calls=calls, skip_perfect_score=False, seed=seed,
            track_best_outputs=False, display_progress_bar=False, logger=_bench.SilentLogger(),
            run_dir=tmp if record else None)
        wall, cpu = time.perf_counter() - started, time.thread_time() - cpu
    return {"wall": wall, "cpu": cpu, "calls": float(result.total_metric_calls or 0), "iterations": float(proposer.calls),
            "accepted": float(len(result.candidates) - 1)}


# ---------------------------------------------------------------- gepa-lab side (top-level names only)

class NoOpEvaluator:
    def __init__(self, score: Score) -> None:
        self.score = score

    def evaluate(self, artifact: PromptArtifact, cases: list[Case], seed: int) -> list[Evaluation]:
        return [Evaluation(case.id, self.score(artifact.text, case.id)) for case in cases]


class BatchNoOpEvaluator(NoOpEvaluator):
    """The same scores, one call per batch (as the reference adapter's `evaluate`)."""

    evaluates_batches = True


class CounterReflector:
    def __init__(self) -> None:
        self.calls = 0

    def reflect(self, artifact: PromptArtifact, component: str, records: list[dict[str, Any]]) -> dict:
        self.calls += 1
        return {"text": artifact.text + f" r{self.calls}"}


def run_lab(score: Score, calls: int, seed: int, record: bool, batched: bool = False) -> dict[str, float]:
    evaluator = BatchNoOpEvaluator(score) if batched else NoOpEvaluator(score)
    dataset = Dataset("bench", "1", [Case(f"fb-{i}", f"feedback case {i}") for i in range(N_FEEDBACK)],
                      [Case(f"val-{i}", f"validation case {i}") for i in range(N_VALIDATION)], [])
    reflector = CounterReflector()
    config = SearchConfig(max_iterations=10**9, max_metric_calls=calls, random_seed=seed)
    with tempfile.TemporaryDirectory() as tmp:
        started, cpu = time.perf_counter(), time.thread_time()
        result = optimize(PromptArtifact("seed"), dataset, evaluator, reflector, config,
                          run_dir=Path(tmp) / "run" if record else None)
        wall, cpu = time.perf_counter() - started, time.thread_time() - cpu
    return {"wall": wall, "cpu": cpu, "calls": float(result.metric_calls), "iterations": float(reflector.calls),
            "accepted": float(result.candidate_count - 1)}


# ---------------------------------------------------------------- measurement

SIDES: dict[str, Callable[..., dict[str, float]]] = {
    "gepa": run_gepa, "lab": run_lab, "lab_batched": lambda *a: run_lab(*a, batched=True)}


def measure(scenario: str, record: bool, repeats: int, calls: int) -> dict[str, Any]:
    score = SCENARIOS[scenario][0]
    runs: dict[str, list[dict[str, float]]] = {side: [] for side in SIDES}
    for r in range(repeats):  # the order alternates: gepa first in even repeats, last in odd ones
        for side in (list(SIDES) if r % 2 == 0 else list(SIDES)[::-1]):
            runs[side].append(SIDES[side](score, calls, r + 1, record))
    row: dict[str, Any] = {"scenario": scenario, "mode": "run record" if record else "in memory"}
    for side, side_runs in runs.items():
        per_call = [x["wall"] / x["calls"] * 1e3 for x in side_runs]
        cpu = [x["cpu"] / x["calls"] * 1e3 for x in side_runs]
        row[side] = {"ms": statistics.median(per_call), "min": min(per_call), "max": max(per_call), "all": per_call,
                     "cpu_ms": statistics.median(cpu),
                     **{k: statistics.median(x[k] for x in side_runs) for k in ("wall", "calls", "iterations",
                                                                                 "accepted")}}
    paired = [b / a for a, b in zip(row["gepa"]["all"], row["lab"]["all"], strict=True)]
    row.update(ratio=row["lab"]["ms"] / row["gepa"]["ms"], ratio_batched=row["lab_batched"]["ms"] / row["gepa"]["ms"],
               paired_min=min(paired), paired_max=max(paired), cpu_ratio=row["lab"]["cpu_ms"] / row["gepa"]["cpu_ms"])
    row["verdict"] = "PASS" if row["ratio"] <= TARGET else "MISS"
    print(f"{scenario:>7} {row['mode']:>10}: gepa {row['gepa']['ms']:.3f} ms/call, gepa-lab {row['lab']['ms']:.3f} "
          f"ms/call, ratio {row['ratio']:.2f} {row['verdict']} (CPU {row['cpu_ratio']:.2f})", flush=True)
    return row


def profile_text(scenario: str, calls: int, record: bool, top: int = 15) -> list[str]:
    """cProfile of one gepa-lab run: the top functions by own time, in ms per metric call."""
    profiler = cProfile.Profile()
    profiler.enable()
    run = run_lab(SCENARIOS[scenario][0], calls, 1, record=record)
    profiler.disable()
    stats = pstats.Stats(profiler).stats  # type: ignore[attr-defined]
    rows = sorted(stats.items(), key=lambda kv: kv[1][2], reverse=True)[:top]
    return [f"cProfile of one gepa-lab run, `{scenario}`, {'run record' if record else 'in memory'}: "
            f"{run['calls']:.0f} metric calls, {run['iterations']:.0f} iterations, profiled wall {run['wall']:.2f} s "
            "(profiling inflates every figure; compare rows, not absolute values).", "",
            *_bench.md_table(("function", "calls", "own ms / metric call", "cumulative ms / metric call"),
                             ([f"`{'/'.join(Path(path).parts[-2:]) if path != '~' else 'builtin'}:{line}({name})`",
                               ncalls, f"{tottime / run['calls'] * 1e3:.4f}", f"{cumtime / run['calls'] * 1e3:.4f}"]
                              for (path, line, name), (_, ncalls, tottime, cumtime, _) in rows)), ""]


CSV_COLUMNS = ("scenario", "mode", "calls_budget", "repeats", "gepa_ms_per_call", "gepa_ms_min", "gepa_ms_max",
               "lab_ms_per_call", "lab_ms_min", "lab_ms_max", "ratio_lab_over_gepa", "paired_ratio_min",
               "paired_ratio_max", "target", "verdict", "lab_batched_ms_per_call", "ratio_batched_over_gepa",
               "gepa_calls", "lab_calls", "gepa_iterations", "lab_iterations", "gepa_accepted", "lab_accepted",
               "gepa_cpu_ms_per_call", "lab_cpu_ms_per_call", "cpu_ratio_lab_over_gepa")


def csv_rows(rows: list[dict[str, Any]], args: argparse.Namespace) -> list[dict[str, Any]]:
    return [{"scenario": r["scenario"], "mode": r["mode"], "calls_budget": args.calls, "repeats": args.repeats,
             "gepa_ms_per_call": r["gepa"]["ms"], "gepa_ms_min": r["gepa"]["min"], "gepa_ms_max": r["gepa"]["max"],
             "lab_ms_per_call": r["lab"]["ms"], "lab_ms_min": r["lab"]["min"], "lab_ms_max": r["lab"]["max"],
             "ratio_lab_over_gepa": r["ratio"], "paired_ratio_min": r["paired_min"], "paired_ratio_max": r["paired_max"],
             "target": TARGET, "verdict": r["verdict"], "lab_batched_ms_per_call": r["lab_batched"]["ms"],
             "ratio_batched_over_gepa": r["ratio_batched"], "gepa_calls": r["gepa"]["calls"],
             "lab_calls": r["lab"]["calls"], "gepa_iterations": r["gepa"]["iterations"],
             "lab_iterations": r["lab"]["iterations"], "gepa_accepted": r["gepa"]["accepted"],
             "lab_accepted": r["lab"]["accepted"], "gepa_cpu_ms_per_call": r["gepa"]["cpu_ms"],
             "lab_cpu_ms_per_call": r["lab"]["cpu_ms"], "cpu_ratio_lab_over_gepa": r["cpu_ratio"]} for r in rows]


def report(rows: list[dict[str, Any]], args: argparse.Namespace, argv: list[str], env: dict[str, str],
           load: str, profiles: list[str]) -> str:
    lines = _bench.header(
        "Engine overhead per metric call: gepa-lab vs reference gepa", env,
        _bench.command_line("overhead_vs_gepa.py", argv), load,
        [f"budget {args.calls} metric calls per run; {N_FEEDBACK} feedback/train and {N_VALIDATION} validation "
         f"cases, no holdout; minibatch 3; median of {args.repeats} repeats (seed = repeat, the same for all "
         "sides), runs interleaved in alternating order (gepa, gepa-lab, gepa-lab batched; then the reverse) "
         "after one untimed warm-up run per side and mode" + (" — QUICK MODE: a smoke test, not a measurement" if args.quick else ""),
         "ms/call = wall time of the whole `optimize` call / the metric calls the engine reports. Evaluator and "
         f"reflector cost next to nothing here, so ms/call is the harness's own cost. Rule: gepa-lab <= {TARGET:g}x "
         "the reference, in memory and with the run record. The CPU column is the same call's CPU time in its "
         "thread (both engines run the no-op task in one thread): on a shared machine it moves less with the load"])
    lines += ["## Scenarios", "", "Both sides score with the same pure function of (candidate text, case id); the "
              "reflector appends a counter marker, so every child is new.", "",
              *[f"- `{name}`: {SCENARIOS[name][1]}" for name in args.scenarios], ""]
    lines += ["## Results", "", *_bench.md_table(
        ("scenario", "mode", "gepa ms/call (min–max)", "gepa-lab ms/call (min–max)",
         "ratio lab/gepa (paired min–max)", "rule", "verdict", "CPU ms/call gepa / gepa-lab (ratio)"),
        ([r["scenario"], r["mode"], f"{r['gepa']['ms']:.3f} ({r['gepa']['min']:.3f}–{r['gepa']['max']:.3f})",
          f"{r['lab']['ms']:.3f} ({r['lab']['min']:.3f}–{r['lab']['max']:.3f})",
          f"{r['ratio']:.2f} ({r['paired_min']:.2f}–{r['paired_max']:.2f})", f"<= {TARGET:g}", r["verdict"],
          f"{r['gepa']['cpu_ms']:.3f} / {r['lab']['cpu_ms']:.3f} ({r['cpu_ratio']:.2f})"] for r in rows)), ""]
    misses = [r for r in rows if r["verdict"] == "MISS"]
    lines += ["Verdict: " + ("every row meets the rule." if not misses else "gepa-lab misses the rule in " + "; ".join(
        f"{r['scenario']} / {r['mode']} ({r['ratio']:.2f}x, {r['lab']['ms'] - r['gepa']['ms']:+.3f} ms/call)"
        for r in misses) + "."), ""]
    lines += ["Supplement: gepa-lab with an evaluator that declares `evaluates_batches = True` (one evaluator call "
              "per minibatch or validation pass, as the reference's adapter makes) instead of one call per case:", "",
              *_bench.md_table(("scenario", "mode", "gepa-lab batched ms/call (min–max)", "ratio batched/gepa",
                                "ratio per-case/gepa"),
                               ([r["scenario"], r["mode"], f"{r['lab_batched']['ms']:.3f} ({r['lab_batched']['min']:.3f}"
                                 f"–{r['lab_batched']['max']:.3f})", f"{r['ratio_batched']:.2f}", f"{r['ratio']:.2f}"]
                                for r in rows)), ""]
    lines += ["Work done per run (medians; iterations = proposals; accepted = candidates added besides the seed):", "",
              *_bench.md_table(("scenario", "mode", "gepa calls / iterations / accepted",
                                "gepa-lab calls / iterations / accepted"),
                               ([r["scenario"], r["mode"], *[f"{r[s]['calls']:.0f} / {r[s]['iterations']:.0f} / "
                                                             f"{r[s]['accepted']:.0f}" for s in ("gepa", "lab")]]
                                for r in rows)), ""]
    lines += ["## What is and is not compared", "",
              "Both engines run the same GEPA loop on the same cases with the same scoring function: Pareto parents, "
              "a minibatch of 3 feedback cases, parent and child scored on it, strict improvement to accept, then a "
              "full validation pass and a pool update. The reference runs through its public API with its cheapest "
              "settings (`custom_candidate_proposer`, no merge, `skip_perfect_score=False`, "
              "`track_best_outputs=False`, no progress bar, a silent logger). gepa-lab also checks every evaluator "
              "reply against the contract, builds size-bounded, redacted reflection records, validates each child "
              "and computes content ids, and ends with its promotion decision (no holdout here). \"Run record\": "
              "gepa-lab writes `experiment.json`, `evaluations.jsonl` (every scored case; the cache) and "
              "`events.jsonl` (proposals, candidates, round ends); the reference pickles its whole `GEPAState` "
              "before every iteration and writes `candidate_tree.html` on every accepted candidate. The two records "
              "share a purpose (resumable, inspectable runs), not their content. Not compared: real evaluator or LM "
              "cost (zero here by design, so the ratios are far from what a real task shows), parallelism, "
              "tracking back-ends, merge.", ""]
    if profiles:
        lines += ["## Where gepa-lab's time goes in the rows that miss", "", *profiles]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=None, help="default 7 (quick: 1)")
    parser.add_argument("--calls", type=int, default=None, help="default 2000 (quick: 300)")
    parser.add_argument("--scenarios", default=None, help=f"subset of {','.join(SCENARIOS)} (default all; quick: mixed)")
    _bench.add_common_args(parser)
    argv = sys.argv[1:] if argv is None else argv
    args = parser.parse_args(argv)
    args.repeats = args.repeats or (1 if args.quick else 7)
    args.calls = args.calls or (300 if args.quick else 2000)
    args.scenarios = [s for s in (args.scenarios or ("mixed" if args.quick else ",".join(SCENARIOS))).split(",") if s]
    if set(args.scenarios) - set(SCENARIOS) or args.repeats < 1 or args.calls < 1:
        parser.error(f"--scenarios must be a subset of {sorted(SCENARIOS)}; --repeats and --calls positive")
    logging.getLogger("gepa_lab").setLevel(logging.ERROR)  # the no-holdout warning, once per run, like the silent logger
    env, monitor = _bench.environment(), _bench.LoadMonitor()
    for record in (False, True):  # warm-up: first-call imports and caches are not charged
        for fn in SIDES.values():
            fn(_hashed, 200, 0, record)
    rows = [measure(s, record, args.repeats, args.calls) for s in args.scenarios for record in (False, True)]
    load = monitor.stop()
    profiles = [] if args.quick else [line for r in rows if r["verdict"] == "MISS"
                                      for line in profile_text(r["scenario"], args.calls, r["mode"] == "run record")]
    _bench.write_outputs("overhead_vs_gepa", args, report(rows, args, argv, env, load, profiles), csv_rows(rows, args),
                         CSV_COLUMNS, env)


if __name__ == "__main__":
    main()
