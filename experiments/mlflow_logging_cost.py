"""What does MLflow tracking cost per candidate and per iteration, against MLflow's own floor?

Configurations (each on a fresh store; store creation and imports excluded):

- floor/minimal: `MlflowClient.create_run` + `set_terminated` per child: the least a finished
  nested run can cost.
- floor/equivalent: the calls one of our accepted candidates' nested runs makes, with the bare
  client (create with tags, one `log_batch` of metrics, `log_dict` x2, `log_text` x2,
  `log_table` x2, terminate).
- tracker/hooks: `MlflowTracker` driven through its hooks with synthetic events, as the engine
  calls them: per iteration a proposal (one in three accepted: its candidate first) and the
  iteration stats. Timed apart: the proposal hook (one nested run) and the iteration hook (the
  parent's one `log_batch`); and once per run start() and finish() (decision, tables, plots).
- search/e2e: a toy `optimize` (instant evaluator) with the run record, with and without the
  tracker: the overhead per iteration a run would see, start and finish included.
- rest/hooks: tracker/hooks against a local `mlflow server` (REST, artifacts proxied), fewer
  iterations; skip with --no-rest.

    python experiments/mlflow_logging_cost.py [--n 200] [--repeats 3] [--rest-n 30]

writes experiments/reports/mlflow_logging_cost.md.
"""

from __future__ import annotations

import argparse
import os
import platform
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from dataclasses import replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

for _name, _value in (("MLFLOW_DISABLE_TELEMETRY", "true"), ("LITELLM_LOCAL_MODEL_COST_MAP", "True"),
                      ("MLFLOW_SUPPRESS_PRINTING_URL_TO_STDOUT", "true")):
    os.environ.setdefault(_name, _value)

REPORT = Path(__file__).resolve().parent / "reports" / "mlflow_logging_cost.md"


def load_average() -> str:
    """Other work on the machine shows in every number: recorded with them."""
    try:
        return " ".join(Path("/proc/loadavg").read_text().split()[:3])
    except OSError:
        return "unknown"


LOAD_AT_START = load_average()


# -- toy search ---------------------------------------------------------------------------------

def toy_problem(cases: int = 20) -> tuple[Any, Any, Any, Any]:
    from gepa_lab import Case, Dataset, Evaluation, SkillSpec

    class Evaluator:
        """Score grows with the number of steps: steps proposals get accepted, others rejected."""

        def evaluate(self, artifact: Any, batch: list[Case], seed: int) -> list[Evaluation]:
            score = min(1.0, 0.1 + 0.002 * len(artifact.steps))
            return [Evaluation(c.id, score, output="o" * 200, feedback="f" * 200,
                               objectives={"cost_usd": 0.001, "tokens": 120.0}) for c in batch]

    class Reflector:
        def reflect(self, artifact: Any, component: str, records: list[dict[str, Any]]) -> Any:
            if component == "steps":
                return {"steps": [*artifact.steps, f"Step {len(artifact.steps) + 1}: check it."]}
            if component == "pitfalls":
                return {"pitfalls": [*artifact.pitfalls, f"Pitfall {len(artifact.pitfalls) + 1}."]}
            return {component: getattr(artifact, component) + " More."}

    def split(prefix: str) -> list[Case]:
        return [Case(f"{prefix}{i}", f"{prefix} input {i}", critical=i == 1) for i in range(1, cases + 1)]

    seed = SkillSpec(name="Bench", description="bench skill", when_to_use="Use for benchmarks.",
                     steps=("Read.", "Answer."))
    return seed, Dataset("bench", "v1", split("fb"), split("val"), split("ho")), Evaluator(), Reflector()


def run_search(iterations: int, uri: str | None, work: Path) -> tuple[float, Any]:
    from gepa_lab import SearchConfig, optimize
    from gepa_lab.tracking.mlflow_tracker import MlflowTracker

    seed, dataset, evaluator, reflector = toy_problem()
    run_dir = Path(tempfile.mkdtemp(dir=work))
    trackers = [MlflowTracker(uri=uri, experiment="bench")] if uri else []
    started = time.perf_counter()
    optimize(seed, dataset, evaluator, reflector,
             SearchConfig(max_iterations=iterations, max_metric_calls=10**7, minibatch_size=3),
             run_dir=run_dir, trackers=trackers, name="bench", run_config={"experiment_name": "bench"})
    return time.perf_counter() - started, (trackers[0] if trackers else None)


