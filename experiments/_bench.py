"""Shared code of the side-by-side benchmarks in experiments/ (gepa-lab vs the reference `gepa`
library; a plain module, not a package: a script puts the repo root and experiments/ on sys.path).

- the environment a report states (date, machine, load, versions, the commit measured) and the
  writer of its Markdown + CSV (pandas; every CSV row repeats the environment);
- timing wrappers for an evaluator and a reflector (harness time = wall - evaluator - reflector);
- SkillCraft-sim tasks, a gepa-lab runner and a reference runner (`gepa.optimize` with the same
  evaluator as its adapter and the same offline reflector as its `reflection_strategy`);
- the holdout re-measure on fresh seeds; intervals from gepa-lab's own bootstrap
  (`gepa_lab.search.promotion.paired_interval`).

Only public names of both libraries are used.
"""

from __future__ import annotations

import os

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
os.environ.setdefault("MLFLOW_DISABLE_TELEMETRY", "true")

import argparse  # noqa: E402
import hashlib  # noqa: E402
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
from collections.abc import Iterable, Sequence  # noqa: E402
from concurrent.futures import ThreadPoolExecutor  # noqa: E402
from dataclasses import dataclass, field  # noqa: E402
from datetime import UTC, datetime  # noqa: E402
from pathlib import Path  # noqa: E402
from typing import Any  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
REPORTS = ROOT / "experiments" / "reports"
for _p in (str(ROOT), str(ROOT / "experiments")):
    if _p not in sys.path:
        sys.path.insert(0, _p)

import gepa  # noqa: E402
import pandas as pd  # noqa: E402
from gepa.core.adapter import EvaluationBatch  # noqa: E402
from gepa.proposer.reflective_mutation.reflection_lm import ReflectionProposal  # noqa: E402
from gepa.strategies.proposal_sampling import IndependentSampling  # noqa: E402
from joblib import Parallel, delayed  # noqa: E402

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
from gepa_lab.search.promotion import paired_interval  # noqa: E402

FIELD_MAX_CHARS = 4000  # the reflection boundary's cap (docs/design.md §2.6), applied on the reference side too


# ================================================================ environment and reports

def lab_commit() -> str:
    """The checkout's commit, `+dirty` when the measured code (gepa_lab/, evaluators/, the scripts)
    has uncommitted changes."""
    def git(*args: str) -> str:
        return subprocess.run(["git", "-C", str(ROOT), *args], capture_output=True, text=True, check=True).stdout

    try:
        dirty = git("status", "--porcelain", "--", "gepa_lab", "evaluators", "experiments", ":!experiments/reports")
        return git("rev-parse", "--short", "HEAD").strip() + ("+dirty" if dirty.strip() else "")
    except (OSError, subprocess.CalledProcessError):
        return "unknown"


def tree_digest(folder: str) -> str:
    """sha256 (12 hex) over a folder's .py files, paths and contents: the exact code measured."""
    digest = hashlib.sha256()
    for path in sorted((ROOT / folder).rglob("*.py")):
        digest.update(str(path.relative_to(ROOT)).encode() + b"\0" + path.read_bytes() + b"\0")
    return digest.hexdigest()[:12]


def environment() -> dict[str, str]:
    cpuinfo = Path("/proc/cpuinfo").read_text().splitlines() if Path("/proc/cpuinfo").exists() else []
    cpu = next((line.split(":", 1)[1].strip() for line in cpuinfo if line.startswith("model name")),
               platform.machine())
    return {
        "date": datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC"),
        "machine": platform.platform(), "cpu": cpu, "cpus": str(os.cpu_count()),
        "python": platform.python_version(), "gepa_version": importlib.metadata.version("gepa"),
        "gepa_lab_version": gepa_lab.__version__, "gepa_lab_commit": lab_commit(),
        "gepa_lab_tree": tree_digest("gepa_lab"), "evaluators_tree": tree_digest("evaluators"),
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
                f"max {max(s):.2f} ({len(s)} samples; {os.cpu_count()} CPUs, shared with other users' work); "
                f"benchmark wall time {time.perf_counter() - self.started:.0f} s")


