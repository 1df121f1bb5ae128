"""gepa-lab's DSPy teleprompter beside dspy.GEPA: same program, metric, data and stub LM.

The task (experiments/dspy_task.py): a two-predictor program (a ChainOfThought that extracts a
fact, a Predict that answers) with dspy.GEPA's per-predictor feedback metric, 10 train / 10 val /
10 holdout examples, and the loopback stub (tests/stub_llm.py) answering every request after a
fixed latency (default 20 ms) as the task model and as the reflection model.

Both sides get the same metric-call budget and the same threads. dspy.GEPA searches with
`max_metric_calls=B`, then its best program and the seed are scored on the holdout examples
(2 x 10 calls, inside its wall time); gepa-lab gets `max_metric_calls=B + 20` because its budget
includes that holdout comparison. Reported per side (median over repeats, sides alternating):
wall time, metric calls (program-level metric calls, counted in the metric), LM requests, the
holdout score of the seed and of the returned program, and the CPU time of the process (less
sensitive than wall time to a machine shared with other jobs). The targets (issue 23): gepa-lab's wall
time <= 1.5 x dspy.GEPA's, its holdout gain no worse. gepa-lab runs without MLflow (as dspy.GEPA
does by default); one extra row shows the same run with its MLflow record (a SQLite store that
already exists).

With `--auto light` (or medium, heavy) both optimizers get that budget preset instead of a budget
and otherwise their defaults, each run in a new, empty working directory (gepa-lab's run record
goes under $XDG_CACHE_HOME, pointed at a temporary directory); the report says whether each run
left its working directory empty (target, issue 34: empty, wall time <= 1.2 x dspy.GEPA's).

    python experiments/dspy_vs_gepa.py [--budget 156] [--repeats 3] [--latency-ms 20] [--auto light] [--quick]
"""

from __future__ import annotations

import argparse
import contextlib
import os
import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
import _bench  # noqa: E402,I001  (puts the repo root on sys.path)

sys.path.insert(0, str(_bench.ROOT / "tests"))
import dspy  # noqa: E402
import dspy_task  # noqa: E402
from stub_llm import StubLLM  # noqa: E402

from gepa_lab.dspy import GEPA  # noqa: E402

COLUMNS = ["engine", "repeat", "budget", "auto", "threads", "latency_ms", "wall_s", "compile_s", "cpu_s", "metric_calls",
           "lm_requests", "reflection_requests", "holdout_seed", "holdout_returned", "holdout_gain", "eligible",
           "cwd_left_empty"]


class Counted:
    """The task's metric, counting program-level calls (per-predictor feedback calls are not
    metric calls on either side)."""

    def __init__(self) -> None:
        self.calls = 0
        self._lock = threading.Lock()  # both optimizers call the metric from worker threads

    def __call__(self, gold: Any, pred: Any, trace: Any = None, pred_name: str | None = None,
                 pred_trace: Any = None) -> Any:
        if pred_name is None:
            with self._lock:
                self.calls += 1
        return dspy_task.metric(gold, pred, trace, pred_name, pred_trace)


def examples(per_split: int) -> dict[str, list[Any]]:
    return {k: [dspy.Example(**r).with_inputs("passage", "question") for r in v]
            for k, v in dspy_task.splits(per_split).items()}


def holdout_score(program: Any, holdout: list[Any], threads: int) -> float:
    scores = dspy.Evaluate(devset=holdout, metric=lambda g, p, t=None: dspy_task.metric(g, p).score,
                           num_threads=threads, display_progress=False, provide_traceback=False)(program)
    return float(scores.score) / 100.0


def run_dspy(stub: StubLLM, data: dict[str, list[Any]], budget: int, threads: int, auto: str | None) -> dict[str, Any]:
    metric = Counted()
    task, reflect = lms(stub)
    start = time.perf_counter()
    with dspy.context(lm=task):
        optimizer = dspy.GEPA(metric=metric, reflection_lm=reflect, num_threads=threads, seed=0,
                              **({"auto": auto} if auto else {"max_metric_calls": budget}))
        best = optimizer.compile(dspy_task.make_program(), trainset=data["train"], valset=data["val"])
        compile_s = time.perf_counter() - start
        seed_score = holdout_score(dspy_task.make_program(), data["holdout"], threads)
        best_score = holdout_score(best, data["holdout"], threads)
    wall = time.perf_counter() - start
    return {"wall_s": wall, "compile_s": compile_s, "metric_calls": metric.calls + 2 * len(data["holdout"]),
            "holdout_seed": seed_score, "holdout_returned": best_score, "eligible": None}