# -- floors -------------------------------------------------------------------------------------

def fresh_store(work: Path) -> tuple[Any, str, str]:
    """A new SQLite store with its tables created (not timed) and a parent run."""
    from mlflow import MlflowClient

    folder = Path(tempfile.mkdtemp(dir=work))
    client = MlflowClient(f"sqlite:///{folder / 'mlflow.db'}")
    exp = client.create_experiment("floor", artifact_location=(folder / "mlruns").as_uri())
    parent = client.create_run(exp, run_name="parent").info.run_id
    return client, exp, parent


def import_seconds() -> float:
    """`import mlflow` in a fresh interpreter (what start() pays once per process)."""
    code = "import time; t = time.perf_counter(); import mlflow; print(time.perf_counter() - t)"
    return float(subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout)


def store_seconds(work: Path) -> float:
    """Creating a new SQLite store (its tables) on first use."""
    from mlflow import MlflowClient

    t = time.perf_counter()
    MlflowClient(f"sqlite:///{Path(tempfile.mkdtemp(dir=work)) / 'mlflow.db'}").search_experiments()
    return time.perf_counter() - t


def floor_minimal(n: int, work: Path) -> list[float]:
    client, exp, parent = fresh_store(work)
    times = []
    for i in range(n):
        t = time.perf_counter()
        run = client.create_run(exp, tags={"mlflow.parentRunId": parent}, run_name=f"c{i}")
        client.set_terminated(run.info.run_id, "FINISHED")
        times.append(time.perf_counter() - t)
    return times


def floor_equivalent(n: int, work: Path, parts: dict[str, list[float]]) -> list[float]:
    """An accepted candidate's nested-run calls with the bare client: 16 tags, 14 metrics, two
    dicts, two texts, two tables (3 and 20 rows)."""
    from mlflow.entities import Metric

    client, exp, parent = fresh_store(work)
    minibatch = {"case_id": ["a", "b", "c"], "parent_score": [0.2] * 3, "child_score": [0.3] * 3}
    validation = {"case_id": [f"v{k}" for k in range(20)], "score": [0.5] * 20, "cost_usd": [0.001] * 20,
                  "tokens": [120.0] * 20}
    times = []
    for i in range(n):
        marks = [("start", time.perf_counter())]
        tags = {"mlflow.parentRunId": parent, **{f"t{k}": "v" * 40 for k in range(15)}}
        run_id = client.create_run(exp, tags=tags, run_name=f"c{i}").info.run_id
        marks.append(("create_run", time.perf_counter()))
        now = int(time.time() * 1000)
        client.log_batch(run_id, metrics=[Metric(f"m{k}", 0.5, now, 0) for k in range(14)])
        marks.append(("log_batch", time.perf_counter()))
        client.log_dict(run_id, {"steps": ["x" * 40] * 8}, "candidate.json")
        client.log_dict(run_id, {"records": [{"input": "x" * 300, "output": "y" * 300}] * 3}, "reflection.json")
        marks.append(("log_dict x2", time.perf_counter()))
        client.log_text(run_id, "# s\n" * 40, "SKILL.md")
        client.log_text(run_id, "+x\n" * 10, "diff.patch")
        marks.append(("log_text x2", time.perf_counter()))
        client.log_table(run_id, minibatch, "minibatch.json")
        client.log_table(run_id, validation, "validation.json")
        marks.append(("log_table x2", time.perf_counter()))
        client.set_terminated(run_id, "FINISHED")
        marks.append(("set_terminated", time.perf_counter()))
        for (_, a), (name, b) in zip(marks, marks[1:], strict=False):
            parts.setdefault(name, []).append(b - a)
        times.append(marks[-1][1] - marks[0][1])
    return times


# -- the tracker through its hooks ---------------------------------------------------------------

