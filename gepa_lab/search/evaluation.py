"""The evaluator boundary: every case the engine scores goes through `CaseRunner.run`.

One path for every case: the evaluation store (the run record's cache) first; then the evaluator,
one case per call (or every missing case in one call when it declares `evaluates_batches`),
spread over `workers`, each call under the per-call timeout and the retry policy; each reply is
checked against the contract and stored at once. A transient failure (timeout, connection
error, 429 / 5xx, a declared type) that outlasts the retries is scored 0 with its error as
feedback and never stored; anything else is a bug that stops the run. A case's result depends
only on (artifact, case, seed), so results are the same for every worker count.
"""

from __future__ import annotations

import hashlib
import json
import math
import re
import threading
from collections.abc import Iterable, Sequence
from concurrent.futures import Executor, ProcessPoolExecutor, ThreadPoolExecutor
from concurrent.futures import TimeoutError as FutureTimeout
from dataclasses import replace
from typing import Any

from gepa_lab.core.artifacts import Artifact
from gepa_lab.core.contracts import Case, Evaluation, Evaluator
from gepa_lab.core.errors import EvaluatorContractError, EvaluatorError, RunAborted, describe
from gepa_lab.core.fingerprint import fingerprint
from gepa_lab.core.settings import EvaluationSettings
from gepa_lab.runs.record import RunRecord
from gepa_lab.search.retry import RetryPolicy

_SURROGATE = re.compile("[\ud800-\udfff]")


def _checked(ev: object) -> Evaluation:
    if not isinstance(ev, Evaluation):
        raise EvaluatorContractError(f"evaluator returned {type(ev).__name__}, expected gepa_lab.Evaluation")
    case_id, score = ev.case_id, ev.score
    if isinstance(score, bool) or not isinstance(score, (int, float)) or not 0.0 <= score <= 1.0:
        raise EvaluatorContractError(f"case {case_id!r} score must be finite and within [0, 1], got {score!r}")
    for name, value in ev.objectives.items():
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
            raise EvaluatorContractError(f"case {case_id!r} objective {name!r} must be finite, got {value!r}")
    texts = (ev.output, ev.feedback, ev.trace)
    try:
        ascii_only = "".join(texts).isascii()
    except TypeError:
        text_field = ("output", "feedback", "trace")[[isinstance(t, str) for t in texts].index(False)]
        raise EvaluatorContractError(f"case {case_id!r} {text_field} must be a string") from None
    if not ascii_only:  # lone surrogates cannot be encoded (JSON file, model request): they become U+FFFD
        ev = replace(ev, output=_SURROGATE.sub("\ufffd", ev.output), feedback=_SURROGATE.sub("\ufffd", ev.feedback),
                     trace=_SURROGATE.sub("\ufffd", ev.trace))
    return ev if type(score) is float else replace(ev, score=float(score))


def check_batch(cases: Sequence[Case], results: object) -> list[Evaluation]:
    """Validate one evaluator reply and return it in the request's case order."""
    if not isinstance(results, (list, tuple)):
        raise EvaluatorContractError(f"evaluator must return a list of Evaluation, got {type(results).__name__}")
    if len(results) != len(cases):
        raise EvaluatorContractError(f"expected {len(cases)} evaluation results, got {len(results)}")
    checked = [_checked(ev) for ev in results]
    ids = [case.id for case in cases]
    if [ev.case_id for ev in checked] == ids:
        return checked
    # Another order: as many distinct wanted ids as cases requested, so none is missing.
    by_id: dict[str, Evaluation] = {}
    for ev in checked:
        if ev.case_id not in ids:
            raise EvaluatorContractError(f"unexpected evaluation case {ev.case_id!r}")
        if ev.case_id in by_id:
            raise EvaluatorContractError(f"duplicate evaluation case {ev.case_id!r}")
        by_id[ev.case_id] = ev
    return [by_id[i] for i in ids]


_PROCESS_EVALUATOR: Evaluator | None = None


def _process_init(evaluator: Evaluator) -> None:
    global _PROCESS_EVALUATOR
    _PROCESS_EVALUATOR = evaluator


def _process_evaluate(artifact: Artifact, cases: list[Case], seed: int) -> object:
    assert _PROCESS_EVALUATOR is not None
    return _PROCESS_EVALUATOR.evaluate(artifact, cases, seed)