def run_lab(stub: StubLLM, data: dict[str, list[Any]], budget: int, threads: int, mlflow_uri: str | None,
            auto: str | None) -> dict[str, Any]:
    metric = Counted()
    task, reflect = lms(stub)
    with tempfile.TemporaryDirectory() as tmp:
        # --auto: the defaults (record under the cache directory, MLflow only with a URI, progress auto)
        settings = ({"auto": auto} if auto else {"max_metric_calls": budget + 2 * len(data["holdout"]),
                                                  "run_dir": Path(tmp) / "run", "progress": "off"})
        start = time.perf_counter()
        optimizer = GEPA(metric=metric, reflection_lm=reflect, task_lm=task, num_threads=threads, seed=0,
                         tracking_uri=mlflow_uri, return_winner_if_not_eligible=True, **settings)
        program = optimizer.compile(dspy_task.make_program(), trainset=data["train"], valset=data["val"],
                                    holdoutset=data["holdout"])
        wall = time.perf_counter() - start
    result = program.decision.result
    return {"wall_s": wall, "compile_s": wall, "metric_calls": metric.calls, "holdout_seed": result.baseline_holdout.score,
            "holdout_returned": result.candidate_holdout.score, "eligible": program.decision.eligible}


def lms(stub: StubLLM) -> tuple[Any, Any]:
    return (dspy.LM("openai/stub-task", api_base=stub.url, api_key="stub", cache=False),
            dspy.LM("openai/stub-reflect", api_base=stub.url, api_key="stub", cache=False))


@contextlib.contextmanager
def empty_cwd() -> Any:
    """A new, empty working directory (and cache directory) for one run; yields its path."""
    with tempfile.TemporaryDirectory() as tmp:
        work, before = Path(tmp) / "work", (os.getcwd(), os.environ.get("XDG_CACHE_HOME"))
        work.mkdir()
        os.chdir(work)
        os.environ["XDG_CACHE_HOME"] = str(Path(tmp) / "cache")
        try:
            yield work
        finally:
            os.chdir(before[0])
            os.environ.pop("XDG_CACHE_HOME") if before[1] is None else os.environ.update(XDG_CACHE_HOME=before[1])


def measure(engine: str, repeat: int, args: argparse.Namespace, data: dict[str, list[Any]],
            mlflow_uri: str | None) -> dict[str, Any]:
    with StubLLM(dspy_task.respond, latency_s=args.latency_ms / 1000.0) as stub, empty_cwd() as work:
        cpu = time.process_time()  # this process's CPU, all threads (the stub's own serving included)
        if engine == "dspy.GEPA":
            row = run_dspy(stub, data, args.budget, args.threads, args.auto)
        else:
            row = run_lab(stub, data, args.budget, args.threads, mlflow_uri, args.auto)
        row["cpu_s"] = time.process_time() - cpu
        row["cwd_left_empty"] = not any(work.iterdir())
        requests = list(stub.requests)
    reflection = [r for r in requests if r.model.endswith("stub-reflect")]
    return {"engine": engine, "repeat": repeat, "budget": args.budget, "auto": args.auto, "threads": args.threads,
            "latency_ms": args.latency_ms, **row, "lm_requests": len(requests),
            "reflection_requests": len(reflection), "holdout_gain": row["holdout_returned"] - row["holdout_seed"]}