def tracker_hooks(n: int, uri: str, work: Path) -> dict[str, Any]:
    """Per iteration, as the engine calls them: candidate (accepted ones), proposal, iteration.
    Returns per-iteration proposal (accepted / rejected) and iteration hook times (s), start and
    finish seconds."""
    from gepa_lab import Summary
    from gepa_lab.core.artifacts import artifact_id
    from gepa_lab.core.events import CandidateInfo, IterationStats, Proposal, RunInfo, ScoredBatch
    from gepa_lab.core.result import PoolEntry, Result
    from gepa_lab.core.settings import SearchConfig
    from gepa_lab.tracking.mlflow_tracker import MlflowTracker

    seed, dataset, evaluator, _ = toy_problem()
    run_dir = Path(tempfile.mkdtemp(dir=work))
    tracker = MlflowTracker(uri=uri, experiment="bench")
    seed_id = artifact_id(seed)
    info = RunInfo("x", "bench", "gepa", datetime.now(UTC).isoformat(), dataset, dataset.digests(), seed, seed_id,
                   SearchConfig(), {"search": {"random_seed": 0}}, False, str(run_dir))
    t = time.perf_counter()
    tracker.start(info)
    start_s = time.perf_counter() - t
    index = 0

    def batch(phase: str, cid: str, artifact: Any, cases: Any) -> ScoredBatch:
        nonlocal index
        index += 1
        return ScoredBatch(index, phase, cid, 0, tuple(evaluator.evaluate(artifact, list(cases), 0)))

    validation = batch("validation", seed_id, seed, dataset.validation)
    tracker.candidate(CandidateInfo(seed_id, seed, None, None, None, validation, len(dataset.validation)))
    pool = [PoolEntry(seed_id, None, None, None, len(dataset.validation), tuple(validation.scores))]
    rejected_s, iteration_s, accepted_s = [], [], []
    parent, parent_id = seed, seed_id
    for i in range(n):
        child = replace(parent, steps=(*parent.steps, f"s{i}"))
        cid, accepted = artifact_id(child), i % 3 == 0
        mb = dataset.feedback[:3]
        parent_batch, child_batch = batch("feedback-parent", parent_id, parent, mb), batch("feedback-child", cid, child, mb)
        val = batch("validation", cid, child, dataset.validation) if accepted else None
        t = time.perf_counter()
        if accepted:
            tracker.candidate(CandidateInfo(cid, child, parent_id, "steps", i, val, 100 * i))
        tracker.proposal(Proposal(
            iteration=i, parent_id=parent_id, parent=parent, component="steps",
            status="accepted" if accepted else "rejected", reason="bench", minibatch=tuple(c.id for c in mb),
            paired_seed=i, parent_batch=parent_batch,
            records=[{"case_id": f"case-{k}", "input": "x" * 300, "output": "y" * 300} for k in range(3)],
            reply={"steps": list(child.steps)}, candidate_id=cid, artifact=child, child_batch=child_batch,
            validation_batch=val))
        t1 = time.perf_counter()
        tracker.iteration(IterationStats(i, cid, 0.5, len(pool), 1, 100 * i, i + 1, 0.1 * i, 0.0))
        t2 = time.perf_counter()
        (accepted_s if accepted else rejected_s).append(t1 - t)
        iteration_s.append(t2 - t1)
        if accepted:
            pool.append(PoolEntry(cid, parent_id, "steps", i, 100 * i, tuple(val.scores)))
            parent, parent_id = child, cid
    summary = Summary(0.5, len(dataset.holdout), {"cost_usd": 0.001})
    result = Result(
        "gepa", "x", parent, parent_id, seed_id, summary, summary, summary, replace(summary, score=0.6), len(pool),
        100 * n, "max_iterations", True, "holdout requirements satisfied",
        [{"rule": "holdout_delta", "passed": True, "detail": "ok"}], {"random_seed": 0}, {},
        holdout_cases=[{"case_id": c.id, "critical": c.critical, "baseline": 0.5, "candidate": 0.6, "delta": 0.1}
                       for c in dataset.holdout],
        proposals=n, pool=pool, validation_case_ids=[c.id for c in dataset.validation])
    plots_s: list[float] = []
    log_plots = tracker._log_plots  # timed apart: what share of finish() the four plots are

    def timed_plots(res: Any) -> None:
        t0 = time.perf_counter()
        log_plots(res)
        plots_s.append(time.perf_counter() - t0)

    tracker._log_plots = timed_plots  # type: ignore[method-assign]
    t = time.perf_counter()
    tracker.finish(result)
    finish_s = time.perf_counter() - t
    assert not tracker.errors, tracker.errors
    return {"accepted": accepted_s, "rejected": rejected_s, "iteration": iteration_s, "start": start_s,
            "finish": finish_s, "plots": sum(plots_s)}