def header(title: str, env: dict[str, str], command: str, load: str, extra: Iterable[str] = ()) -> list[str]:
    return [
        f"# {title}", "",
        f"- date: {env['date']}",
        f"- machine: {env['machine']}, {env['cpus']} CPUs ({env['cpu']}), Python {env['python']}",
        f"- load: {load}",
        f"- code measured: gepa-lab {env['gepa_lab_version']} at commit {env['gepa_lab_commit']} (source digests "
        f"gepa_lab/ {env['gepa_lab_tree']}, evaluators/ {env['evaluators_tree']}); this report is committed in "
        f"the commit after it; reference: gepa {env['gepa_version']}",
        f"- reproduce: `{command}`",
        *[f"- {line}" for line in extra], "",
    ]


def md_table(columns: Sequence[str], rows: Iterable[Sequence[Any]]) -> list[str]:
    return ["| " + " | ".join(columns) + " |", "|" + "---|" * len(columns),
            *("| " + " | ".join(str(c) for c in row) + " |" for row in rows)]


def add_common_args(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--quick", action="store_true",
                        help="a seconds-long smoke version (what the test runs); writes to a new temporary "
                             "folder unless --out-dir is given, never over the committed reports")
    parser.add_argument("--out-dir", default=None, help="where the .md and .csv go (default experiments/reports)")


def out_dir(args: argparse.Namespace) -> Path:
    if args.out_dir:
        return Path(args.out_dir)
    return Path(tempfile.mkdtemp(prefix="gepa-bench-quick-")) if args.quick else REPORTS


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


def write_outputs(name: str, args: argparse.Namespace, markdown: str, rows: Sequence[dict[str, Any]],
                  columns: Sequence[str], env: dict[str, str]) -> None:
    """`<name>.md` and `<name>.csv` (the columns, then the environment) in `out_dir(args)`."""
    folder = out_dir(args)
    folder.mkdir(parents=True, exist_ok=True)
    (folder / f"{name}.md").write_text(markdown.rstrip("\n") + "\n")
    frame = pd.DataFrame(list(rows)).reindex(columns=list(columns)).assign(**env)
    frame.to_csv(folder / f"{name}.csv", index=False, float_format="%.6g")
    print(markdown)
    print(f"wrote {folder / name}.md and .csv")


def median(values: Iterable[float]) -> float:
    kept = [v for v in values if v is not None and not math.isnan(v)]
    return statistics.median(kept) if kept else float("nan")


# ================================================================ statistics (gepa-lab's bootstrap)

def interval(values: Sequence[float]) -> tuple[float, float]:
    """95 % percentile bootstrap interval of the mean (10,000 resamples, fixed seed)."""
    return paired_interval(list(values), 0.95, 10_000, 0) if len(values) else (math.nan, math.nan)


def mean_ci_text(values: Sequence[float], digits: int = 4) -> str:
    if not values:
        return "n/a"
    lo, hi = interval(values)
    return f"{statistics.fmean(values):+.{digits}f} [{lo:+.{digits}f}, {hi:+.{digits}f}]"


def share_ci_text(flags: Sequence[bool]) -> str:
    if not flags:
        return "n/a (0 runs)"
    values = [1.0 if f else 0.0 for f in flags]
    lo, hi = interval(values)
    return f"{sum(values):.0f}/{len(values)} = {statistics.fmean(values):.2f} [{lo:.2f}, {hi:.2f}]"


# ================================================================ timing wrappers

