"""Shared helpers for the benchmark scripts in experiments/ (a plain module, not a package).

A script puts the repo root and experiments/ on sys.path, then `import _bench`. What is here:

- the environment a report states (date, machine, CPU, load, versions, commit) and the writer of
  the Markdown report + CSV (every CSV row repeats the environment columns);
- timing wrappers for an evaluator and a reflector (time inside them, optional sleep to stand in
  for LM latency) so harness time = wall - evaluator - reflector;
- SkillCraft-sim tasks, a gepa-lab runner and a reference (`gepa.optimize`) runner that plugs the
  same evaluator and offline reflector into the reference as its adapter and proposal function;
- the holdout re-measure on fresh seeds and bootstrap intervals.

Only public names of both libraries are used: `gepa_lab` top-level names, `evaluators.skillcraft`
exports, and `gepa.optimize` with its documented strategy / adapter / stopper protocols.
"""

from __future__ import annotations

import os

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
os.environ.setdefault("MLFLOW_DISABLE_TELEMETRY", "true")

import argparse  # noqa: E402
import csv  # noqa: E402
import importlib.metadata  # noqa: E402
import json  # noqa: E402
import math  # noqa: E402
import platform  # noqa: E402
import random  # noqa: E402
import statistics  # noqa: E402
import subprocess  # noqa: E402
import sys  # noqa: E402
import tempfile  # noqa: E402
import threading  # noqa: E402
import time  # noqa: E402
from collections.abc import Callable, Iterable, Sequence  # noqa: E402
from concurrent.futures import ProcessPoolExecutor, ThreadPoolExecutor  # noqa: E402
from dataclasses import dataclass, field  # noqa: E402
from datetime import UTC, datetime  # noqa: E402
from pathlib import Path  # noqa: E402
from typing import Any  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
EXPERIMENTS = ROOT / "experiments"
REPORTS = EXPERIMENTS / "reports"
QUICK_REPORTS = REPORTS / "quick"
for _p in (str(ROOT), str(EXPERIMENTS)):
    if _p not in sys.path:
        sys.path.insert(0, _p)

import gepa  # noqa: E402
from gepa.core.adapter import EvaluationBatch  # noqa: E402
from gepa.strategies.proposal_sampling import IndependentSampling, SameParentSampling  # noqa: E402
from gepa.strategies.proposal_selection import (  # noqa: E402
    AllImprovements,
    BestImprovement,
    TopKImprovements,
)

import gepa_lab  # noqa: E402
from gepa_lab import (  # noqa: E402
    Case,
    Dataset,
    Evaluation,
    EvaluationSettings,
    PromotionPolicy,
    SearchConfig,
    SkillSpec,
    load_artifact,
    load_dataset_dir,
    optimize,
)

ENV_COLUMNS = ("date", "machine", "cpu", "cpus", "python", "gepa_version", "gepa_lab_version", "gepa_lab_commit",
               "gepa_lab_tree", "evaluators_tree")
FIELD_MAX_CHARS = 4000  # the reflection boundary's cap (docs/design.md §2.6), applied on the reference side too


# ================================================================ environment and reports

def _cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def lab_commit() -> str:
    """The checkout's commit, with `+dirty` when gepa_lab/ or evaluators/ have uncommitted changes."""
    try:
        commit = subprocess.run(["git", "-C", str(ROOT), "rev-parse", "--short", "HEAD"], capture_output=True,
                                text=True, check=True).stdout.strip()
        dirty = subprocess.run(["git", "-C", str(ROOT), "status", "--porcelain", "--", "gepa_lab", "evaluators"],
                               capture_output=True, text=True, check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return "unknown"
    return commit + ("+dirty" if dirty else "")


def tree_digest(folder: str) -> str:
    """sha256 (12 hex) over the .py files of a folder of the checkout, paths and contents: pins the
    exact code measured even when the working tree differs from the commit."""
    import hashlib

    digest = hashlib.sha256()
    for path in sorted((ROOT / folder).rglob("*.py")):
        digest.update(str(path.relative_to(ROOT)).encode() + b"\0" + path.read_bytes() + b"\0")
    return digest.hexdigest()[:12]


def environment() -> dict[str, str]:
    try:
        gepa_version = importlib.metadata.version("gepa")
    except importlib.metadata.PackageNotFoundError:
        gepa_version = "unknown"
    return {
        "date": datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC"),
        "machine": platform.platform(),
        "cpu": _cpu_model(),
        "cpus": str(os.cpu_count()),
        "python": platform.python_version(),
        "gepa_version": gepa_version,
        "gepa_lab_version": gepa_lab.__version__,
        "gepa_lab_commit": lab_commit(),
        "gepa_lab_tree": tree_digest("gepa_lab"),
        "evaluators_tree": tree_digest("evaluators"),
    }


class LoadMonitor:
    """Samples the 1-minute load average every few seconds while a benchmark runs (the machine is
    shared: the report says how busy it was)."""

    def __init__(self, every_s: float = 5.0) -> None:
        self.samples: list[float] = [os.getloadavg()[0]]
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, args=(every_s,), daemon=True, name="load-monitor")
        self._thread.start()
        self.started = time.perf_counter()

    def _run(self, every_s: float) -> None:
        while not self._stop.wait(every_s):
            self.samples.append(os.getloadavg()[0])

    def stop(self) -> str:
        self._stop.set()
        self.samples.append(os.getloadavg()[0])
        s = self.samples
        return (f"1-min load average during the run: min {min(s):.2f}, median {statistics.median(s):.2f}, "
                f"max {max(s):.2f} ({len(s)} samples; {os.cpu_count()} CPUs, shared with other users); "
                f"benchmark wall time {time.perf_counter() - self.started:.0f} s")


