"""The evaluator boundary: every case the engine scores goes through `CaseRunner.run`.

It checks each reply against the contract, serves and fills the evaluation cache, spreads cases
over workers, applies the per-call timeout, and classifies failures: transient ones (timeouts,
connection errors, 429 / 5xx, declared types) are retried with backoff and, when retries run
out, scored as a failure that is never cached; anything else is a bug that stops the run.

Cases go to the evaluator one per call unless it declares `evaluates_batches = True`; either
way a case's result depends only on (artifact, case, seed), so results are the same for every
worker count.
"""

from __future__ import annotations

import math
import re
import threading
from collections.abc import Sequence
from concurrent.futures import Executor, ProcessPoolExecutor, ThreadPoolExecutor
from concurrent.futures import TimeoutError as FutureTimeout
from dataclasses import replace
from typing import Any

from tenacity import Retrying, retry_if_exception, stop_after_attempt, wait_exponential

from gepa_lab.core.artifacts import Artifact
from gepa_lab.core.contracts import Case, Evaluation, Evaluator
from gepa_lab.core.errors import (
    EvaluatorContractError,
    EvaluatorError,
    RunAborted,
    declared_retryable,
    describe,
    is_transient,
)
from gepa_lab.core.settings import EvaluationSettings
from gepa_lab.runs.cache import EvaluationCache


_SURROGATE = re.compile("[\ud800-\udfff]")


def _valid_text(text: str) -> str:
    """Lone surrogates cannot be encoded (JSON file, SQLite, model request): make them U+FFFD."""
    if text.isascii():
        return text
    return _SURROGATE.sub("\ufffd", text)


def _checked(ev: object, wanted: set[str], seen: set[str]) -> Evaluation:
    if not isinstance(ev, Evaluation):
        raise EvaluatorContractError(f"evaluator returned {type(ev).__name__}, expected gepa_lab.Evaluation")
    if ev.case_id not in wanted:
        raise EvaluatorContractError(f"unexpected evaluation case {ev.case_id!r}")
    if ev.case_id in seen:
        raise EvaluatorContractError(f"duplicate evaluation case {ev.case_id!r}")
    score = ev.score
    if type(score) is not float:
        if isinstance(score, bool) or not isinstance(score, (int, float)):
            raise EvaluatorContractError(f"case {ev.case_id!r} score must be finite and within [0, 1], got {score!r}")
        ev = replace(ev, score=float(score))
    if not (0.0 <= ev.score <= 1.0):  # also false for NaN
        raise EvaluatorContractError(f"case {ev.case_id!r} score must be finite and within [0, 1], got {score!r}")
    for name, value in ev.objectives.items():
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
            raise EvaluatorContractError(f"case {ev.case_id!r} objective {name!r} must be finite, got {value!r}")
    texts = (ev.output, ev.feedback, ev.trace)
    for text_field, text in zip(("output", "feedback", "trace"), texts, strict=True):
        if not isinstance(text, str):
            raise EvaluatorContractError(f"case {ev.case_id!r} {text_field} must be a string")
    cleaned = tuple(_valid_text(t) for t in texts)
    if cleaned != texts:
        ev = replace(ev, output=cleaned[0], feedback=cleaned[1], trace=cleaned[2])
    return ev


def check_batch(cases: Sequence[Case], results: object) -> list[Evaluation]:
    """Validate one evaluator reply and return it in the request's case order."""
    if not isinstance(results, (list, tuple)):
        raise EvaluatorContractError(f"evaluator must return a list of Evaluation, got {type(results).__name__}")
    if len(results) != len(cases):
        raise EvaluatorContractError(f"expected {len(cases)} evaluation results, got {len(results)}")
    wanted = {c.id for c in cases}
    by_id: dict[str, Evaluation] = {}
    for ev in results:
        checked = _checked(ev, wanted, by_id.keys())  # type: ignore[arg-type]
        by_id[checked.case_id] = checked
    for case in cases:
        if case.id not in by_id:
            raise EvaluatorContractError(f"missing evaluation case {case.id!r}")
    return [by_id[c.id] for c in cases]


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


def _process_evaluate(artifact: Artifact, cases: list[Case], seed: int) -> object:
    assert _PROCESS_EVALUATOR is not None
    return _PROCESS_EVALUATOR.evaluate(artifact, cases, seed)