class Clock:
    """Thread-safe time spent inside the evaluator and the reflector, plus optional snapshots every
    `snapshot_every` metric calls: (wall, calls, evaluator s, reflector s)."""

    def __init__(self, snapshot_every: int = 0) -> None:
        self.lock = threading.Lock()
        self.eval_s = self.refl_s = 0.0
        self.calls = 0
        self.snapshot_every = self._next = snapshot_every
        self.snapshots: list[tuple[float, int, float, float]] = []

    def add(self, seconds: float, cases: int = 0) -> None:
        with self.lock:
            if cases:
                self.eval_s += seconds
                self.calls += cases
            else:
                self.refl_s += seconds

    def maybe_snapshot(self) -> None:
        """Called before an evaluation starts: records the state whenever `calls` crossed a multiple."""
        if self.snapshot_every and self.calls >= self._next:
            with self.lock:
                self.snapshots.append((time.perf_counter(), self.calls, self.eval_s, self.refl_s))
                while self._next <= self.calls:
                    self._next += self.snapshot_every


class _Timed:
    """Times an inner evaluator or reflector into a Clock; `sleep_s` per case / per reflection stands
    in for I/O latency (an LM call) that threads overlap. Other attributes are the inner one's."""

    def __init__(self, inner: Any, clock: Clock, sleep_s: float = 0.0) -> None:
        self.inner, self.clock, self.sleep_s = inner, clock, sleep_s

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__") or name in ("inner", "clock", "sleep_s"):
            raise AttributeError(name)
        return getattr(self.inner, name)


class TimedEvaluator(_Timed):
    def evaluate(self, artifact: Any, cases: list[Case], seed: int) -> list[Evaluation]:
        self.clock.maybe_snapshot()
        started = time.perf_counter()
        try:
            if self.sleep_s:
                time.sleep(self.sleep_s * len(cases))
            return self.inner.evaluate(artifact, cases, seed)
        finally:
            self.clock.add(time.perf_counter() - started, len(cases))


class TimedReflector(_Timed):
    def reflect(self, artifact: Any, component: str, records: list[dict[str, Any]]) -> Any:
        started = time.perf_counter()
        try:
            if self.sleep_s:
                time.sleep(self.sleep_s)
            return self.inner.reflect(artifact, component, records)
        finally:
            self.clock.add(time.perf_counter() - started)


# ================================================================ SkillCraft-sim tasks

@dataclass(frozen=True)
class Task:
    family: str
    dataset: Dataset
    seed: SkillSpec


_TASKS: dict[str, Task] = {}


def families() -> tuple[str, ...]:
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
    """The default offline reflector (`reflector=feedback`), seeded as the CLI seeds it."""
    from evaluators.skillcraft import FeedbackReflector

    return FeedbackReflector(seed=seed)


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
    eval_s: float
    refl_s: float
    eligible: bool | None = None  # gepa-lab's promotion decision (None for the reference)
    pool_ids: tuple[str, ...] = ()
    holdout_delta_run: float | None = None  # gepa-lab: the run's own holdout delta
    snapshots: list[tuple[float, int, float, float]] = field(default_factory=list)
    started: float = 0.0


def timed_parts(family: str, seed: int, clock: Clock, case_ms: float = 0.0,
                reflect_ms: float = 0.0) -> tuple[TimedEvaluator, TimedReflector]:
    return (TimedEvaluator(skillcraft_evaluator(family), clock, case_ms / 1000),
            TimedReflector(feedback_reflector(seed), clock, reflect_ms / 1000))


# ================================================================ gepa-lab

def run_lab(task: Task, search_budget: int, seed: int, *, clock: Clock | None = None, case_ms: float = 0.0,
            reflect_ms: float = 0.0, workers: int = 1, run_dir: str | Path | None = None,
            **search: Any) -> RunOutcome:
    """One gepa-lab run whose search may spend `search_budget` calls (the holdout reserve comes on top)."""
    promotion = PromotionPolicy()
    reserve = 2 * len(task.dataset.holdout) * promotion.holdout_repeats
    clock = clock or Clock()
    evaluator, reflector = timed_parts(task.family, seed, clock, case_ms, reflect_ms)
    config = SearchConfig(max_metric_calls=search_budget + reserve, random_seed=seed, **search)
    started = time.perf_counter()
    result = optimize(task.seed, task.dataset, evaluator, reflector, config,
                      evaluation=EvaluationSettings(workers=workers), promotion=promotion, run_dir=run_dir)
    wall = time.perf_counter() - started
    winner_is_seed = result.best_id == result.seed_id
    holdout_calls = len(task.dataset.holdout) * promotion.holdout_repeats * (1 if winner_is_seed else 2)
    return RunOutcome(
        engine="gepa-lab", seed_artifact=task.seed, winner=result.best, winner_is_seed=winner_is_seed,
        search_calls=result.metric_calls - holdout_calls, total_calls=result.metric_calls,
        proposals=result.proposals, accepted=result.candidate_count - 1, wall_s=wall, eval_s=clock.eval_s,
        refl_s=clock.refl_s, eligible=result.promotion_eligible, pool_ids=tuple(p.id for p in result.pool),
        holdout_delta_run=result.holdout_delta, snapshots=list(clock.snapshots), started=started)


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
    return text[:head] + marker + text[-(limit - len(marker) - head):]