def header(title: str, env: dict[str, str], command: str, load: str, extra: Iterable[str] = ()) -> list[str]:
    return [
        f"# {title}",
        "",
        f"- date: {env['date']}",
        f"- machine: {env['machine']}, {env['cpus']} CPUs ({env['cpu']}), Python {env['python']}",
        f"- load: {load}",
        f"- versions: gepa {env['gepa_version']} (reference), gepa-lab {env['gepa_lab_version']} "
        f"(commit {env['gepa_lab_commit']}; source digests gepa_lab/ {env['gepa_lab_tree']}, evaluators/ "
        f"{env['evaluators_tree']})",
        f"- reproduce: `{command}`",
        *[f"- {line}" for line in extra],
        "",
    ]


def write_outputs(name: str, out_dir: Path, markdown: str, rows: Sequence[dict[str, Any]],
                  columns: Sequence[str], env: dict[str, str]) -> tuple[Path, Path]:
    """`<out_dir>/<name>.md` and `<out_dir>/<name>.csv` (each row = columns + the environment)."""
    out_dir.mkdir(parents=True, exist_ok=True)
    md, csv_path = out_dir / f"{name}.md", out_dir / f"{name}.csv"
    md.write_text(markdown if markdown.endswith("\n") else markdown + "\n")
    with csv_path.open("w", newline="") as fh:
        writer = csv.DictWriter(fh, fieldnames=[*columns, *ENV_COLUMNS], extrasaction="ignore")
        writer.writeheader()
        for row in rows:
            writer.writerow({**{c: _cell(row.get(c)) for c in columns}, **env})
    return md, csv_path


def _cell(value: Any) -> Any:
    if isinstance(value, float):
        return f"{value:.6g}"
    if isinstance(value, bool):
        return int(value)
    return "" if value is None else value


def add_common_args(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--quick", action="store_true",
                        help="a seconds-long smoke version (what the test runs); writes to experiments/reports/quick/ "
                             "unless --out-dir is given")
    parser.add_argument("--out-dir", default=None, help="where the .md and .csv go (default experiments/reports)")


def out_dir(args: argparse.Namespace) -> Path:
    if args.out_dir:
        return Path(args.out_dir)
    return QUICK_REPORTS if args.quick else REPORTS


def command_line(script: str, argv: Sequence[str]) -> str:
    shown, skip = [], False
    for arg in argv:
        if skip:
            skip = False
        elif arg == "--out-dir":
            skip = True
        elif not arg.startswith("--out-dir="):
            shown.append(arg)
    return " ".join(["python", f"experiments/{script}", *shown])


def fmt(x: float | None, digits: int = 3, signed: bool = False) -> str:
    if x is None or (isinstance(x, float) and math.isnan(x)):
        return "n/a"
    return f"{x:+.{digits}f}" if signed else f"{x:.{digits}f}"


def median(values: Iterable[float]) -> float:
    values = [v for v in values if v is not None and not math.isnan(v)]
    return statistics.median(values) if values else float("nan")


# ================================================================ statistics

def bootstrap_ci(values: Sequence[float], stat: Callable[[Sequence[float]], float] | None = None,
                 resamples: int = 10_000, confidence: float = 0.95, seed: int = 0) -> tuple[float, float]:
    """Percentile bootstrap interval of `stat` (default: the mean) over `values`."""
    import numpy as np

    data = np.asarray(list(values), dtype=float)
    if data.size == 0:
        return float("nan"), float("nan")
    rng = np.random.default_rng(seed)
    idx = rng.integers(0, data.size, size=(resamples, data.size))
    if stat is None:
        stats = data[idx].mean(axis=1)
    else:
        stats = np.array([stat(list(data[row])) for row in idx])
    alpha = (1 - confidence) / 2
    return float(np.quantile(stats, alpha)), float(np.quantile(stats, 1 - alpha))


