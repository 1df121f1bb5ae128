"""What MLflow tracking costs a run, and how long the engine waits for it.

Two targets (issue 22), measured on the default recipe run (`python -m gepa_lab experiment=recipe`,
SkillCraft-sim, the CLI as a researcher runs it):

1. SQLite: the run with MLflow on a local SQLite store takes <= 1.5x the wall time of the same run
   with `tracking=none`. Timed for a store that already exists (every run after a researcher's
   first) and for a new store (the first run, which also creates MLflow's tables). Runs of the
   three kinds are interleaved; medians.
2. REST: against a local `mlflow server` (SQLite backend, artifacts proxied), the engine thread
   waits <= 50 ms per proposal on logging. The run's tracker is `TimedTracker` (below): the
   MlflowTracker with every hook timed on the engine thread. Reported per proposal: the hooks
   during the search, and everything (start, the wait for the parent run's id, the final drain).

    python experiments/mlflow_logging_cost.py [--repeats 5] [--rest-repeats 3] [--no-rest] [--quick]

writes experiments/reports/mlflow_logging_cost.md and .csv.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from gepa_lab.tracking.mlflow_tracker import MlflowTracker

ROOT = Path(__file__).resolve().parents[1]
WAITS_ENV = "GEPA_LAB_BENCH_WAITS"  # where TimedTracker writes its waits (JSON)
HOOKS = ("start", "candidate", "proposal", "iteration", "round_end", "note", "links", "finish", "fail")
SEARCH_HOOKS = ("candidate", "proposal", "iteration", "round_end", "note")
COLUMNS = ["kind", "repeat", "wall_s", "cpu_s", "logger_cpu_s", "logger_warm_up_cpu_s", "proposals",
           "search_wait_ms_per_proposal", "start_wait_s", "links_wait_s", "finish_wait_s", "total_wait_ms_per_proposal"]
TARGET_RATIO, TARGET_WAIT_MS = 1.5, 50.0


class TimedTracker(MlflowTracker):
    """The MLflow tracker with every hook timed on the calling (engine) thread; the totals go to
    the JSON file named by $GEPA_LAB_BENCH_WAITS when the run ends. Calls `round_end()` after each
    iteration until the engine calls it itself (as the round-based engine does)."""

    def __init__(self, *args: Any, **kwargs: Any):
        super().__init__(*args, **kwargs)
        self.waits = dict.fromkeys(HOOKS, 0.0)
        self.engine_ends_rounds = False
        for hook in HOOKS:
            setattr(self, hook, self._timed(hook, getattr(super(), hook)))

    def _timed(self, hook: str, method: Any) -> Any:
        def timed(*args: Any) -> Any:
            started = time.perf_counter()
            try:
                return method(*args)
            finally:
                self.waits[hook] += time.perf_counter() - started
                if hook == "iteration" and not self.engine_ends_rounds:
                    self._emulated_round_end()
                if hook in ("finish", "fail"):
                    self._write(args[0])

        if hook == "round_end":
            def from_engine() -> Any:
                self.engine_ends_rounds = True
                return timed()

            return from_engine
        return timed

    def _emulated_round_end(self) -> None:
        started = time.perf_counter()
        MlflowTracker.round_end(self)
        self.waits["round_end"] += time.perf_counter() - started

    def _write(self, outcome: Any) -> None:
        path = os.environ.get(WAITS_ENV)
        if path:
            Path(path).write_text(json.dumps({"waits": self.waits, "proposals": getattr(outcome, "proposals", 0),
                                              "errors": self.error_count,
                                              "logger_cpu_s": self.logger_state.get("cpu_s"),
                                              "logger_warm_up_cpu_s": self.logger_state.get("warm_up_cpu_s")}))


# -- runs --------------------------------------------------------------------------------------

def run_recipe(work: Path, overrides: list[str], env: dict[str, str]) -> tuple[float, float, dict[str, Any]]:
    """One `python -m gepa_lab experiment=recipe` (wall s, CPU s of that process, its waits file)."""
    run_dir = Path(tempfile.mkdtemp(dir=work))
    waits = run_dir / "waits.json"
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    done = subprocess.run([sys.executable, "-m", "gepa_lab", "experiment=recipe", "progress=off",
                           f"hydra.run.dir={run_dir / 'run'}", *overrides], cwd=work,
                          env={**env, WAITS_ENV: str(waits)}, capture_output=True, text=True)
    wall = time.perf_counter() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if done.returncode != 0:
        raise RuntimeError(f"the recipe run failed ({' '.join(overrides)}):\n{done.stderr[-3000:]}")
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return wall, cpu, json.loads(waits.read_text()) if waits.is_file() else {}


def wait_row(kind: str, repeat: int, wall: float, cpu: float, measured: dict[str, Any]) -> dict[str, Any]:
    row: dict[str, Any] = {"kind": kind, "repeat": repeat, "wall_s": wall, "cpu_s": cpu}
    if measured:
        waits, proposals = measured["waits"], max(1, int(measured["proposals"]))
        search = sum(waits[h] for h in SEARCH_HOOKS)
        row.update({"proposals": proposals, "search_wait_ms_per_proposal": 1000 * search / proposals,
                    "start_wait_s": waits["start"], "links_wait_s": waits["links"],
                    "finish_wait_s": waits["finish"] + waits["fail"],
                    "total_wait_ms_per_proposal": 1000 * sum(waits.values()) / proposals,
                    "logger_cpu_s": measured.get("logger_cpu_s"), "logger_warm_up_cpu_s": measured.get("logger_warm_up_cpu_s")})
        if measured.get("errors"):
            raise RuntimeError(f"{kind}: {measured['errors']} MLflow logging call(s) failed")
    return row


@contextmanager
def mlflow_server(work: Path, env: dict[str, str]) -> Iterator[str]:
    sys.path.insert(0, str(ROOT / "tests"))
    from fixtures_mlflow import free_port, stop, wait_ready

    port, folder = free_port(), Path(tempfile.mkdtemp(dir=work))
    log = folder / "server.log"
    with open(log, "wb") as out:
        proc = subprocess.Popen([sys.executable, "-m", "mlflow", "server", "--host", "127.0.0.1", "--port", str(port),
                                 "--workers", "1", "--backend-store-uri", f"sqlite:///{folder / 'mlflow.db'}",
                                 "--artifacts-destination", str(folder / "artifacts")],
                                cwd=folder, env=env, stdout=out, stderr=subprocess.STDOUT, start_new_session=True)
    base = f"http://127.0.0.1:{port}"
    try:
        wait_ready(base, proc, log)
        yield base
    finally:
        stop(proc)


def measure(args: argparse.Namespace, work: Path) -> list[dict[str, Any]]:
    env = {k: v for k, v in os.environ.items() if k != "MLFLOW_TRACKING_URI"}
    env.update({"MLFLOW_DISABLE_TELEMETRY": "true", "LITELLM_LOCAL_MODEL_COST_MAP": "True",
                "HF_DATASETS_OFFLINE": "1", "HF_HUB_OFFLINE": "1",
                "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT / "experiments"), env.get("PYTHONPATH")]))})
    extra = ["search.max_metric_calls=200"] if args.quick else []
    timed = ["tracking._target_=mlflow_logging_cost.TimedTracker"]
    existing = f"sqlite:///{work / 'existing' / 'mlflow.db'}"
    (work / "existing").mkdir()
    run_recipe(work, [f"tracking.uri={existing}", *extra], env)  # creates the store (untimed), warms caches
    rows = []
    for repeat in range(args.repeats):  # interleaved: the machine's other load hits every kind alike
        kinds = {"none": ["tracking=none"], "sqlite, existing store": [f"tracking.uri={existing}", *timed],
                 "sqlite, new store": [f"tracking.uri=sqlite:///{work / f'new{repeat}' / 'mlflow.db'}", *timed]}
        for kind, overrides in kinds.items():
            rows.append(wait_row(kind, repeat, *run_recipe(work, [*overrides, *extra], env)))
            print(f"{kind:<24} {rows[-1]['wall_s']:.2f} s", flush=True)
    if not args.no_rest:
        started = time.monotonic()
        with mlflow_server(work, env) as base:
            run_recipe(work, [f"tracking.uri={base}", *extra], env)  # the server's tables and first requests
            # A just-started `mlflow server` (3.17) starts its job runners for about half a minute;
            # a team's server is long up: time the runs after that.
            time.sleep(max(0.0, args.settle - (time.monotonic() - started)))
            for repeat in range(args.rest_repeats):
                rows.append(wait_row("rest", repeat, *run_recipe(work, [f"tracking.uri={base}", *timed, *extra], env)))
                print(f"rest                     {rows[-1]['wall_s']:.2f} s, "
                      f"{rows[-1]['total_wait_ms_per_proposal']:.1f} ms/proposal", flush=True)
    return rows


# -- report ------------------------------------------------------------------------------------

def med(rows: list[dict[str, Any]], kind: str, key: str) -> float:
    values = [r[key] for r in rows if r["kind"] == kind and r.get(key) is not None]
    return statistics.median(values) if values else float("nan")


def spread(rows: list[dict[str, Any]], kind: str, key: str, scale: float = 1.0, digits: int = 2) -> str:
    values = sorted(r[key] * scale for r in rows if r["kind"] == kind and r.get(key) is not None)
    if not values:
        return "-"
    return f"{statistics.median(values):.{digits}f} ({values[0]:.{digits}f}-{values[-1]:.{digits}f})"


def paired_ratio(rows: list[dict[str, Any]], kind: str) -> float:
    """Median over repeats of (this kind's wall / tracking=none's wall in the same repeat): the
    runs of one repeat ran back to back, so the machine's other load drifts less between them."""
    none = {r["repeat"]: r["wall_s"] for r in rows if r["kind"] == "none"}
    ratios = [r["wall_s"] / none[r["repeat"]] for r in rows if r["kind"] == kind and r["repeat"] in none]
    return statistics.median(ratios) if ratios else float("nan")


