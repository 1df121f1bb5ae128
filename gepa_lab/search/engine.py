"""Run lifecycle (docs/design.md §3): validate, score the seed, search, select, holdout, promote,
submit.

The engine owns the budget, the run's single seeded RNG (inside the search state), the retry
policy around the reflector and the checkpoint; the strategy (`strategy.py`) runs one iteration;
trackers (the run record, progress, MLflow) observe through `Trackers` and never steer.
"""

from __future__ import annotations

import logging
import math
import random
import threading
import time
import uuid
from collections.abc import Callable, Iterable, Sequence
from concurrent.futures import ThreadPoolExecutor, wait
from contextlib import nullcontext
from dataclasses import asdict
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from gepa_lab.core.artifacts import Artifact, artifact_id
from gepa_lab.core.contracts import (
    Case,
    Dataset,
    Evaluation,
    Evaluator,
    Reflector,
    RevisionSubmitter,
)
from gepa_lab.core.errors import (
    GepaLabError,
    ReflectorError,
    ReflectorUnavailable,
    ResumeError,
    describe,
)
from gepa_lab.core.events import (
    CandidateInfo,
    IterationStats,
    Proposal,
    ResumePoint,
    RunInfo,
    ScoredBatch,
    Tracker,
)
from gepa_lab.core.result import Result
from gepa_lab.core.settings import (
    EvaluationSettings,
    PromotionPolicy,
    ReflectionSettings,
    SearchConfig,
)
from gepa_lab.runs.cache import EvaluationCache
from gepa_lab.runs.checkpoint import Checkpoint, CheckpointStore
from gepa_lab.runs.lock import RunLock
from gepa_lab.runs.record import RunRecorder
from gepa_lab.search.evaluation import CaseRunner, evaluator_fingerprint
from gepa_lab.search.outcome import ALGORITHM, build_result
from gepa_lab.search.preflight import (
    check_protocols,
    declared_price,
    holdout_reserve,
    iterations_allowed,
    validate_request,
)
from gepa_lab.search.retry import RetryPolicy
from gepa_lab.search.state import Budget, Candidate, SearchState, draw_seed
from gepa_lab.search.strategy import iteration_calls, plan_round, run_round
from gepa_lab.search.submission import submit_winner
from gepa_lab.tracking import Trackers

log = logging.getLogger("gepa_lab")


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="milliseconds")


def _reflector_usage(reflector: Reflector) -> tuple[float, int]:
    """Reflectors that pay for LM calls expose a cumulative `total_cost_usd` and `total_tokens`."""
    cost, tokens = getattr(reflector, "total_cost_usd", 0.0), getattr(reflector, "total_tokens", 0)
    return (float(cost) if isinstance(cost, (int, float)) and math.isfinite(cost) else 0.0,
            int(tokens) if isinstance(tokens, int) and not isinstance(tokens, bool) else 0)


class CostCapReached(GepaLabError):
    """The money cap cannot cover the next case (search: it ends with `cost_budget`)."""

    partial: tuple[str, str, int, tuple[Evaluation, ...]] | None = None  # a batch cut short by the cap

    def __init__(self, phase: str, spent: float, price: float, cap: float):
        where = {"validation": "scoring the seed on Validation"}.get(phase, f"the {phase} phase")
        super().__init__(f"cost budget ${cap:g} cannot cover {where}: ${spent:.4f} spent, about ${price:.4f} per "
                         "case, with the holdout comparison reserved (raise search.max_cost_usd and resume)")
        self.phase = phase