def paired_diff_ci(a: Sequence[float], b: Sequence[float], **kw: Any) -> tuple[float, float, float]:
    """Mean of b - a (paired) and its bootstrap interval."""
    diffs = [y - x for x, y in zip(a, b, strict=True)]
    lo, hi = bootstrap_ci(diffs, **kw)
    return (statistics.fmean(diffs) if diffs else float("nan")), lo, hi


def mean_ci_text(values: Sequence[float], digits: int = 4, signed: bool = True) -> str:
    if not values:
        return "n/a"
    lo, hi = bootstrap_ci(values)
    return f"{fmt(statistics.fmean(values), digits, signed)} [{fmt(lo, digits, signed)}, {fmt(hi, digits, signed)}]"


def share_ci_text(flags: Sequence[bool]) -> str:
    if not flags:
        return "n/a (0 runs)"
    values = [1.0 if f else 0.0 for f in flags]
    lo, hi = bootstrap_ci(values)
    return f"{sum(values):.0f}/{len(values)} = {statistics.fmean(values):.2f} [{lo:.2f}, {hi:.2f}]"


# ================================================================ timing wrappers

class Clock:
    """Thread-safe time spent inside the evaluator and the reflector, plus optional snapshots every
    `snapshot_every` metric calls: (wall, calls, evaluator s, reflector s)."""

    def __init__(self, snapshot_every: int = 0) -> None:
        self.lock = threading.Lock()
        self.eval_s = 0.0
        self.refl_s = 0.0
        self.calls = 0
        self.reflections = 0
        self.snapshot_every = snapshot_every
        self.snapshots: list[tuple[float, int, float, float]] = []
        self._next = snapshot_every

    def add_eval(self, seconds: float, cases: int) -> None:
        with self.lock:
            self.eval_s += seconds
            self.calls += cases

    def add_refl(self, seconds: float) -> None:
        with self.lock:
            self.refl_s += seconds
            self.reflections += 1

    def maybe_snapshot(self) -> None:
        """Called before an evaluation starts: records the state whenever `calls` crossed a multiple."""
        if self.snapshot_every and self.calls >= self._next:
            with self.lock:
                self.snapshots.append((time.perf_counter(), self.calls, self.eval_s, self.refl_s))
                while self._next <= self.calls:
                    self._next += self.snapshot_every


class TimedEvaluator:
    """A gepa-lab evaluator that times the inner one; `sleep_s` per case stands in for I/O latency
    (an LM call): threads overlap it. Every other attribute (fingerprint, quality_objective, ...) is
    the inner evaluator's."""

    def __init__(self, inner: Any, clock: Clock, sleep_s: float = 0.0) -> None:
        self.inner, self.clock, self.sleep_s = inner, clock, sleep_s

    def evaluate(self, artifact: Any, cases: list[Case], seed: int) -> list[Evaluation]:
        self.clock.maybe_snapshot()
        started = time.perf_counter()
        try:
            if self.sleep_s:
                time.sleep(self.sleep_s * len(cases))
            return self.inner.evaluate(artifact, cases, seed)
        finally:
            self.clock.add_eval(time.perf_counter() - started, len(cases))

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__") or name in ("inner", "clock", "sleep_s"):
            raise AttributeError(name)
        return getattr(self.inner, name)


class TimedReflector:
    """A gepa-lab reflector that times the inner one; `sleep_s` per reflection stands in for an LM."""

    def __init__(self, inner: Any, clock: Clock, sleep_s: float = 0.0) -> None:
        self.inner, self.clock, self.sleep_s = inner, clock, sleep_s

    def reflect(self, artifact: Any, component: str, records: list[dict[str, Any]]) -> Any:
        started = time.perf_counter()
        try:
            if self.sleep_s:
                time.sleep(self.sleep_s)
            return self.inner.reflect(artifact, component, records)
        finally:
            self.clock.add_refl(time.perf_counter() - started)

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__") or name in ("inner", "clock", "sleep_s"):
            raise AttributeError(name)
        return getattr(self.inner, name)


# ================================================================ SkillCraft-sim tasks

@dataclass(frozen=True)
class Task:
    family: str
    dataset: Dataset
    seed: SkillSpec