def table(rows: list[dict[str, Any]]) -> list[str]:
    engines = list(dict.fromkeys(r["engine"] for r in rows))
    base = statistics.median(r["wall_s"] for r in rows if r["engine"] == "dspy.GEPA")
    cpu_base = statistics.median(r["cpu_s"] for r in rows if r["engine"] == "dspy.GEPA")
    out = ["| engine | wall s (median) | ratio to dspy.GEPA | compile s (median) | CPU s (ratio) | metric calls | "
           "LM requests | reflections | holdout seed -> returned | gain | eligible | working dir left empty |",
           "|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for engine in engines:
        mine = [r for r in rows if r["engine"] == engine]
        wall = statistics.median(r["wall_s"] for r in mine)
        first = mine[0]
        walls = ", ".join(f"{r['wall_s']:.2f}" for r in mine)
        cpu = statistics.median(r["cpu_s"] for r in mine)
        compile_s = statistics.median(r["compile_s"] for r in mine)
        empty = "yes" if all(r["cwd_left_empty"] for r in mine) else "NO"
        out.append(f"| {engine} | {wall:.2f} ({walls}) | {wall / base:.2f}x | {compile_s:.2f} | "
                   f"{cpu:.2f} ({cpu / cpu_base:.2f}x) | "
                   f"{first['metric_calls']} | "
                   f"{first['lm_requests']} | {first['reflection_requests']} | {first['holdout_seed']:.3f} -> "
                   f"{first['holdout_returned']:.3f} | {first['holdout_gain']:+.3f} | "
                   f"{'-' if first['eligible'] is None else first['eligible']} | {empty} |")
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--budget", type=int, default=156, help="dspy.GEPA's max_metric_calls (search)")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--threads", type=int, default=8, help="num_threads of both optimizers")
    parser.add_argument("--latency-ms", type=float, default=20.0, help="the stub's answer latency")
    parser.add_argument("--per-split", type=int, default=10)
    parser.add_argument("--auto", choices=["light", "medium", "heavy"], default=None,
                        help="both optimizers get this budget preset (not --budget) and their other defaults")
    parser.add_argument("--name", default="dspy_vs_gepa", help="report file name (without .md / .csv)")
    parser.add_argument("--note", default=None, help="a line the report states (e.g. an engine variant)")
    _bench.add_common_args(parser)
    args = parser.parse_args(argv)
    if args.quick:
        args.budget, args.repeats, args.per_split = 40, 1, 4
    env, monitor = _bench.environment(), _bench.LoadMonitor()
    data = examples(args.per_split)
    rows: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory() as tmp:
        uri = f"sqlite:///{tmp}/mlflow.db"
        with StubLLM(dspy_task.respond) as stub:  # warm-up: imports, the MLflow store
            run_lab(stub, examples(2), 30, 2, uri, None)
        for repeat in range(args.repeats):
            order = ["dspy.GEPA", "gepa-lab"] if repeat % 2 == 0 else ["gepa-lab", "dspy.GEPA"]
            for engine in order:
                rows.append(measure(engine, repeat, args, data, None))
            rows.append(measure("gepa-lab + MLflow", repeat, args, data, uri))
    load = monitor.stop()
    lab = statistics.median(r["wall_s"] for r in rows if r["engine"] == "gepa-lab")
    ref = statistics.median(r["wall_s"] for r in rows if r["engine"] == "dspy.GEPA")
    gain = {e: statistics.median(r["holdout_gain"] for r in rows if r["engine"] == e) for e in ("gepa-lab", "dspy.GEPA")}
    target = 1.2 if args.auto else 1.5  # issue 34 (the defaults, in an empty directory); issue 23
    walls = {(r["engine"], r["repeat"]): r["wall_s"] for r in rows}
    ratios = [walls["gepa-lab", k] / walls["dspy.GEPA", k] for k in range(args.repeats)]
    low, high = _bench.interval(ratios)
    verdict = (f"gepa-lab / dspy.GEPA wall time {lab / ref:.2f}x (ratio of medians; per-repeat ratio mean "
               f"{statistics.fmean(ratios):.2f} [95% CI {low:.2f}, {high:.2f}]; target <= {target}x: "
               f"{'met' if lab <= target * ref else 'NOT met'}); holdout gain {gain['gepa-lab']:+.3f} vs "
               f"{gain['dspy.GEPA']:+.3f} ({'no worse' if gain['gepa-lab'] >= gain['dspy.GEPA'] else 'WORSE'})")
    lines = _bench.header("gepa-lab's DSPy teleprompter vs dspy.GEPA", env,
                          _bench.command_line("dspy_vs_gepa.py", argv if argv is not None else sys.argv[1:]), load,
                          [f"dspy {dspy.__version__}; stub latency {args.latency_ms:g} ms per request; "
                           f"{args.threads} threads each; budget "
                           + (f"auto={args.auto} on both sides (dspy.GEPA's auto_budget)" if args.auto
                              else f"{args.budget} search calls") + f" (+ {2 * args.per_split} holdout calls on both "
                           "sides); every run in a new, empty working directory", *([args.note] if args.note else [])])
    if args.quick:
        lines += ["**QUICK MODE: smoke numbers, not measurements.**", ""]
    lines += ["## Result", "", verdict, "", *table(rows), ""]
    _bench.write_outputs(args.name, args, "\n".join(lines), rows, COLUMNS, env)
    print(verdict)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
