"""The one place cases get evaluated: contract check, cache, retries, timeouts, workers.

Everything the engine scores goes through `CaseRunner.run`.
"""

from __future__ import annotations

import copy
import math
import threading
import time
from collections.abc import Sequence
from concurrent.futures import Executor, ProcessPoolExecutor, ThreadPoolExecutor
from concurrent.futures import TimeoutError as FutureTimeout
from dataclasses import dataclass

from gepa_lab.artifacts import Artifact
from gepa_lab.cache import EvaluationCache, cache_key
from gepa_lab.contracts import Case, Evaluation, Evaluator


class EvaluatorContractError(RuntimeError):
    """The evaluator broke its contract (DESIGN §2); the run stops."""


def _valid_text(text: str) -> str:
    """Lone surrogates cannot be encoded (JSON file, SQLite, model request): make them U+FFFD."""
    try:
        text.encode("utf-8")
        return text
    except UnicodeEncodeError:
        return text.encode("utf-8", "surrogatepass").decode("utf-8", "replace")


def check_batch(cases: Sequence[Case], results: object) -> list[Evaluation]:
    """Validate one evaluator reply and return it reordered to the request's case order."""
    if not isinstance(results, (list, tuple)):
        raise EvaluatorContractError(
            f"evaluator must return a list of Evaluation, got {type(results).__name__}"
        )
    if len(results) != len(cases):
        raise EvaluatorContractError(f"expected {len(cases)} evaluation results, got {len(results)}")
    wanted = {c.id for c in cases}
    by_id: dict[str, Evaluation] = {}
    for ev in results:
        if not isinstance(ev, Evaluation):
            raise EvaluatorContractError(
                f"evaluator returned {type(ev).__name__}, expected gepa_lab.Evaluation"
            )
        if ev.case_id not in wanted:
            raise EvaluatorContractError(f"unexpected evaluation case {ev.case_id!r}")
        if ev.case_id in by_id:
            raise EvaluatorContractError(f"duplicate evaluation case {ev.case_id!r}")
        score = ev.score
        if isinstance(score, bool) or not isinstance(score, (int, float)) or not math.isfinite(score) or not 0.0 <= score <= 1.0:
            raise EvaluatorContractError(
                f"case {ev.case_id!r} score must be finite and within [0, 1], got {score!r}"
            )
        for name, value in ev.objectives.items():
            if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
                raise EvaluatorContractError(f"case {ev.case_id!r} objective {name!r} must be finite, got {value!r}")
        for text_field in ("output", "feedback", "trace"):
            if not isinstance(getattr(ev, text_field), str):
                raise EvaluatorContractError(f"case {ev.case_id!r} {text_field} must be a string")
        by_id[ev.case_id] = Evaluation(
            ev.case_id, float(score), _valid_text(ev.output), _valid_text(ev.feedback), _valid_text(ev.trace),
            {str(k): float(v) for k, v in ev.objectives.items()},
        )
    for case in cases:
        if case.id not in by_id:
            raise EvaluatorContractError(f"missing evaluation case {case.id!r}")
    return [by_id[c.id] for c in cases]


class RunAborted(RuntimeError):
    """Too many evaluations failed in a row: a run where everything fails must not succeed."""


@dataclass(frozen=True)
class EvaluationSettings:
    workers: int = 1
    backend: str = "thread"  # thread | process
    timeout_s: float | None = None  # per case; None = no limit
    max_retries: int = 2
    retry_backoff_s: float = 0.5  # doubles per retry
    max_consecutive_failures: int = 10

    def validate(self) -> None:
        if self.workers < 1:
            raise ValueError("evaluation.workers must be at least 1")
        if self.backend not in ("thread", "process"):
            raise ValueError("evaluation.backend must be 'thread' or 'process'")
        if self.timeout_s is not None and self.timeout_s <= 0:
            raise ValueError("evaluation.timeout_s must be positive (or null for no limit)")
        if self.max_retries < 0 or self.retry_backoff_s < 0:
            raise ValueError("evaluation.max_retries and retry_backoff_s must not be negative")
        if self.max_consecutive_failures < 1:
            raise ValueError("evaluation.max_consecutive_failures must be at least 1")


def evaluator_fingerprint(evaluator: Evaluator) -> str:
    """Part of the cache key: a changed evaluator configuration must never hit old results."""
    custom = getattr(evaluator, "fingerprint", None)
    if callable(custom):
        return str(custom())
    return f"{type(evaluator).__module__}.{type(evaluator).__qualname__}"


_PROCESS_EVALUATOR: Evaluator | None = None


def _process_init(evaluator: Evaluator) -> None:
    global _PROCESS_EVALUATOR
    _PROCESS_EVALUATOR = evaluator


def _process_evaluate(artifact: Artifact, case: Case, seed: int) -> object:
    assert _PROCESS_EVALUATOR is not None
    return _PROCESS_EVALUATOR.evaluate(artifact, [case], seed)


@dataclass
class CaseOutcome:
    evaluation: Evaluation
    error: str | None = None  # set when every attempt failed