_TASKS: dict[str, Task] = {}


def families() -> tuple[str, ...]:
    """The families registered in SkillCraft-sim right now (read from its registry)."""
    from evaluators.skillcraft import family_names

    return tuple(family_names())


def skillcraft_task(family: str) -> Task:
    if family not in _TASKS:
        data = ROOT / "datasets" / "skillcraft" / family
        _TASKS[family] = Task(family, load_dataset_dir(data), load_artifact(data / "seed_skill.json"))
    return _TASKS[family]


def skillcraft_evaluator(family: str) -> Any:
    from evaluators.skillcraft import SkillCraftEvaluator

    return SkillCraftEvaluator(family=family)


def feedback_reflector(seed: int) -> Any:
    """The default offline reflector (`reflector=feedback`), seeded like the CLI does
    (`seed: ${search.random_seed}`)."""
    from evaluators.skillcraft import FeedbackReflector

    return FeedbackReflector(seed=seed)


# ================================================================ gepa-lab runner

@dataclass
class RunOutcome:
    """What either engine produced, in one shape."""

    engine: str
    seed_artifact: Any
    winner: Any
    winner_is_seed: bool
    search_calls: int  # metric calls of the search (seed validation included, holdout excluded)
    total_calls: int
    proposals: int
    accepted: int  # candidates added to the pool besides the seed
    wall_s: float
    eval_s: float = 0.0
    refl_s: float = 0.0
    eligible: bool | None = None  # gepa-lab's promotion decision (None for the reference)
    reason: str = ""
    pool_ids: tuple[str, ...] = ()
    holdout_delta_run: float | None = None  # gepa-lab: the run's own holdout delta
    history: list[tuple[int, float, Any]] = field(default_factory=list)  # (calls when joined, val mean, artifact)
    snapshots: list[tuple[float, int, float, float]] = field(default_factory=list)
    started: float = 0.0
    outcomes: dict[str, int] = field(default_factory=dict)  # gepa-lab: proposals per status

    def best_at(self, budget: int) -> Any:
        """Anytime view: the candidate the run would have returned had its search budget been
        `budget` (highest validation mean among candidates that joined by then; ties: earliest)."""
        best_mean, best = -1.0, self.seed_artifact
        for calls, mean, artifact in self.history:
            if calls <= budget and mean > best_mean:
                best_mean, best = mean, artifact
        return best


class PoolRecorder:
    """A gepa-lab tracker (public `Tracker` hooks): every pool member as it joins."""

    def __init__(self) -> None:
        self.members: list[tuple[int, float, Any]] = []
        self.outcomes: dict[str, int] = {}

    def candidate(self, info: Any) -> None:
        scores = [ev.score for ev in info.validation.evaluations]
        self.members.append((info.metric_calls, math.fsum(scores) / len(scores), info.artifact))

    def proposal(self, proposal: Any) -> None:
        key = "round_acceptance" if proposal.reason.startswith("round_acceptance") else proposal.status
        self.outcomes[key] = self.outcomes.get(key, 0) + 1


def run_lab(task: Task, search_budget: int, seed: int, *, evaluator: Any = None, reflector: Any = None,
            clock: Clock | None = None, workers: int = 1, run_dir: str | Path | None = None,
            promotion: PromotionPolicy | None = None, **search: Any) -> RunOutcome:
    """One gepa-lab run whose search may spend `search_budget` calls (the holdout reserve comes on top)."""
    promotion = promotion or PromotionPolicy()
    reserve = 2 * len(task.dataset.holdout) * promotion.holdout_repeats
    clock = clock or Clock()
    evaluator = evaluator or TimedEvaluator(skillcraft_evaluator(task.family), clock)
    reflector = reflector or TimedReflector(feedback_reflector(seed), clock)
    config = SearchConfig(max_metric_calls=search_budget + reserve, random_seed=seed, **search)
    pool = PoolRecorder()
    started = time.perf_counter()
    result = optimize(task.seed, task.dataset, evaluator, reflector, config,
                      evaluation=EvaluationSettings(workers=workers), promotion=promotion,
                      run_dir=run_dir, trackers=[pool])
    wall = time.perf_counter() - started
    winner_is_seed = result.best_id == result.seed_id
    holdout_calls = len(task.dataset.holdout) * promotion.holdout_repeats * (1 if winner_is_seed else 2)
    return RunOutcome(
        engine="gepa-lab", seed_artifact=task.seed, winner=result.best, winner_is_seed=winner_is_seed,
        search_calls=result.metric_calls - holdout_calls, total_calls=result.metric_calls,
        proposals=result.proposals, accepted=result.candidate_count - 1, wall_s=wall, eval_s=clock.eval_s,
        refl_s=clock.refl_s, eligible=result.promotion_eligible, reason=result.promotion_reason,
        pool_ids=tuple(p.id for p in result.pool),
        holdout_delta_run=result.candidate_holdout.score - result.baseline_holdout.score,
        history=pool.members, snapshots=list(clock.snapshots), started=started, outcomes=pool.outcomes)