class CaseRunner:
    def __init__(self, evaluator: Evaluator, settings: EvaluationSettings | None = None,
                 cache: EvaluationCache | None = None):
        self.evaluator = evaluator
        self.settings = settings or EvaluationSettings()
        self.cache = cache
        self.name = type(evaluator).__name__
        self.fingerprint = evaluator_fingerprint(evaluator)
        self.batched = getattr(evaluator, "evaluates_batches", False) is True
        declared = declared_retryable(evaluator)
        self._retrying = Retrying(
            stop=stop_after_attempt(self.settings.max_retries + 1),
            wait=wait_exponential(multiplier=self.settings.retry_backoff_s),
            retry=retry_if_exception(lambda exc: is_transient(exc, declared)),
            reraise=True,
        )
        self._declared = declared
        self.consecutive_failures = 0
        self._threads: ThreadPoolExecutor | None = None
        self._processes: Executor | None = None

    def close(self) -> None:
        for pool in (self._threads, self._processes):
            if pool is not None:
                pool.shutdown(wait=False, cancel_futures=True)
        self._threads = self._processes = None

    # -- one evaluator call ---------------------------------------------------------------
    def _call(self, artifact: Artifact, cases: list[Case], seed: int) -> list[Evaluation]:
        timeout = self.settings.timeout_s
        if self.settings.backend == "process":
            if self._processes is None:
                self._processes = ProcessPoolExecutor(self.settings.workers, initializer=_process_init,
                                                      initargs=(self.evaluator,))
            future = self._processes.submit(_process_evaluate, artifact, cases, seed)
            try:
                return check_batch(cases, future.result(timeout=timeout))
            except FutureTimeout as exc:
                raise TimeoutError(f"evaluation exceeded the {timeout:g}s timeout") from exc
        if timeout is None:
            return check_batch(cases, self.evaluator.evaluate(artifact, cases, seed))
        # A thread cannot be killed: a timed-out call is abandoned (daemon) and counts as failed.
        box: dict[str, Any] = {}

        def target() -> None:
            try:
                box["value"] = self.evaluator.evaluate(artifact, cases, seed)
            except BaseException as exc:  # re-raised in the caller's thread
                box["error"] = exc

        worker = threading.Thread(target=target, daemon=True, name="gepa-eval-timeout")
        worker.start()
        worker.join(timeout)
        if worker.is_alive():
            raise TimeoutError(f"evaluation exceeded the {timeout:g}s timeout")
        if "error" in box:
            raise box["error"]
        return check_batch(cases, box["value"])

    def _evaluate(self, artifact: Artifact, artifact_id: str, cases: list[Case],
                  seed: int) -> list[tuple[Evaluation, str | None]]:
        """(evaluation, error) per case; a transient failure that outlasted the retries is a
        failed evaluation (score 0, never cached), anything else raises."""
        try:
            evaluations = self._retrying(self._call, artifact, cases, seed)
        except EvaluatorContractError:
            raise
        except Exception as exc:
            if not is_transient(exc, self._declared):
                where = f"case {cases[0].id!r}" if len(cases) == 1 else f"{len(cases)} cases from {cases[0].id!r}"
                raise EvaluatorError(
                    f"evaluator {self.name} raised {describe(exc)} on {where}; this is a bug, not a "
                    "task failure (fix the evaluator, then resume the run; declare transient error "
                    "types in `retryable_exceptions`)"
                ) from exc
            error = describe(exc)
            attempts = self.settings.max_retries + 1
            return [(Evaluation(case.id, 0.0, feedback=f"evaluation failed after {attempts} attempt(s): {error}",
                                objectives={"evaluation_failed": 1.0}), error) for case in cases]
        if self.cache is not None:
            self.cache.put_many([(artifact_id, ev.case_id, seed, self.fingerprint, ev) for ev in evaluations])
        return [(ev, None) for ev in evaluations]

    # -- a batch of cases ------------------------------------------------------------------
    def run(self, artifact: Artifact, artifact_id: str, cases: Sequence[Case], seed: int) -> list[Evaluation]:
        found: dict[str, tuple[Evaluation, str | None]] = {}
        if self.cache is not None:
            for case in cases:
                hit = self.cache.get(artifact_id, case.id, seed, self.fingerprint)
                if hit is not None:
                    found[case.id] = (hit, None)
        misses = [c for c in cases if c.id not in found]
        out: list[Evaluation] = []
        if not self.batched and (self.settings.workers == 1 or len(misses) <= 1):
            for case in cases:  # one at a time: the failure guard trips before paying for more
                evaluation, error = found.get(case.id) or self._evaluate(artifact, artifact_id, [case], seed)[0]
                self._count(error)
                out.append(evaluation)
            return out
        if self.batched:
            outcomes = self._evaluate(artifact, artifact_id, misses, seed) if misses else []
        else:
            if self._threads is None:
                self._threads = ThreadPoolExecutor(self.settings.workers, thread_name_prefix="gepa-case")
            outcomes = [got for [got] in self._threads.map(
                lambda case: self._evaluate(artifact, artifact_id, [case], seed), misses)]
        found.update((ev.case_id, (ev, error)) for ev, error in outcomes)
        for case in cases:  # the failure guard counts in case order, whatever the timing
            evaluation, error = found[case.id]
            self._count(error)
            out.append(evaluation)
        return out

    def _count(self, error: str | None) -> None:
        if error is None:
            self.consecutive_failures = 0
            return
        self.consecutive_failures += 1
        if self.consecutive_failures >= self.settings.max_consecutive_failures:
            raise RunAborted(f"aborting: {self.consecutive_failures} consecutive evaluations failed (last: "
                             f"{error}); fix the evaluator or provider, then resume the run")