COMPONENTS = ("steps", "pitfalls", "when_to_use", "description")  # gepa-lab's round-robin order


def encode_skill(skill: SkillSpec) -> dict[str, str]:
    """A SkillSpec as a gepa candidate (component -> text); list components as JSON."""
    return {"steps": json.dumps(list(skill.steps)), "pitfalls": json.dumps(list(skill.pitfalls)),
            "when_to_use": skill.when_to_use, "description": skill.description}


def decode_skill(candidate: dict[str, str], name: str) -> SkillSpec:
    return SkillSpec(name=name, description=candidate["description"], when_to_use=candidate["when_to_use"],
                     steps=tuple(json.loads(candidate["steps"])), pitfalls=tuple(json.loads(candidate["pitfalls"])))


class LabEvaluatorAdapter:
    """A `GEPAAdapter` over a gepa-lab evaluator: data instances are `Case`s, one case per evaluator
    call (as gepa-lab calls it). The reference has no seed argument, so the adapter picks the
    evaluation seed (`seed_policy`):
    - `fixed`: one seed per run for every evaluation (a deterministic task);
    - `fresh`: a new seed per evaluated batch, validation included (LM-like noise, no pairing);
    - `paired`: gepa-lab's scheme: a new seed per iteration, drawn in the public
      `on_iteration_start` callback (the adapter is passed in `callbacks`), shared by the parent's
      and the child's minibatch; validation and holdout keep the run's one seed;
    - `unpaired`: gepa-lab's `paired_seeds=False`: a new seed per minibatch evaluation,
      validation and holdout keep the run's one seed.
    `threads` > 0 adds `batch_evaluate` (and a parallel `evaluate`) on a thread pool of that size."""

    propose_new_texts = None  # the reflection strategy owns proposal generation

    def __init__(self, evaluator: Any, task: Task, run_seed: int, seed_policy: str = "fixed", threads: int = 0):
        if seed_policy not in ("fixed", "fresh", "paired", "unpaired"):
            raise ValueError(f"seed_policy must be fixed, fresh, paired or unpaired, got {seed_policy!r}")
        self.evaluator, self.name, self.seed_policy = evaluator, task.seed.name, seed_policy
        self.feedback_ids = frozenset(c.id for c in task.dataset.feedback)
        self._rng = random.Random(f"reference-adapter-{run_seed}")
        self._fixed = self._iteration_seed = self._rng.getrandbits(63)
        self._lock = threading.Lock()
        self._decoded: dict[tuple[str, ...], SkillSpec] = {}
        self.pool = ThreadPoolExecutor(threads, thread_name_prefix="ref-eval") if threads else None
        if threads:
            self.batch_evaluate = self._batch_evaluate

    def close(self) -> None:
        if self.pool is not None:
            self.pool.shutdown(wait=True)

    def on_iteration_start(self, event: Any) -> None:
        if self.seed_policy == "paired":
            self._iteration_seed = self._rng.getrandbits(63)

    def _seed(self, cases: Sequence[Case]) -> int:
        minibatch = bool(cases) and cases[0].id in self.feedback_ids
        if self.seed_policy == "fixed" or (self.seed_policy != "fresh" and not minibatch):
            return self._fixed
        if self.seed_policy == "paired":
            return self._iteration_seed
        with self._lock:
            return self._rng.getrandbits(63)

    def artifact(self, candidate: dict[str, str]) -> SkillSpec:
        key = tuple(candidate[k] for k in COMPONENTS)
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
        artifact, seed = self.artifact(candidate), self._seed(batch)
        return self._batch(batch, self._run([(artifact, case, seed) for case in batch]), capture_traces)

    def _batch_evaluate(self, items: list[tuple[dict[str, str], list[Case]]]) -> list[EvaluationBatch]:
        """Every (candidate, case) pair of every item on the pool at once (seeds drawn in item order)."""
        jobs: list[tuple[SkillSpec, Case, int]] = []
        for candidate, cases in items:
            artifact, seed = self.artifact(candidate), self._seed(cases)
            jobs += [(artifact, case, seed) for case in cases]
        evals, out, start = self._run(jobs), [], 0
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