# -- a local server -----------------------------------------------------------------------------

def start_server(work: Path) -> tuple[subprocess.Popen[bytes], str]:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    folder = Path(tempfile.mkdtemp(dir=work))
    proc = subprocess.Popen(
        [sys.executable, "-m", "mlflow", "server", "--host", "127.0.0.1", "--port", str(port), "--workers", "1",
         "--backend-store-uri", f"sqlite:///{folder / 'mlflow.db'}", "--artifacts-destination", str(folder / "art")],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
    base = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        try:
            with urllib.request.urlopen(f"{base}/health", timeout=2):
                return proc, base
        except OSError:
            time.sleep(0.5)
    os.killpg(proc.pid, signal.SIGKILL)
    raise RuntimeError("mlflow server did not start")


def stop_server(proc: subprocess.Popen[bytes]) -> None:
    os.killpg(proc.pid, signal.SIGTERM)
    try:
        proc.wait(timeout=15)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(timeout=5)


# -- report -------------------------------------------------------------------------------------

def machine() -> dict[str, str]:
    import mlflow
    import sqlalchemy

    cpu = "unknown"
    try:
        cpu = next(line.split(":", 1)[1].strip() for line in Path("/proc/cpuinfo").read_text().splitlines()
                   if line.startswith("model name"))
    except (OSError, StopIteration):
        pass
    mem = "unknown"
    try:
        kb = int(next(line.split()[1] for line in Path("/proc/meminfo").read_text().splitlines()
                      if line.startswith("MemTotal")))
        mem = f"{kb / 2**20:.1f} GiB"
    except (OSError, StopIteration, ValueError):
        pass
    return {"platform": platform.platform(), "cpu": f"{cpu} ({os.cpu_count()} logical)", "memory": mem,
            "python": sys.version.split()[0], "mlflow": mlflow.__version__, "sqlalchemy": sqlalchemy.__version__,
            "temp dir": tempfile.gettempdir(), "date": datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC"),
            "load average (1, 5, 15 min) at start / end": f"{LOAD_AT_START} / {load_average()}"}


def ms(values: list[float]) -> str:
    """Median, and the range over repeats when there are several."""
    text = f"{statistics.median(values) * 1000:.1f}"
    if len(values) > 1:
        text += f" ({min(values) * 1000:.1f}–{max(values) * 1000:.1f})"
    return text


def hook_rows(label: str, runs: list[dict[str, Any]], n: int) -> list[str]:
    def med(key: str) -> list[float]:
        return [statistics.median(r[key]) for r in runs]

    return [
        f"| {label} | proposal hook, accepted: one nested run (candidate, SKILL.md, diff, reflection, "
        f"2 tables; {n} it., 1 in 3 accepted) | {ms(med('accepted'))} |",
        f"| {label} | proposal hook, rejected: one nested run (same, 1 table) | {ms(med('rejected'))} |",
        f"| {label} | iteration hook: the parent's one `log_batch` (8 metrics) | {ms(med('iteration'))} |",
        f"| {label} | start(): experiment lookup, parent run, params, 3 files, dataset inputs | "
        f"{ms([r['start'] for r in runs])} |",
        f"| {label} | finish(): decision metrics/tags, 2 tables, 3 files, 4 plots, is_best, end | "
        f"{ms([r['finish'] for r in runs])} |",
        f"| {label} | of which the 4 plots (`log_figure`: render + upload) | {ms([r['plots'] for r in runs])} |",
    ]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--n", type=int, default=200, help="children / iterations per configuration")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--rest-n", type=int, default=30, help="iterations per repeat against the server")
    parser.add_argument("--no-rest", action="store_true", help="skip the local mlflow server")
    parser.add_argument("--report", type=Path, default=REPORT)
    args = parser.parse_args()
    import matplotlib  # noqa: F401  (import costs outside every timing)
    import mlflow  # noqa: F401

    wall = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="mlflow-cost-") as tmp:
        work = Path(tmp)
        parts: dict[str, list[float]] = {}
        imports = [import_seconds() for _ in range(args.repeats)]
        stores = [store_seconds(work) for _ in range(args.repeats + 1)][1:]  # the first imports the store code
        iterations = max(10, args.n // 4)
        minimal, equivalent, hooks, bare, tracked = [], [], [], [], []
        for _ in range(args.repeats):  # interleaved: load from other work hits floor and tracker alike
            minimal.append(statistics.median(floor_minimal(args.n, work)))
            equivalent.append(statistics.median(floor_equivalent(args.n, work, parts)))
            hooks.append(tracker_hooks(args.n, fresh_store(work)[0].tracking_uri, work))
            bare.append(run_search(iterations, None, work)[0])
            seconds, tracker = run_search(iterations, fresh_store(work)[0].tracking_uri, work)
            tracked.append(seconds)
            assert tracker is not None and not tracker.errors, tracker.errors
        rest: list[dict[str, Any]] = []
        if not args.no_rest:
            proc, base = start_server(work)
            try:
                rest = [tracker_hooks(args.rest_n, base, work) for _ in range(args.repeats)]
            finally:
                stop_server(proc)
    total = time.perf_counter() - wall

    per_iter_overhead = [(t - b) / iterations for t, b in zip(tracked, bare, strict=True)]
    nested = statistics.median(statistics.median(r["accepted"]) for r in hooks)
    floor = statistics.median(equivalent)
    lines = [
        "# MLflow logging cost per candidate and iteration",
        "",
        "Generated by `python experiments/mlflow_logging_cost.py "
        f"--n {args.n} --repeats {args.repeats} --rest-n {args.rest_n}{' --no-rest' if args.no_rest else ''}` "
        f"({total:.0f} s wall).",
        "",
        "## Machine",
        "",
        *[f"- {k}: {v}" for k, v in machine().items()],
        "",
        "## Per nested run / iteration",
        "",
        "Median over repeats of each repeat's per-item median; the range over repeats in brackets. "
        "SQLite store in the temp dir unless marked REST.",
        "",
        "| configuration | what is timed | ms |",
        "|---|---|---|",
        f"| floor/minimal | bare client: create_run + set_terminated | {ms(minimal)} |",
        f"| floor/equivalent | bare client: an accepted candidate's calls (create, log_batch, log_dict x2, "
        f"log_text x2, log_table x2, terminate) | {ms(equivalent)} |",
        *hook_rows("tracker/hooks", hooks, args.n),
        f"| search/e2e | toy optimize, tracker on minus off, per iteration ({iterations} it., start and finish "
        f"included) | {ms(per_iter_overhead)} |",
        *(hook_rows("rest/hooks (REST)", rest, args.rest_n) if rest else []),
        "",
        f"An accepted candidate's nested run through the tracker: **{nested / floor:.2f}x** the bare-client "
        f"floor for the same calls ({(nested - floor) * 1000:+.1f} ms). Per-call times vary several-fold "
        "between repeats (shared disk, 2 cores), so read a ratio near 1 as 'at the floor'.",
        "",
        "Floor/equivalent split by call (median ms): "
        + ", ".join(f"{k} {ms(v)}" for k, v in parts.items()) + ".",
        "",
        f"Toy search of {iterations} iterations: {statistics.median(bare):.2f} s without the tracker, "
        f"{statistics.median(tracked):.2f} s with it.",
        "",
        f"Outside the rows above: `import mlflow` {ms(imports)} ms (fresh interpreter; paid inside start(), "
        f"once per process) and creating a new SQLite store {ms(stores)} ms (its tables; once per store).",
        "",
        "## Reading",
        "",
        "- Each `log_dict` / `log_text` / `log_figure` is one artifact upload; each `log_table` is four "
        "client calls (list the folder, upload, read the run, set the `mlflow.loggedArtifacts` tag): the "
        "price of MLflow-native tables (`load_table`, the UI's table view), in floor/equivalent as in the "
        "tracker. The accepted-proposal row minus floor/equivalent is what the tracker itself adds "
        "(building the payload, rendering SKILL.md and the diff).",
        "- The iteration hook is exactly one `log_batch` per iteration, written at once (nothing "
        "buffered, nothing in the engine's checkpoint): a hard kill loses no iteration metrics.",
        "- finish() is mostly the four plots (the 'of which' row: matplotlib rendering and one upload each).",
        "- Over REST every call is an HTTP round trip, so the per-call counts above matter more there; "
        "against any real evaluator (seconds per model call) it is still small.",
    ]
    args.report.parent.mkdir(parents=True, exist_ok=True)
    args.report.write_text("\n".join(lines) + "\n", encoding="utf-8")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