class _Run:
    """One run's mutable context: scoring (budget, records), reflection, checkpoints, stop rules."""

    def __init__(self, *, dataset: Dataset, reflector: Reflector, config: SearchConfig, policy: PromotionPolicy,
                 runner: CaseRunner, trackers: Trackers, store: CheckpointStore | None, experiment_id: str,
                 identity: dict[str, Any], reflection: ReflectionSettings, quality_objective: str | None,
                 price: float | None = None, transfer_runner: CaseRunner | None = None):
        self.dataset = dataset
        self.price = price  # USD per case the evaluator declares, until a price is observed
        self.policy = policy
        self.quality_objective = quality_objective
        self.reserve = holdout_reserve(dataset, policy, transfer_runner is not None)
        self.reflector = reflector
        self.config = config
        self.runner = runner
        self.transfer_runner = transfer_runner  # the second evaluator of the transfer check, if any
        self.trackers = trackers
        self.store = store
        self.experiment_id = experiment_id
        self.identity = identity
        self.batches = 0
        self.task_cost_usd = 0.0  # nominal: cached results count too, so resumes replay exactly
        self.reflection_cost_usd = 0.0
        self.reflection_tokens = 0
        # Read only from reflectors that meter LM usage (two attribute reads a round otherwise).
        self._metered = hasattr(reflector, "total_cost_usd") or hasattr(reflector, "total_tokens")
        self.elapsed_before = 0.0
        self.started = time.monotonic()
        self.state: SearchState | None = None
        self._retry = RetryPolicy(reflector, reflection.max_retries, reflection.retry_backoff_s)
        self._lock = threading.Lock()
        self._proposals = (ThreadPoolExecutor(config.parallel_proposals, thread_name_prefix="gepa-proposal")
                           if config.parallel_proposals > 1 else None)

    def close(self) -> None:
        if self._proposals is not None:
            self._proposals.shutdown(wait=False, cancel_futures=True)

    # -- the two boundaries ------------------------------------------------------------------
    def evaluate(self, artifact: Artifact, candidate_id: str, cases: Sequence[Case], seed: int,
                 phase: str, runner: CaseRunner | None = None) -> tuple[Evaluation, ...]:
        """Pay for one batch (thread-safe: a round's proposals call it concurrently). `runner`:
        another evaluator's (the transfer check); default the run's."""
        assert self.state is not None
        runner = runner or self.runner
        cases = list(cases)
        if self.config.max_cost_usd is None or self.config.parallel_proposals > 1:
            with self._lock:  # spent before the call: an evaluation that fails still consumed its calls
                self.state.budget.used += len(cases)
            return tuple(runner.run(artifact, candidate_id, cases, seed))
        # A money cap (one proposal at a time): pay a worker-sized chunk at a time, checking in between.
        evaluations: list[Evaluation] = []
        step = max(1, self.runner.settings.workers)
        for start in range(0, len(cases), step):
            chunk = cases[start:start + step]
            try:
                self._check_cost(len(cases) - start, phase, evaluations)
            except CostCapReached as exc:  # what this batch already paid for is still recorded
                if evaluations:
                    exc.partial = (phase, candidate_id, seed, tuple(evaluations))
                raise
            self.state.budget.used += len(chunk)
            evaluations += runner.run(artifact, candidate_id, chunk, seed)
        return tuple(evaluations)

    def emit(self, phase: str, candidate_id: str, seed: int, evaluations: tuple[Evaluation, ...]) -> ScoredBatch:
        """Record a scored batch: its index, its cost, the trackers (always in a fixed order)."""
        self._add_cost(evaluations)
        batch = ScoredBatch(self.batches, phase, candidate_id, seed, evaluations)
        self.batches += 1
        self.trackers.evaluation(batch)
        return batch

    def score(self, artifact: Artifact, candidate_id: str, cases: Sequence[Case], seed: int,
              phase: str, runner: CaseRunner | None = None) -> ScoredBatch:
        return self.emit(phase, candidate_id, seed, self.evaluate(artifact, candidate_id, cases, seed, phase, runner))

    def map(self, fn: Callable[[Any], Any], items: Iterable[Any]) -> list[Any]:
        """Run a round's proposals concurrently (k > 1) or in line (k = 1)."""
        items = list(items)
        if self._proposals is None or len(items) <= 1:
            return [fn(item) for item in items]
        futures = [self._proposals.submit(fn, item) for item in items]
        wait(futures)  # every proposal settles before the first failure is raised: nothing still runs
        return [f.result() for f in futures]

    def _add_cost(self, evaluations: Sequence[Evaluation]) -> None:
        costs = [ev.objectives["cost_usd"] for ev in evaluations if "cost_usd" in ev.objectives]
        if costs:
            self.task_cost_usd += math.fsum(costs)

    def per_case_price(self, paid: Sequence[Evaluation] = ()) -> float:
        """Observed USD per evaluated case, or the evaluator's declared price before any."""
        assert self.state is not None
        if self.state.budget.used:
            unemitted = math.fsum(ev.objectives.get("cost_usd", 0.0) for ev in paid)
            return (self.task_cost_usd + unemitted) / self.state.budget.used
        return self.price or 0.0

    def _check_cost(self, remaining: int, phase: str, paid: Sequence[Evaluation]) -> None:
        """Stop before paying for a case the money cap cannot cover: during the search the holdout
        comparison stays reserved, during the seed's validation the whole batch must still fit.
        `paid`: this batch's evaluations so far (not yet emitted, so not yet in task_cost_usd)."""
        cap = self.config.max_cost_usd
        assert cap is not None and self.state is not None
        price = self.per_case_price(paid)
        spent = (self.task_cost_usd + self.reflection_cost_usd
                 + math.fsum(ev.objectives.get("cost_usd", 0.0) for ev in paid))
        if phase.startswith("holdout"):
            need = price
        elif self.state.pool:  # searching: this case plus the holdout reserve
            need = price * (1 + self.reserve)
        else:  # the seed: all of its validation plus the reserve (a pre-flight at the observed price)
            need = price * (remaining + self.reserve)
        if spent + need > cap + 1e-12:
            raise CostCapReached(phase, spent, price, cap)

    def reflect(self, artifact: Artifact, component: str, records: list[dict[str, Any]]) -> Any:
        try:
            return self._retry(self.reflector.reflect, artifact, component, records)
        except Exception as exc:
            name = type(self.reflector).__name__
            if self._retry.transient(exc):
                raise ReflectorUnavailable(f"reflector {name} kept failing: {describe(exc)}") from exc
            raise ReflectorError(
                f"reflector {name} raised {describe(exc)} reflecting on {component!r}; this is a bug, not "
                "a bad reply (fix the reflector, then resume the run; declare transient error types in "
                "`retryable_exceptions`)") from exc

    # -- checkpoints -------------------------------------------------------------------------
    def elapsed(self) -> float:
        return self.elapsed_before + time.monotonic() - self.started

    def checkpoint(self, finished: bool = False) -> None:
        if self.store is not None:
            self.store.save(Checkpoint(self.experiment_id, self.identity, self.state, self.batches,
                                       self.task_cost_usd, self.reflection_cost_usd, self.elapsed(), finished,
                                       self.reflection_tokens))

    def restore(self, cp: Checkpoint) -> None:
        self.state = cp.state
        self.batches = cp.batches
        self.task_cost_usd = cp.task_cost_usd
        self.reflection_cost_usd = cp.reflection_cost_usd
        self.reflection_tokens = cp.reflection_tokens
        self.elapsed_before = cp.elapsed_s

    # -- lifecycle ---------------------------------------------------------------------------
    def init_seed(self, seed: Artifact, seed_id: str) -> None:
        rng = random.Random(self.config.random_seed)
        validation_seed = draw_seed(rng)  # first draw
        # Then one per holdout repeat, before the search, so the seed's holdout scores depend only
        # on the random seed, never on how long the search ran.
        holdout_seeds = [draw_seed(rng) for _ in range(self.policy.holdout_repeats)] if self.dataset.holdout else []
        self.state = SearchState(rng=rng, budget=Budget(self.config.max_metric_calls), validation_seed=validation_seed,
                                 holdout_seeds=holdout_seeds)
        batch = self.score(seed, seed_id, self.dataset.validation, validation_seed, "validation")
        self.state.add(Candidate(seed_id, seed, None, None, None, 0, batch.evaluations, self.state.budget.used))
        self.trackers.candidate(CandidateInfo(seed_id, seed, None, None, None, batch, self.state.budget.used))
        self.checkpoint()

    def round_size(self) -> tuple[int, str | None]:
        """Proposals the next round may make (up to parallel_proposals), or 0 and the stop reason.
        Every budget check covers the whole round and keeps the holdout comparison affordable."""
        state, config = self.state, self.config
        assert state is not None
        k = config.parallel_proposals
        if config.max_iterations is not None:
            k = min(k, config.max_iterations - state.iteration)
            if k <= 0:
                return 0, "max_iterations"
        per_proposal = iteration_calls(config.minibatch_size, self.dataset)
        k = min(k, max(0, state.budget.max_calls - state.budget.used - self.reserve) // per_proposal)
        if k <= 0:
            return 0, "metric_budget"
        if config.max_cost_usd is not None:
            per_reflection = self.reflection_cost_usd / max(1, state.proposals)
            spent = self.task_cost_usd + self.reflection_cost_usd
            one = self.per_case_price() * per_proposal + per_reflection
            k = min(k, int((config.max_cost_usd - spent - self.per_case_price() * self.reserve) // one)
                    if one > 0 else k)
            if k <= 0:
                return 0, "cost_budget"
        if config.time_limit_s is not None and self.elapsed() >= config.time_limit_s:
            return 0, "time_limit"
        return k, None

    def search(self) -> None:
        state = self.state
        assert state is not None
        while state.stop_reason is None:
            k, reason = self.round_size()
            if reason is not None:
                state.stop_reason = reason
                break
            cost_before, tokens_before = _reflector_usage(self.reflector) if self._metered else (0.0, 0)
            plans = plan_round(state, self.dataset, self.config, k)
            try:
                proposals = run_round(plans, state, self.dataset, self.config, self.evaluate, self.emit,
                                      self.reflect, self.map)
            except CostCapReached as exc:
                log.warning("stopping the search mid-proposal: %s", exc)
                if exc.partial is not None:
                    self.emit(*exc.partial)
                state.stop_reason = "cost_budget"
                break
            except ReflectorUnavailable as exc:
                # A provider that stays down ends the search cleanly; the holdout still runs.
                log.error("stopping the search: %s", exc)
                self.trackers.note("reflector_failed", {"iteration": state.iteration, "error": str(exc)})
                state.stop_reason = "reflector_error"
                break
            finally:
                if self._metered:
                    cost_after, tokens_after = _reflector_usage(self.reflector)
                    self.reflection_cost_usd += max(0.0, cost_after - cost_before)
                    self.reflection_tokens += max(0, tokens_after - tokens_before)
            for proposal in proposals:
                self._report(proposal)
            self.checkpoint()  # after whole rounds: a resume replays an interrupted round exactly
        self.checkpoint()

    def _report(self, proposal: Proposal) -> None:
        state = self.state
        assert state is not None
        state.proposals += 1
        if proposal.status == "accepted":
            joined = state.get(str(proposal.candidate_id))
            assert proposal.validation_batch is not None
            self.trackers.candidate(CandidateInfo(joined.id, joined.artifact, joined.parent_id, joined.component,
                                                  joined.iteration, proposal.validation_batch, joined.metric_calls,
                                                  joined.rationale))
        self.trackers.proposal(proposal)
        if self.trackers.wants("iteration"):
            best = state.best()
            self.trackers.iteration(IterationStats(state.iteration, best.id, best.mean, len(state.pool),
                                                   state.front_size(), state.budget.used, state.proposals,
                                                   self.task_cost_usd, self.reflection_cost_usd))
        state.iteration += 1

    def finish(self, seed: Artifact, seed_id: str) -> Result:
        """Final selection, paired holdout comparison (every repeat), promotion decision."""
        state, dataset = self.state, self.dataset
        assert state is not None
        best = state.best()
        base_repeats: list[tuple[Evaluation, ...]] = []
        cand_repeats: list[tuple[Evaluation, ...]] = []
        for holdout_seed in state.holdout_seeds:
            base = self.score(seed, seed_id, dataset.holdout, holdout_seed, "holdout-baseline").evaluations
            base_repeats.append(base)
            cand_repeats.append(base if best.id == seed_id else self.score(
                best.artifact, best.id, dataset.holdout, holdout_seed, "holdout-candidate").evaluations)
        transfer: tuple[tuple[Evaluation, ...], tuple[Evaluation, ...]] | None = None
        if self.transfer_runner is not None and best.id != seed_id:  # the first holdout seed, once more
            runner, holdout_seed = self.transfer_runner, state.holdout_seeds[0]
            transfer = (
                self.score(seed, seed_id, dataset.holdout, holdout_seed, "holdout-transfer-baseline",
                           runner).evaluations,
                self.score(best.artifact, best.id, dataset.holdout, holdout_seed, "holdout-transfer-candidate",
                           runner).evaluations)
        return build_result(experiment_id=self.experiment_id, state=state, dataset=dataset, config=self.config,
                            policy=self.policy, quality_objective=self.quality_objective,
                            digests=self.identity["digests"], base_repeats=base_repeats, cand_repeats=cand_repeats,
                            costs={"task": self.task_cost_usd, "reflection": self.reflection_cost_usd},
                            reflection_tokens=self.reflection_tokens,
                            transfer_evaluator=self.transfer_runner.name if self.transfer_runner else None,
                            transfer=transfer)


def optimize(
    seed: Artifact,
    dataset: Dataset,
    evaluator: Evaluator,
    reflector: Reflector,
    config: SearchConfig | None = None,
    *,
    evaluation: EvaluationSettings | None = None,
    reflection: ReflectionSettings | None = None,
    promotion: PromotionPolicy | None = None,
    submitter: RevisionSubmitter | None = None,
    submit: bool = False,
    run_dir: str | Path | None = None,
    resume: bool = False,
    trackers: list[Tracker] | tuple[Tracker, ...] = (),
    name: str = "default",
    run_config: dict[str, Any] | None = None,
    transfer: Evaluator | None = None,
) -> Result:
    """Run one GEPA experiment and decide whether its winner may be promoted.

    `run_dir` gets the auditable run record, the evaluation cache and checkpoints; `resume=True`
    continues the interrupted run recorded there and ends with the result an uninterrupted run
    would have had. `trackers` observe the run (progress, MLflow); `name` and `run_config` only
    label it for them. `transfer`: a second evaluator (another model, agent or configuration)
    under which the winner must also beat the seed on Holdout before it is eligible.
    """
    config, evaluation = config or SearchConfig(), evaluation or EvaluationSettings()
    reflection, promotion = reflection or ReflectionSettings(), promotion or PromotionPolicy()
    for settings in (config, evaluation, reflection, promotion):
        settings.validate()  # dataclasses are mutable: re-check what a caller may have changed
    validate_request(seed, dataset, config, promotion, submit, submitter, declared_price(evaluator),
                     transfer=transfer is not None)
    check_protocols(evaluator, reflector, submitter, transfer)
    path = Path(run_dir) if run_dir is not None else None
    with RunLock(path) if path is not None else nullcontext():
        return _locked_run(seed, dataset, evaluator, reflector, config, evaluation, reflection, promotion,
                           submitter, submit, path, resume, trackers, name, run_config, transfer)


def _locked_run(seed: Artifact, dataset: Dataset, evaluator: Evaluator, reflector: Reflector, config: SearchConfig,
                evaluation: EvaluationSettings, reflection: ReflectionSettings, promotion: PromotionPolicy,
                submitter: RevisionSubmitter | None, submit: bool, path: Path | None, resume: bool,
                trackers: list[Tracker] | tuple[Tracker, ...], name: str, run_config: dict[str, Any] | None,
                transfer: Evaluator | None) -> Result:
    store = CheckpointStore(path) if path is not None else None
    digests, seed_id = dataset.digests(), artifact_id(seed)
    identity = {"digests": digests, "seed_id": seed_id, "evaluator": evaluator_fingerprint(evaluator),
                "search": asdict(config), "promotion": asdict(promotion)}
    if transfer is not None:  # absent otherwise: runs without one keep their identity
        identity["transfer"] = evaluator_fingerprint(transfer)
    checkpoint: Checkpoint | None = None
    if resume:
        if store is None:
            raise ResumeError("resume needs the run directory of the interrupted run (run_dir=...)")
        checkpoint = store.resume(identity, config.max_metric_calls)
        experiment_id = checkpoint.experiment_id
    else:
        if store is not None and store.exists():
            raise ResumeError(f"{path} already holds a run: resume it (resume={path}) or use a new run directory")
        experiment_id = str(uuid.uuid4())

    sinks: list[Tracker] = [RunRecorder(path)] if path is not None else []
    fanout = Trackers([*sinks, *trackers])
    cache = EvaluationCache(path) if path is not None else None
    runner = CaseRunner(evaluator, evaluation, cache)
    transfer_runner = CaseRunner(transfer, evaluation, cache) if transfer is not None else None
    quality = getattr(evaluator, "quality_objective", None)
    run = _Run(dataset=dataset, reflector=reflector, config=config, policy=promotion, runner=runner, trackers=fanout,
               store=store, experiment_id=experiment_id, identity=identity, reflection=reflection,
               quality_objective=quality if isinstance(quality, str) else None, price=declared_price(evaluator),
               transfer_runner=transfer_runner)
    resume_point = None
    if checkpoint is not None:
        run.restore(checkpoint)
        resume_point = ResumePoint(checkpoint.state.iteration if checkpoint.state else 0, checkpoint.batches)
    elif store is not None:
        run.checkpoint()  # the run's identity is on disk before anything is spent
    least, most = iterations_allowed(config, dataset, promotion, transfer is not None)
    log.info("pre-flight: the metric budget (%d calls) allows %d to %d iterations%s", config.max_metric_calls,
             least, most, "" if config.max_iterations is None else f" (max_iterations {config.max_iterations})")
    full_config = {"search": asdict(config), "evaluation": asdict(evaluation), "reflection": asdict(reflection),
                   "promotion": asdict(promotion), **(run_config or {})}
    failure: Exception | None = None
    try:
        # Inside the try: if a later tracker fails to start, the ones already started are ended.
        fanout.start(RunInfo(experiment_id, name, ALGORITHM, _now(), dataset, digests, seed, seed_id, config,
                             full_config, submit, str(path) if path else None, resume_point,
                             simulated=getattr(evaluator, "simulated", False) is True))
        try:
            if run.state is None:
                run.init_seed(seed, seed_id)
            run.search()
            result = run.finish(seed, seed_id)
            result.links = fanout.links()
        finally:
            run.close()
            runner.close()
            if transfer_runner is not None:
                transfer_runner.close()
            if cache is not None:
                cache.close()
        if submit:
            try:
                submit_winner(result, dataset, submitter)
            except Exception as exc:  # the search finished: its result (and why submission failed) is kept
                failure = exc
        fanout.finish(result)
    except BaseException as exc:
        fanout.fail(exc)  # an interrupt while trackers finish leaves a resumable run too
        raise
    run.checkpoint(finished=True)  # only now: a run interrupted before this point resumes
    if failure is not None:
        failure.add_note(f"the run's result was recorded; submission_reason: {result.submission_reason}")
        raise failure
    return result