def report(rows: list[dict[str, Any]], args: argparse.Namespace, env: dict[str, str], load: str,
           command: str) -> str:
    import _bench

    none = med(rows, "none", "wall_s")
    lines = _bench.header("MLflow tracking cost on the default recipe run", env, command, load, extra=[
        "each run: `python -m gepa_lab experiment=recipe progress=off` as a subprocess (interpreter start, imports, "
        "search, holdout comparison, summary); SkillCraft-sim: the numbers calibrate the harness, not an LM",
        f"{args.repeats} interleaved repeats per SQLite kind, {args.rest_repeats} against the server (timed from "
        f"{args.settle:g} s after its start, once its start-up work is done); medians (min-max in brackets)",
        "MLflow tracking = `MlflowTracker` (gepa_lab/tracking/mlflow_tracker.py): the engine hands each event to one "
        "logging process (gepa_lab/tracking/mlflow_worker.py) through a pipe; the timed runs use `TimedTracker` "
        "(this script), the same tracker with its hooks timed"])
    if args.quick:
        lines += ["**QUICK MODE** (search.max_metric_calls=200, few repeats): smoke numbers, not measurements.", ""]
    lines += ["## Wall time: MLflow on a local SQLite store vs tracking=none", "",
              "| run | wall s | ratio of medians | median paired ratio | CPU s of the gepa_lab process | CPU s of the "
              "logging process (of which its imports) | engine waits, ms per proposal (all hooks) |",
              "|---|---|---|---|---|---|---|"]
    verdicts = []
    for kind in ("none", "sqlite, existing store", "sqlite, new store"):
        ratio, paired = med(rows, kind, "wall_s") / none, paired_ratio(rows, kind)
        waits = spread(rows, kind, "total_wait_ms_per_proposal", digits=1) if kind != "none" else "-"
        logger = (f"{spread(rows, kind, 'logger_cpu_s')} ({spread(rows, kind, 'logger_warm_up_cpu_s')})"
                  if kind != "none" else "-")
        lines.append(f"| {kind} | {spread(rows, kind, 'wall_s')} | {ratio:.2f}x | {paired:.2f}x | "
                     f"{spread(rows, kind, 'cpu_s')} | {logger} | {waits} |")
        if kind != "none":
            verdicts.append(f"{kind}: {paired:.2f}x ({'meets' if paired <= TARGET_RATIO else 'MISSES'} the "
                            f"<= {TARGET_RATIO}x target)")
    lines += ["", "Target 1 (<= 1.5x, median paired ratio): " + "; ".join(verdicts) + ".", ""]
    kind = "sqlite, existing store"
    imports, logger = med(rows, kind, "logger_warm_up_cpu_s"), med(rows, kind, "logger_cpu_s")
    engine_extra = med(rows, kind, "cpu_s") - med(rows, "none", "cpu_s")
    lines += ["Where the time goes (existing store): the logging process needs "
              f"{logger:.2f} s of CPU, {imports:.2f} s of it importing MLflow and its SQL store before its first "
              "call, the rest for the run's MLflow calls (parent run, a run per pool member, metrics and tables, "
              f"the decision); the engine's process spends "
              f"{engine_extra:.2f} s more CPU than with tracking=none (mostly drawing the plots). The whole "
              f"tracking=none run takes {none:.2f} s: the logging process (started about 0.3 s in, before Hydra "
              "composes the config) imports and writes on the other core meanwhile, and on a loaded machine it "
              "shares a core with the search. What it has not done when the search ends is the engine's wait; "
              "a run whose search takes longer (a real LM: seconds per call) hides it completely.", ""]
    if any(r["kind"] == "rest" for r in rows):
        search, total = med(rows, "rest", "search_wait_ms_per_proposal"), med(rows, "rest", "total_wait_ms_per_proposal")
        lines += ["## Engine-thread wait on logging: REST to a local `mlflow server`", "",
                  "| what the engine waits for | median (min-max) |", "|---|---|",
                  f"| hooks during the search (candidate, proposal, iteration, round_end, note), ms per proposal | "
                  f"{spread(rows, 'rest', 'search_wait_ms_per_proposal', digits=2)} |",
                  f"| start(): until the parent run exists (a remote store must work before anything is spent), s | "
                  f"{spread(rows, 'rest', 'start_wait_s')} |",
                  f"| links(): until the run's id is known, s | {spread(rows, 'rest', 'links_wait_s')} |",
                  f"| finish(): plots drawn, then until the logger has written everything, s | "
                  f"{spread(rows, 'rest', 'finish_wait_s')} |",
                  f"| all of it, ms per proposal | {spread(rows, 'rest', 'total_wait_ms_per_proposal', digits=1)} |",
                  f"| the run's wall time, s | {spread(rows, 'rest', 'wall_s')} |", "",
                  f"Target 2 (<= {TARGET_WAIT_MS:g} ms per proposal): {total:.1f} ms per proposal counting every wait "
                  f"({'meets' if total <= TARGET_WAIT_MS else 'MISSES'} it); {search:.2f} ms during the search.", ""]
    lines += ["## Reading", "",
              "- The engine process never imports MLflow: each hook turns the event into plain data and writes it "
              "to the logging process's pipe; MLflow's import, store opening and every client call run in that "
              "process, on another core. The gepa_lab process's CPU above is what tracking adds to the engine "
              "(payloads, and the four plots it draws at the end while the logger drains).",
              "- `python -m gepa_lab` starts the logging process before Hydra composes the config (unless the "
              "command line says tracking=none), so it imports MLflow while the run loads; with a local store the "
              "engine does not wait for it at start (the store was checked before: writable file), only in "
              "links() (the run's id) and at the end.",
              "- A new store adds MLflow's table creation (about 1.5 s) to the logging process's start.",
              "- The SQLite store keeps its default rollback journal: each of the logger's ~150 commits per run "
              "waits for the disk (about 1 s per run on a busy disk, cProfile in that process). Write-ahead-log "
              "mode would save most of it but is persistent in the file and unsafe when jobs on several hosts "
              "share one mlflow.db on a network filesystem (a SLURM sweep), so it is not set.",
              "- Over REST the engine waits at start until the server has created the parent run (so a broken "
              "server fails the run before anything is spent), then only at the end, for what the logger has "
              "not written yet.",
              "- What a SIGKILL can lose: README, 'Comparing runs in MLflow'."]
    return "\n".join(lines) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--repeats", type=int, default=5, help="runs of each SQLite kind (interleaved)")
    parser.add_argument("--rest-repeats", type=int, default=3, help="runs against the local mlflow server")
    parser.add_argument("--no-rest", action="store_true", help="skip the local mlflow server")
    parser.add_argument("--settle", type=float, default=90.0,
                        help="seconds after starting the server before the timed runs (its start-up work)")
    sys.path.insert(0, str(ROOT / "experiments"))
    import _bench

    _bench.add_common_args(parser)
    args = parser.parse_args()
    if args.quick:
        args.repeats, args.rest_repeats, args.settle = 1, 1, 0.0
    env, load = _bench.environment(), _bench.LoadMonitor()
    with tempfile.TemporaryDirectory(prefix="mlflow-cost-") as tmp:
        rows = measure(args, Path(tmp))
    markdown = report(rows, args, env, load.stop(), _bench.command_line("mlflow_logging_cost.py", sys.argv[1:]))
    _bench.write_outputs("mlflow_logging_cost", args, markdown, rows, COLUMNS, env)


if __name__ == "__main__":
    main()