# ================================================================ the reference (gepa.optimize)

class SilentLogger:
    """gepa's LoggerProtocol; swallows messages so printing is not charged to the reference."""

    def log(self, message: str) -> None:
        pass


def cap(text: str, limit: int = FIELD_MAX_CHARS) -> str:
    """The reflection boundary's cap: head 3/4 + marker + tail (as gepa-lab does)."""
    text = (text or "").strip()
    if len(text) <= limit:
        return text
    marker = "\n...[truncated]...\n"
    head = (limit - len(marker)) * 3 // 4
    tail = limit - len(marker) - head
    return text[:head] + marker + text[-tail:]


def encode_skill(skill: SkillSpec) -> dict[str, str]:
    """A SkillSpec as a gepa candidate (component -> text), in gepa-lab's round-robin order
    (steps, pitfalls, when_to_use, description); list components as JSON."""
    return {"steps": json.dumps(list(skill.steps)), "pitfalls": json.dumps(list(skill.pitfalls)),
            "when_to_use": skill.when_to_use, "description": skill.description}


def decode_skill(candidate: dict[str, str], name: str) -> SkillSpec:
    return SkillSpec(name=name, description=candidate["description"], when_to_use=candidate["when_to_use"],
                     steps=tuple(json.loads(candidate["steps"])), pitfalls=tuple(json.loads(candidate["pitfalls"])))


class LabEvaluatorAdapter:
    """A minimal `GEPAAdapter` over a gepa-lab evaluator: data instances are `Case`s, one case per
    evaluator call (as gepa-lab calls it). The reference has no seed argument, so the adapter picks
    the evaluation seed: `fixed` = one seed per run for every evaluation (a deterministic task);
    `fresh` = a new seed per evaluated batch (LM-like sampling noise, no pairing).
    `threads` > 0 adds `batch_evaluate` (and a parallel `evaluate`) on a thread pool of that size."""

    propose_new_texts = None  # the custom_candidate_proposer owns proposal generation

    def __init__(self, evaluator: Any, name: str, run_seed: int, seed_policy: str = "fixed", threads: int = 0):
        if seed_policy not in ("fixed", "fresh"):
            raise ValueError(f"seed_policy must be fixed or fresh, got {seed_policy!r}")
        self.evaluator, self.name, self.seed_policy = evaluator, name, seed_policy
        self._rng = random.Random(f"reference-adapter-{run_seed}")
        self._fixed = self._rng.getrandbits(63)
        self._lock = threading.Lock()
        self._decoded: dict[tuple[str, ...], SkillSpec] = {}
        self.pool = ThreadPoolExecutor(threads, thread_name_prefix="ref-eval") if threads else None
        if threads:
            self.batch_evaluate = self._batch_evaluate

    def close(self) -> None:
        if self.pool is not None:
            self.pool.shutdown(wait=True)

    def _seed(self) -> int:
        if self.seed_policy == "fixed":
            return self._fixed
        with self._lock:
            return self._rng.getrandbits(63)

    def artifact(self, candidate: dict[str, str]) -> SkillSpec:
        key = tuple(candidate[k] for k in ("steps", "pitfalls", "when_to_use", "description"))
        skill = self._decoded.get(key)
        if skill is None:
            skill = self._decoded[key] = decode_skill(candidate, self.name)
        return skill

    def _one(self, job: tuple[SkillSpec, Case, int]) -> Evaluation:
        artifact, case, seed = job
        return self.evaluator.evaluate(artifact, [case], seed)[0]

    def _run(self, jobs: list[tuple[SkillSpec, Case, int]]) -> list[Evaluation]:
        if self.pool is None or len(jobs) <= 1:
            return [self._one(job) for job in jobs]
        return list(self.pool.map(self._one, jobs))

    @staticmethod
    def _batch(cases: Sequence[Case], evals: Sequence[Evaluation], traces: bool) -> EvaluationBatch:
        return EvaluationBatch(outputs=[ev.output for ev in evals], scores=[ev.score for ev in evals],
                               trajectories=list(zip(cases, evals, strict=True)) if traces else None)

    def evaluate(self, batch: list[Case], candidate: dict[str, str], capture_traces: bool = False) -> EvaluationBatch:
        artifact, seed = self.artifact(candidate), self._seed()
        return self._batch(batch, self._run([(artifact, case, seed) for case in batch]), capture_traces)

    def _batch_evaluate(self, items: list[tuple[dict[str, str], list[Case]]]) -> list[EvaluationBatch]:
        """Every (candidate, case) pair of every item on the pool at once (seeds drawn in item order)."""
        jobs: list[tuple[SkillSpec, Case, int]] = []
        for candidate, cases in items:
            artifact, seed = self.artifact(candidate), self._seed()
            jobs += [(artifact, case, seed) for case in cases]
        evals = self._run(jobs)
        out, start = [], 0
        for _, cases in items:
            out.append(self._batch(cases, evals[start:start + len(cases)], True))
            start += len(cases)
        return out

    def make_reflective_dataset(self, candidate: dict[str, str], eval_batch: EvaluationBatch,
                                components_to_update: list[str]) -> dict[str, list[dict[str, Any]]]:
        """The records gepa-lab's reflection boundary builds (same keys, ids `case-N`, capped)."""
        records = [{"case_id": f"case-{n}", "input": cap(case.input), "expected": cap(case.expected or ""),
                    "score": float(ev.score), "output": cap(ev.output), "feedback": cap(ev.feedback),
                    "trace": cap(ev.trace)}
                   for n, (case, ev) in enumerate(eval_batch.trajectories or [], start=1)]
        return {name: records for name in components_to_update}