class LabReflection:
    """gepa's `ReflectionLM` (its `reflection_strategy`) over a gepa-lab reflector: `reflect_many`
    reflects an iteration's tasks concurrently, one thread per task (the reference's batched
    reflection; a `custom_candidate_proposer` would be called one task at a time). An unusable
    or unchanged reply proposes no text, so the reference skips the child, as gepa-lab records a
    rejected reflection."""

    def __init__(self, reflector: Any, adapter: LabEvaluatorAdapter) -> None:
        self.reflector, self.adapter = reflector, adapter
        self.calls = 0

    def _texts(self, candidate: dict[str, str], reflective_dataset: Any, components: list[str]) -> dict[str, str]:
        parent = self.adapter.artifact(candidate)
        out: dict[str, str] = {}
        for name in components:
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

    def reflect(self, candidate: dict[str, str], reflective_dataset: Any,
                components_to_update: list[str]) -> tuple[ReflectionProposal, LabReflection]:
        return self.reflect_many([(candidate, reflective_dataset, components_to_update)])[0]

    def reflect_many(self, jobs: list[Any]) -> list[tuple[ReflectionProposal, LabReflection]]:
        self.calls += len(jobs)
        if len(jobs) == 1:
            texts = [self._texts(*jobs[0])]
        else:
            with ThreadPoolExecutor(len(jobs), thread_name_prefix="ref-reflect") as pool:
                texts = list(pool.map(lambda job: self._texts(*job), jobs))
        return [(ReflectionProposal(new_texts=t), self) for t in texts]


class FitsBudget:
    """Stopper with gepa-lab's rule: stop before an iteration when one more proposal might not fit
    (`per_proposal` = 2 * minibatch + |validation|). With k = 1 the reference then never spends more
    than `budget`; with k > 1 its last iteration may overshoot by up to k - 1 proposals (it cannot
    shrink a round as gepa-lab does; reports count the calls each engine actually made)."""

    def __init__(self, budget: int, per_proposal: int) -> None:
        self.budget, self.per_proposal = budget, per_proposal

    def __call__(self, gepa_state: Any) -> bool:
        return gepa_state.total_num_evals + self.per_proposal > self.budget