class CaseRunner:
    def __init__(self, evaluator: Evaluator, settings: EvaluationSettings | None = None,
                 store: RunRecord | None = None, role: str = ""):
        """`role` keeps a second evaluator's results apart (the transfer check always runs its own
        evaluator, even one configured like the run's)."""
        self.evaluator = evaluator
        self.settings = settings or EvaluationSettings()
        self.store = store if store is not None else RunRecord(None)
        self.name = type(evaluator).__name__
        self.fingerprint = f"{role}:{fingerprint(evaluator)}" if role else fingerprint(evaluator)
        self._fingerprint_json = json.dumps(self.fingerprint)
        self.batched = getattr(evaluator, "evaluates_batches", False) is True
        self._retry = RetryPolicy(evaluator, self.settings.max_retries, self.settings.retry_backoff_s)
        self.consecutive_failures = 0
        self.paid = 0  # cases sent to the evaluator (not served by the store)
        self._threads: ThreadPoolExecutor | None = None
        self._processes: Executor | None = None

    def close(self) -> None:
        for pool in (self._threads, self._processes):
            if pool is not None:
                pool.shutdown(wait=False, cancel_futures=True)
        self._threads = self._processes = None

    def keys(self, artifact_id: str, case_ids: Iterable[str], seed: int) -> list[str]:
        """Cache keys: sha256 of the compact JSON array [artifact_id, case_id, seed, evaluator
        fingerprint], one per case id."""
        head, tail = f"[{json.dumps(artifact_id)},", f",{int(seed)},{self._fingerprint_json}]"
        return [hashlib.sha256(f"{head}{json.dumps(case_id)}{tail}".encode()).hexdigest() for case_id in case_ids]

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

    def _evaluate(self, artifact: Artifact, cases: Sequence[Case], keys: Sequence[str] | None,
                  seed: int) -> list[tuple[Evaluation, str | None]]:
        """(evaluation, error) per case, stored under its key as soon as the evaluator answers."""
        self.paid += len(cases)
        try:
            evaluations = self._retry(self._call, artifact, cases, seed)
        except EvaluatorContractError:
            raise
        except Exception as exc:
            if not self._retry.transient(exc):
                where = f"case {cases[0].id!r}" if len(cases) == 1 else f"{len(cases)} cases from {cases[0].id!r}"
                raise EvaluatorError(f"evaluator {self.name} raised {describe(exc)} on {where}; this is a bug, not a "
                                     "task failure (fix the evaluator, then resume the run; declare transient error "
                                     "types in `retryable_exceptions`)") from exc
            error = describe(exc)
            attempts = self.settings.max_retries + 1
            return [(Evaluation(case.id, 0.0, feedback=f"evaluation failed after {attempts} attempt(s): {error}",
                                objectives={"evaluation_failed": 1.0}), error) for case in cases]
        if keys is not None:
            self.store.store(zip(keys, evaluations, strict=True))
        return [(ev, None) for ev in evaluations]

    # -- a batch of cases ------------------------------------------------------------------
    def run(self, artifact: Artifact, artifact_id: str, cases: Sequence[Case], seed: int) -> list[Evaluation]:
        # Only a run record caches (it replays a cut run): within one run no (candidate, case, seed)
        # comes back (fresh seeds, deduplicated children), so an in-memory run computes no keys.
        keys = self.keys(artifact_id, (case.id for case in cases), seed) if self.store.persistent else None
        found: dict[int, tuple[Evaluation, str | None]] = {} if keys is None else {
            i: (hit, None) for i, key in enumerate(keys) if (hit := self.store.lookup(key)) is not None}
        misses = [i for i in range(len(cases)) if i not in found]
        if self.batched and misses:
            found.update(zip(misses, self._evaluate(artifact, [cases[i] for i in misses],
                                                    keys and [keys[i] for i in misses], seed), strict=True))
        elif self.settings.workers > 1 and len(misses) > 1:  # (a batched evaluator had every miss at once)
            if self._threads is None:
                self._threads = ThreadPoolExecutor(self.settings.workers, thread_name_prefix="gepa-case")
            found.update(zip(misses, [got for [got] in self._threads.map(
                lambda i: self._evaluate(artifact, [cases[i]], keys and [keys[i]], seed), misses)], strict=True))
        out = []
        # In case order, whatever the timing; a case not evaluated yet is evaluated now, one at a time,
        # so the failure guard trips before paying for more.
        for i, case in enumerate(cases):
            evaluation, error = found.get(i) or self._evaluate(artifact, [case], keys and [keys[i]], seed)[0]
            self.consecutive_failures = 0 if error is None else self.consecutive_failures + 1
            if self.consecutive_failures >= self.settings.max_consecutive_failures:  # >= 1, so `error` is set
                raise RunAborted(f"aborting: {self.consecutive_failures} consecutive evaluations failed (last: "
                                 f"{error}); fix the evaluator or provider, then resume the run")
            out.append(evaluation)
        return out