class ReflectorProposer:
    """`custom_candidate_proposer`: asks a gepa-lab reflector for the component, returns its new
    text; nothing when the reply is unusable or unchanged (then the reference skips the child,
    as gepa-lab records a rejected reflection)."""

    def __init__(self, reflector: Any, adapter: LabEvaluatorAdapter) -> None:
        self.reflector, self.adapter = reflector, adapter
        self.calls = 0

    def __call__(self, candidate: dict[str, str], reflective_dataset: Any,
                 components_to_update: list[str]) -> dict[str, str]:
        self.calls += 1
        parent = self.adapter.artifact(candidate)
        out: dict[str, str] = {}
        for name in components_to_update:
            reply = self.reflector.reflect(parent, name, [dict(r) for r in reflective_dataset[name]])
            value = reply.get(name) if isinstance(reply, dict) else None
            if isinstance(value, (list, tuple)):
                text = json.dumps([str(v).strip() for v in value if str(v).strip()])
            elif isinstance(value, str):
                text = value.strip()
            else:
                continue
            if text != candidate[name]:
                out[name] = text
        if out:
            try:
                self.adapter.artifact({**candidate, **out}).validate()
            except ValueError:
                return {}
        return out


class FitsBudget:
    """Stopper with gepa-lab's rule: stop before an iteration when one more proposal might not fit
    (`per_proposal` = 2 * minibatch + |validation|). With k = 1 the reference then never spends more
    than `budget` (its own max_metric_calls may overshoot by one iteration); with k > 1 its last
    iteration may overshoot by up to (k - 1) proposals, since it cannot shrink a round as gepa-lab
    does (reports count the calls each engine actually made)."""

    def __init__(self, budget: int, per_proposal: int) -> None:
        self.budget, self.per_proposal = budget, per_proposal

    def __call__(self, gepa_state: Any) -> bool:
        return gepa_state.total_num_evals + self.per_proposal > self.budget