def run_reference(task: Task, search_budget: int, seed: int, *, clock: Clock | None = None, case_ms: float = 0.0,
                  reflect_ms: float = 0.0, k: int = 1, threads: int = 0, seed_policy: str = "fixed",
                  run_dir: str | None = None, holdout: bool = False) -> RunOutcome:
    """One `gepa.optimize` run through its public API: the adapter above, the offline reflector
    as `reflection_strategy` (concurrent `reflect_many`), `IndependentSampling(k)`, Pareto parents,
    minibatch 3. `holdout=True` also scores seed and winner on Holdout with the adapter (what
    gepa-lab's run includes), inside the timed wall."""
    clock = clock or Clock()
    evaluator, reflector = timed_parts(task.family, seed, clock, case_ms, reflect_ms)
    adapter = LabEvaluatorAdapter(evaluator, task, seed, seed_policy, threads)
    reflection = LabReflection(reflector, adapter)
    per_proposal = 2 * min(3, len(task.dataset.feedback)) + len(task.dataset.validation)
    started = time.perf_counter()
    try:
        result = gepa.optimize(
            seed_candidate=encode_skill(task.seed), trainset=list(task.dataset.feedback),
            valset=list(task.dataset.validation), adapter=adapter, reflection_strategy=reflection,
            reflection_minibatch_size=3, stop_callbacks=[FitsBudget(search_budget, per_proposal)],
            skip_perfect_score=False, seed=seed, track_best_outputs=False, display_progress_bar=False,
            logger=SilentLogger(), run_dir=run_dir, sampling_strategy=IndependentSampling(k),
            callbacks=[adapter] if seed_policy == "paired" else None)
        search_calls = total = int(result.total_metric_calls or 0)
        if holdout:
            cases = list(task.dataset.holdout)
            for candidate in [encode_skill(task.seed)] + ([result.best_candidate] if result.best_idx else []):
                adapter.evaluate(cases, candidate)
                total += len(cases)
        wall = time.perf_counter() - started
    finally:
        adapter.close()
    return RunOutcome(
        engine="gepa", seed_artifact=task.seed, winner=adapter.artifact(result.best_candidate),
        winner_is_seed=result.best_idx == 0, search_calls=search_calls, total_calls=total,
        proposals=reflection.calls, accepted=len(result.candidates) - 1, wall_s=wall, eval_s=clock.eval_s,
        refl_s=clock.refl_s, snapshots=list(clock.snapshots), started=started)


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
        if key not in self._scores:
            evaluator = self._evaluators.setdefault(family, skillcraft_evaluator(family))
            cases = skillcraft_task(family).dataset.holdout
            self._scores[key] = [ev.score for s in self.seeds for c in cases
                                 for ev in evaluator.evaluate(artifact, [c], s)]
        return self._scores[key]

    def delta(self, family: str, winner: Any, seed_artifact: Any) -> float:
        w, s = self.scores(family, winner), self.scores(family, seed_artifact)
        return math.fsum(a - b for a, b in zip(w, s, strict=True)) / len(w)


_REMEASURE = Remeasure()


def quality_job(spec: dict[str, Any]) -> dict[str, Any]:
    """One untimed run + the holdout re-measure of its winner. spec: engine (gepa-lab | gepa),
    family, seed, budget, label, `search` (SearchConfig fields) or `ref` (run_reference keywords)."""
    task = skillcraft_task(spec["family"])
    if spec["engine"] == "gepa-lab":
        out = run_lab(task, spec["budget"], spec["seed"], **spec.get("search", {}))
    else:
        out = run_reference(task, spec["budget"], spec["seed"], **spec.get("ref", {}))
    delta = _REMEASURE.delta(spec["family"], out.winner, out.seed_artifact)
    return {"label": spec.get("label", spec["engine"]), "engine": spec["engine"], "family": spec["family"],
            "seed": spec["seed"], "budget": spec["budget"], "search_calls": out.search_calls,
            "total_calls": out.total_calls, "proposals": out.proposals, "accepted": out.accepted,
            "winner_is_seed": out.winner_is_seed, "eligible": out.eligible, "run_holdout_delta": out.holdout_delta_run,
            "holdout_delta": delta, "worse": delta < 0, "gain_per_1k_calls": delta / out.search_calls * 1000,
            "pool_ids": out.pool_ids}


def quality_jobs(specs: Sequence[dict[str, Any]], jobs: int) -> list[dict[str, Any]]:
    """Untimed runs over `jobs` processes (joblib), results in order. Never for timings."""
    return list(Parallel(n_jobs=jobs)(delayed(quality_job)(spec) for spec in specs))


def fingerprint(*parts: Any) -> str:
    """A short stable digest (Python's hash() is salted per process)."""
    return hashlib.sha256(json.dumps(parts, default=str).encode()).hexdigest()[:12]
