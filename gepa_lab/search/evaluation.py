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
import time
from collections.abc import Container, Sequence
from concurrent.futures import Executor, ProcessPoolExecutor, ThreadPoolExecutor
from concurrent.futures import TimeoutError as FutureTimeout
from dataclasses import replace
from typing import Any

from gepa_lab.core.artifacts import Artifact
from gepa_lab.core.contracts import Case, Evaluation, Evaluator
from gepa_lab.core.errors import EvaluatorContractError, EvaluatorError, RunAborted, describe
from gepa_lab.core.settings import EvaluationSettings
from gepa_lab.runs.cache import EvaluationCache
from gepa_lab.search.retry import RetryPolicy

_SURROGATE = re.compile("[\ud800-\udfff]")


def _valid_text(text: str) -> str:
    """Lone surrogates cannot be encoded (JSON file, SQLite, model request): make them U+FFFD."""
    if text.isascii():
        return text
    return _SURROGATE.sub("\ufffd", text)


def _checked(ev: object, wanted: Container[str], seen: Container[str]) -> Evaluation:
    if type(ev) is not Evaluation and not isinstance(ev, Evaluation):
        raise EvaluatorContractError(f"evaluator returned {type(ev).__name__}, expected gepa_lab.Evaluation")
    case_id, score = ev.case_id, ev.score
    if case_id not in wanted:
        raise EvaluatorContractError(f"unexpected evaluation case {case_id!r}")
    if case_id in seen:
        raise EvaluatorContractError(f"duplicate evaluation case {case_id!r}")
    if type(score) is not float:
        if isinstance(score, bool) or not isinstance(score, (int, float)):
            raise EvaluatorContractError(f"case {case_id!r} score must be finite and within [0, 1], got {score!r}")
        ev = replace(ev, score=float(score))
    if not 0.0 <= ev.score <= 1.0:  # also false for NaN
        raise EvaluatorContractError(f"case {case_id!r} score must be finite and within [0, 1], got {score!r}")
    for name, value in ev.objectives.items():
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
            raise EvaluatorContractError(f"case {case_id!r} objective {name!r} must be finite, got {value!r}")
    output, feedback, trace = ev.output, ev.feedback, ev.trace
    if type(output) is str and type(feedback) is str and type(trace) is str and (
            output.isascii() and feedback.isascii() and trace.isascii()):
        return ev  # the common case: nothing to check further
    for text_field, text in (("output", output), ("feedback", feedback), ("trace", trace)):
        if not isinstance(text, str):
            raise EvaluatorContractError(f"case {case_id!r} {text_field} must be a string")
    cleaned = (_valid_text(output), _valid_text(feedback), _valid_text(trace))
    if cleaned != (output, feedback, trace):
        ev = replace(ev, output=cleaned[0], feedback=cleaned[1], trace=cleaned[2])
    return ev


def check_batch(cases: Sequence[Case], results: object) -> list[Evaluation]:
    """Validate one evaluator reply and return it in the request's case order."""
    if not isinstance(results, (list, tuple)):
        raise EvaluatorContractError(f"evaluator must return a list of Evaluation, got {type(results).__name__}")
    if len(results) != len(cases):
        raise EvaluatorContractError(f"expected {len(cases)} evaluation results, got {len(results)}")
    if len(cases) == 1:  # the common per-case call
        return [_checked(results[0], (cases[0].id,), ())]
    wanted = {c.id for c in cases}
    by_id: dict[str, Evaluation] = {}
    for ev in results:
        checked = _checked(ev, wanted, by_id)
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
        self._retry = RetryPolicy(evaluator, self.settings.max_retries, self.settings.retry_backoff_s)
        # In-process, no timeout, nothing to cache: the evaluator can be called directly.
        self._plain = cache is None and self.settings.timeout_s is None and self.settings.backend == "thread"
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
        if timeout is None and self.settings.backend == "thread":
            return check_batch(cases, self.evaluator.evaluate(artifact, cases, seed))
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

    def _evaluate(self, artifact: Artifact, artifact_id: str, cases: Sequence[Case],
                  seed: int) -> list[tuple[Evaluation, str | None]]:
        """(evaluation, error) per case; a transient failure that outlasted the retries is a
        failed evaluation (score 0, never cached), anything else raises."""
        try:
            evaluations = self._retry(self._call, artifact, list(cases), seed)
        except EvaluatorContractError:
            raise
        except Exception as exc:
            return self._failed(exc, cases)
        if self.cache is not None:
            self.cache.put_many([(artifact_id, ev.case_id, seed, self.fingerprint, ev) for ev in evaluations])
        return [(ev, None) for ev in evaluations]

    def _retry_after(self, exc: Exception, artifact: Artifact, case: Case,
                     seed: int) -> tuple[Evaluation, str | None]:
        """The remaining attempts after a failed first one (no cache here: see `_plain`)."""
        if self._retry.later is None or not self._retry.transient(exc):
            return self._failed(exc, [case])[0]
        time.sleep(self._retry.backoff_s)
        try:
            return self._retry.later(self._call, artifact, [case], seed)[0], None
        except EvaluatorContractError:
            raise
        except Exception as again:
            return self._failed(again, [case])[0]

    def _failed(self, exc: Exception, cases: Sequence[Case]) -> list[tuple[Evaluation, str | None]]:
        if not self._retry.transient(exc):
            where = f"case {cases[0].id!r}" if len(cases) == 1 else f"{len(cases)} cases from {cases[0].id!r}"
            raise EvaluatorError(
                f"evaluator {self.name} raised {describe(exc)} on {where}; this is a bug, not a task "
                "failure (fix the evaluator, then resume the run; declare transient error types in "
                "`retryable_exceptions`)"
            ) from exc
        error = describe(exc)
        attempts = self.settings.max_retries + 1
        return [(Evaluation(case.id, 0.0, feedback=f"evaluation failed after {attempts} attempt(s): {error}",
                            objectives={"evaluation_failed": 1.0}), error) for case in cases]

    # -- a batch of cases ------------------------------------------------------------------
    def run(self, artifact: Artifact, artifact_id: str, cases: Sequence[Case], seed: int) -> list[Evaluation]:
        found: dict[str, tuple[Evaluation, str | None]] = {}
        if self.cache is not None:
            for case in cases:
                hit = self.cache.get(artifact_id, case.id, seed, self.fingerprint)
                if hit is not None:
                    found[case.id] = (hit, None)
        misses = [c for c in cases if c.id not in found] if found else cases
        out: list[Evaluation] = []
        if not self.batched and (self.settings.workers == 1 or len(misses) <= 1):
            for case in cases:  # one at a time: the failure guard trips before paying for more
                got = found.get(case.id) if found else None
                if got is None and self._plain:  # the common case, without the general path's layers
                    try:
                        out.append(check_batch((case,), self.evaluator.evaluate(artifact, [case], seed))[0])
                        self.consecutive_failures = 0
                        continue
                    except EvaluatorContractError:
                        raise
                    except Exception as exc:  # first attempt failed: retry (or classify) as usual
                        got = self._retry_after(exc, artifact, case, seed)
                evaluation, error = got or self._evaluate(artifact, artifact_id, [case], seed)[0]
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