def run_reference(task: Task, search_budget: int, seed: int, *, evaluator: Any = None, reflector: Any = None,
                  clock: Clock | None = None, k: int = 1, sampling: str = "independent", accept: str = "all",
                  threads: int = 0, seed_policy: str = "fixed", minibatch_size: int = 3,
                  candidate_selection: str = "pareto", run_dir: str | None = None,
                  holdout: bool = False) -> RunOutcome:
    """One `gepa.optimize` run on a SkillCraft-sim task through the public API: the adapter above,
    the offline reflector as `custom_candidate_proposer`, IndependentSampling(k) /
    SameParentSampling(k), AllImprovements / BestImprovement / TopKImprovements(n) (`accept` =
    all | best | top<n>). `holdout=True` also scores seed and winner on Holdout with the adapter
    (what gepa-lab's run includes), inside the timed wall."""
    clock = clock or Clock()
    evaluator = evaluator or TimedEvaluator(skillcraft_evaluator(task.family), clock)
    reflector = reflector or TimedReflector(feedback_reflector(seed), clock)
    adapter = LabEvaluatorAdapter(evaluator, task.seed.name, seed, seed_policy, threads)
    proposer = ReflectorProposer(reflector, adapter)
    per_proposal = 2 * min(minibatch_size, len(task.dataset.feedback)) + len(task.dataset.validation)
    sampler = SameParentSampling(k) if sampling == "same" else IndependentSampling(k)
    if accept == "all":
        selection: Any = AllImprovements()
    elif accept == "best":
        selection = BestImprovement()
    elif accept.startswith("top"):
        selection = TopKImprovements(int(accept[3:]))
    else:
        raise ValueError(f"accept must be all, best or top<n>, got {accept!r}")
    started = time.perf_counter()
    try:
        result = gepa.optimize(
            seed_candidate=encode_skill(task.seed), trainset=list(task.dataset.feedback),
            valset=list(task.dataset.validation), adapter=adapter, custom_candidate_proposer=proposer,
            candidate_selection_strategy=candidate_selection, reflection_minibatch_size=minibatch_size,
            stop_callbacks=[FitsBudget(search_budget, per_proposal)], skip_perfect_score=False, seed=seed,
            track_best_outputs=False, display_progress_bar=False, logger=SilentLogger(), run_dir=run_dir,
            sampling_strategy=sampler, selection_strategy=selection,
        )
        winner = adapter.artifact(result.best_candidate)
        total = int(result.total_metric_calls or 0)
        search_calls = total
        if holdout:
            cases = list(task.dataset.holdout)
            base = adapter.evaluate(cases, encode_skill(task.seed))
            total += len(cases)
            if result.best_idx != 0:
                adapter.evaluate(cases, result.best_candidate)
                total += len(cases)
            del base
        wall = time.perf_counter() - started
    finally:
        adapter.close()
    nval = len(task.dataset.validation)
    history = [((result.discovery_eval_counts[i] + nval) if i else nval, result.val_aggregate_scores[i],
                adapter.artifact(c)) for i, c in enumerate(result.candidates)]
    return RunOutcome(
        engine="gepa", seed_artifact=task.seed, winner=winner, winner_is_seed=result.best_idx == 0,
        search_calls=search_calls, total_calls=total, proposals=proposer.calls,
        accepted=len(result.candidates) - 1, wall_s=wall, eval_s=clock.eval_s, refl_s=clock.refl_s,
        history=history, snapshots=list(clock.snapshots), started=started)


# ================================================================ the holdout re-measure

FRESH_HOLDOUT_SEEDS = tuple(random.Random("gepa-lab-benchmarks-fresh-holdout").getrandbits(63) for _ in range(20))


class Remeasure:
    """Scores artifacts on a family's Holdout with fresh seeds (none used by any run), caching by
    artifact content; delta = mean over seeds x cases of (winner - seed), paired per (case, seed)."""

    def __init__(self, seeds: Sequence[int] = FRESH_HOLDOUT_SEEDS) -> None:
        self.seeds = tuple(seeds)
        self._evaluators: dict[str, Any] = {}
        self._scores: dict[tuple[str, str], list[float]] = {}

    def scores(self, family: str, artifact: Any) -> list[float]:
        key = (family, json.dumps(artifact.to_dict(), sort_keys=True))
        got = self._scores.get(key)
        if got is None:
            evaluator = self._evaluators.setdefault(family, skillcraft_evaluator(family))
            cases = skillcraft_task(family).dataset.holdout
            got = [ev.score for s in self.seeds for c in cases for ev in evaluator.evaluate(artifact, [c], s)]
            self._scores[key] = got
        return got

    def delta(self, family: str, winner: Any, seed_artifact: Any) -> float:
        w, s = self.scores(family, winner), self.scores(family, seed_artifact)
        return math.fsum(a - b for a, b in zip(w, s, strict=True)) / len(w)


# ================================================================ quality runs on SkillCraft-sim

_REMEASURE: Remeasure | None = None