class CaseRunner:
    """Evaluates cases one at a time (cache, retries, timeouts, workers).

    Per-case calls make results independent of batching and of the worker count, since an
    evaluator's result depends only on (artifact, case, seed).
    """

    def __init__(self, evaluator: Evaluator, settings: EvaluationSettings | None = None,
                 cache: EvaluationCache | None = None):
        self.evaluator = evaluator
        self.settings = settings or EvaluationSettings()
        self.settings.validate()
        self.cache = cache
        self.fingerprint = evaluator_fingerprint(evaluator)
        self.consecutive_failures = 0
        self._fanout: ThreadPoolExecutor | None = None  # one waiter thread per in-flight case
        self._processes: Executor | None = None

    def _executor(self) -> Executor:
        if self._processes is None:
            self._processes = ProcessPoolExecutor(
                self.settings.workers, initializer=_process_init, initargs=(self.evaluator,)
            )
        return self._processes

    def close(self) -> None:
        for pool in (self._fanout, self._processes):
            if pool is not None:
                pool.shutdown(wait=False, cancel_futures=True)
        self._fanout = self._processes = None

    def _attempt(self, artifact: Artifact, case: Case, seed: int) -> Evaluation:
        # The evaluator gets copies: editing them must not corrupt the pool or the dataset.
        artifact, case = copy.deepcopy(artifact), copy.deepcopy(case)
        timeout = self.settings.timeout_s
        if self.settings.backend == "process":
            future = self._executor().submit(_process_evaluate, artifact, case, seed)
            try:
                return check_batch([case], future.result(timeout=timeout))[0]
            except FutureTimeout as exc:
                raise TimeoutError(f"case exceeded the {timeout:g}s timeout") from exc
        if timeout is None:
            return check_batch([case], self.evaluator.evaluate(artifact, [case], seed))[0]
        # A thread cannot be killed: a timed-out call is abandoned (daemon) and scored a failure.
        box: dict[str, object] = {}

        def target() -> None:
            try:
                box["value"] = self.evaluator.evaluate(artifact, [case], seed)
            except BaseException as exc:  # re-raised in the caller's thread
                box["error"] = exc

        worker = threading.Thread(target=target, daemon=True, name="gepa-eval-timeout")
        worker.start()
        worker.join(timeout)
        if worker.is_alive():
            raise TimeoutError(f"case exceeded the {timeout:g}s timeout")
        if "error" in box:
            raise box["error"]  # type: ignore[misc]
        return check_batch([case], box["value"])[0]

    def _evaluate_one(self, artifact: Artifact, case: Case, seed: int) -> CaseOutcome:
        last: BaseException | None = None
        attempts = self.settings.max_retries + 1
        for attempt in range(attempts):
            try:
                return CaseOutcome(self._attempt(artifact, case, seed))
            except EvaluatorContractError:
                raise
            except Exception as exc:  # evaluator bugs, provider errors, timeouts: retry then score 0
                last = exc
                if attempt + 1 < attempts:
                    time.sleep(self.settings.retry_backoff_s * (2**attempt))
        error = f"{type(last).__name__}: {last}"
        failed = Evaluation(
            case_id=case.id,
            score=0.0,
            feedback=f"evaluation failed after {attempts} attempt(s): {error}",
            objectives={"evaluation_failed": 1.0},
        )
        return CaseOutcome(failed, error=error)

    def _count(self, outcome: CaseOutcome) -> None:
        """Consecutive-failure guard, applied in case order so it does not depend on timing."""
        if outcome.error is None:
            self.consecutive_failures = 0
            return
        self.consecutive_failures += 1
        if self.consecutive_failures >= self.settings.max_consecutive_failures:
            raise RunAborted(
                f"aborting: {self.consecutive_failures} consecutive evaluations failed "
                f"(last: {outcome.error}); fix the evaluator, then resume the run"
            )

    def _lookup(self, artifact_id: str, case: Case, seed: int) -> CaseOutcome | None:
        if self.cache is None:
            return None
        hit = self.cache.get(cache_key(artifact_id, case.id, seed, self.fingerprint))
        return CaseOutcome(hit) if hit is not None else None

    def _fresh(self, artifact: Artifact, artifact_id: str, case: Case, seed: int) -> CaseOutcome:
        outcome = self._evaluate_one(artifact, case, seed)
        if self.cache is not None and outcome.error is None:  # failures are retried on resume
            self.cache.put(cache_key(artifact_id, case.id, seed, self.fingerprint), outcome.evaluation)
        return outcome

    def run(self, artifact: Artifact, artifact_id: str, cases: Sequence[Case], seed: int) -> list[CaseOutcome]:
        if self.settings.workers == 1:
            sequential: list[CaseOutcome] = []
            for case in cases:
                done = self._lookup(artifact_id, case, seed) or self._fresh(artifact, artifact_id, case, seed)
                self._count(done)  # aborts before spending more on a dead evaluator
                sequential.append(done)
            return sequential
        found = {c.id: self._lookup(artifact_id, c, seed) for c in cases}
        misses = [c for c in cases if found[c.id] is None]
        if misses:
            if self._fanout is None:
                self._fanout = ThreadPoolExecutor(self.settings.workers, thread_name_prefix="gepa-case")
            fresh = self._fanout.map(lambda c: self._fresh(artifact, artifact_id, c, seed), misses)
            found.update(zip((c.id for c in misses), fresh, strict=True))
        ordered: list[CaseOutcome] = []
        for case in cases:
            got = found[case.id]
            assert got is not None
            self._count(got)
            ordered.append(got)
        return ordered