def quality_job(spec: dict[str, Any]) -> dict[str, Any]:
    """One run + the holdout re-measure of its winner (and of the anytime winners at `checkpoints`).

    spec: engine (gepa-lab | gepa), family, seed, budget, label, `search` (gepa-lab SearchConfig
    fields), `ref` (run_reference keywords), optional checkpoints (search budgets < budget).
    A top-level function so process pools can run it; each process keeps its own re-measure cache."""
    global _REMEASURE
    if _REMEASURE is None:
        _REMEASURE = Remeasure()
    task = skillcraft_task(spec["family"])
    if spec["engine"] == "gepa-lab":
        out = run_lab(task, spec["budget"], spec["seed"], **spec.get("search", {}))
    else:
        out = run_reference(task, spec["budget"], spec["seed"], **spec.get("ref", {}))
    delta = _REMEASURE.delta(spec["family"], out.winner, out.seed_artifact)
    row = {"label": spec.get("label", spec["engine"]), "engine": spec["engine"], "family": spec["family"],
           "seed": spec["seed"], "budget": spec["budget"], "search_calls": out.search_calls,
           "total_calls": out.total_calls, "proposals": out.proposals, "accepted": out.accepted,
           "winner_is_seed": out.winner_is_seed, "eligible": out.eligible, "reason": out.reason,
           "run_holdout_delta": out.holdout_delta_run, "holdout_delta": delta, "worse": delta < 0,
           "calls_per_accepted": out.search_calls / out.accepted if out.accepted else None,
           "gain_per_1k_calls": delta / out.search_calls * 1000,
           "dropped_by_round_acceptance": out.outcomes.get("round_acceptance", 0), "pool_ids": out.pool_ids}
    for b in spec.get("checkpoints", ()):
        row[f"holdout_delta_at_{b}"] = _REMEASURE.delta(spec["family"], out.best_at(b), out.seed_artifact)
    return row


def study_table(rows: Sequence[dict[str, Any]], labels: Sequence[str], baseline: str) -> list[str]:
    """One line per configuration: re-measured holdout gain, its paired difference to `baseline`
    (by family and seed), gain per 1k calls, acceptance and cost figures."""
    key = {(r["label"], r["family"], r["seed"]): r for r in rows}
    lines = [f"| configuration | runs | holdout gain, mean [95 % CI] | minus {baseline} (paired) [95 % CI] "
             "| gain per 1k calls | accepted / run | metric calls per accepted | winner worse than seed "
             "| promoted (of them worse) |", "|---|---|---|---|---|---|---|---|---|"]
    for label in labels:
        mine = [r for r in rows if r["label"] == label]
        if not mine:
            continue
        if label == baseline:
            diff = "—"
        else:
            pairs = [(key[(baseline, r["family"], r["seed"])]["holdout_delta"], r["holdout_delta"]) for r in mine
                     if (baseline, r["family"], r["seed"]) in key]
            m, lo, hi = paired_diff_ci([a for a, _ in pairs], [b for _, b in pairs])
            diff = f"{m:+.4f} [{lo:+.4f}, {hi:+.4f}]"
        accepted = sum(r["accepted"] for r in mine)
        promoted = [r for r in mine if r["eligible"]]
        lines.append(
            f"| {label} | {len(mine)} | {mean_ci_text([r['holdout_delta'] for r in mine])} | {diff} "
            f"| {statistics.fmean(r['gain_per_1k_calls'] for r in mine):+.4f} "
            f"| {accepted / len(mine):.1f} "
            f"| {(sum(r['search_calls'] for r in mine) / accepted) if accepted else float('nan'):.1f} "
            f"| {sum(r['worse'] for r in mine)}/{len(mine)} "
            f"| {len(promoted)} ({sum(r['worse'] for r in promoted)}) |")
    return lines


def family_list(arg: str, quick: bool) -> tuple[list[str], tuple[str, ...]]:
    registered = families()
    fams = list(registered) if arg == "all" else [f.strip() for f in arg.split(",") if f.strip()]
    if quick and arg == "all":
        fams = fams[:1]
    unknown = [f for f in fams if f not in registered]
    if unknown:
        raise SystemExit(f"unknown famil(ies) {unknown}; registered: {', '.join(registered)}")
    return fams, registered


def families_note(fams: Sequence[str], registered: Sequence[str]) -> str:
    note = f"families: {', '.join(fams)} (registered now: {', '.join(registered)})"
    if len(registered) < 5:
        note += (f" — the other {5 - len(registered)} of the five planned families are not in the registry yet; "
                 "rerun the script when they are")
    return note


# ================================================================ running many runs

def parallel_map(fn: Callable[[Any], Any], items: Sequence[Any], jobs: int) -> list[Any]:
    """Map over processes (results in order). For quality studies only — never for timings."""
    if jobs <= 1 or len(items) <= 1:
        return [fn(item) for item in items]
    with ProcessPoolExecutor(jobs) as pool:
        return list(pool.map(fn, items, chunksize=1))


def fingerprint(*parts: Any) -> str:
    """A short stable digest (Python's hash() is salted per process)."""
    import hashlib

    return hashlib.sha256(json.dumps(parts, default=str).encode()).hexdigest()[:12]


def temp_run_dir() -> tempfile.TemporaryDirectory[str]:
    return tempfile.TemporaryDirectory(prefix="gepa-bench-")
