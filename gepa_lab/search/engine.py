"""A run, top to bottom (docs/design.md §3, docs/architecture.md): three stages over one record.

1. search   — score the seed on Validation, then rounds of proposals until a budget or a stop
              condition ends it; the state is recorded at every round end;
2. decision — the seed and the winner on Holdout (and under the transfer evaluator), the
              promotion rules; a finished search may be decided again under other settings;
3. submission — an eligible winner handed to the revision store (now or later).

`optimize` runs whichever stages the record does not hold yet. The ledger owns the budgets, the
scheduler the concurrency, the proposal pipeline the steps; trackers observe and never steer.
"""

from __future__ import annotations

import logging
import math
import random
import time
import uuid
from collections.abc import Sequence
from contextlib import nullcontext
from dataclasses import asdict, replace
from pathlib import Path
from typing import Any

from gepa_lab.core.artifacts import Artifact, artifact_dict, artifact_from_dict, artifact_id
from gepa_lab.core.contracts import Case, Dataset, Evaluation, Evaluator, Reflector, RevisionSubmitter
from gepa_lab.core.errors import AlreadyDone, GepaLabError, ReflectorError, ReflectorUnavailable, ResumeError, describe
from gepa_lab.core.events import CandidateInfo, IterationStats, Proposal, ResumePoint, RunInfo, ScoredBatch, Tracker
from gepa_lab.core.redact import read_secrets, without_known_secrets
from gepa_lab.core.result import Result
from gepa_lab.core.settings import EvaluationSettings, PromotionPolicy, ReflectionSettings, SearchConfig
from gepa_lab.runs.lock import RunLock
from gepa_lab.runs.looks import count_decision
from gepa_lab.runs.record import Recorded, RunRecord, now
from gepa_lab.search.evaluation import CaseRunner
from gepa_lab.search.identity import check_same_search, decision_settings, run_identity
from gepa_lab.search.ledger import CostCapReached, Ledger
from gepa_lab.search.outcome import ALGORITHM, build_result, promotion_outcome
from gepa_lab.search.planning import plan_round, proposal_calls
from gepa_lab.search.policies import Policies, build_policies
from gepa_lab.search.policies.stop import SearchView
from gepa_lab.search.preflight import Request, announce, check_request
from gepa_lab.search.promotion import case_means
from gepa_lab.search.proposal import Steps
from gepa_lab.search.retry import RetryPolicy
from gepa_lab.search.scheduler import Scheduler
from gepa_lab.search.state import Candidate, Pool, SearchState, draw_seed, validation_seeds
from gepa_lab.search.submission import submit_winner
from gepa_lab.tracking import Trackers

log = logging.getLogger("gepa_lab")


def run_rng(request: Request) -> tuple[random.Random, int, list[int]]:
    """The run's one RNG: its first draw is the validation seed, the next ones the holdout seeds (a
    pure function of the random seed, so the seed's holdout scores never depend on the search), and
    the search draws after them. Returns (rng, validation seed, holdout seeds)."""
    rng = random.Random(request.config.random_seed)
    validation_seed = draw_seed(rng)
    repeats = request.promotion.holdout_repeats if request.dataset.holdout else 0
    return rng, validation_seed, [draw_seed(rng) for _ in range(repeats)]


class Run:
    """One run's context: the record, the ledger, the state, the runners, the trackers."""

    def __init__(self, request: Request, trackers: Trackers, policies: Policies, record: RunRecord,
                 recorded: Recorded | None, experiment_id: str):
        self.request, self.trackers, self.policies = request, trackers, policies
        self.record, self.recorded, self.experiment_id = record, recorded, experiment_id
        config = request.config
        self.runner = CaseRunner(request.evaluator, request.evaluation, record)
        self.transfer_runner = (CaseRunner(request.transfer, request.evaluation, record, role="transfer")
                                if request.transfer else None)
        self.ledger = Ledger(config.max_metric_calls, request.holdout_reserve, config.max_cost_usd,
                             request.declared_price)
        self.scheduler = Scheduler(config.parallel_proposals)
        self.proposal_calls = proposal_calls(config.minibatch_size, request.dataset, repeats=config.validation_repeats)
        self.steps: Steps | None = None
        self._retry = RetryPolicy(request.reflector, request.reflection.max_retries, request.reflection.retry_backoff_s)
        self.metered = any(hasattr(request.reflector, a) for a in ("total_cost_usd", "total_tokens"))
        self.state: SearchState | None = None
        self.batches, self.elapsed_before, self.started, self.searching = 0, 0.0, time.monotonic(), False
        self.warnings: list[str] = []
        # The seed under the transfer evaluator on Holdout, scored before the search (a misconfigured
        # one is refused before anything else is paid) and reused by the decision.
        self.transfer_seed: tuple[Evaluation, ...] | None = None

    def close(self) -> None:
        for part in (self.scheduler, self.runner, self.transfer_runner, self.record):
            if part is not None:
                part.close()

    # -- scoring: pay (ledger), evaluate (runner), record (record + trackers) ----------------------
    def evaluate(self, artifact: Artifact, candidate_id: str, cases: Sequence[Case], seed: int,
                 phase: str, runner: CaseRunner | None = None) -> tuple[Evaluation, ...]:
        """The cases under `seed`; Validation under each of its repeat seeds, as per-case means (the
        repeats are cached under their own seeds, so a resume replays them)."""
        repeats = self.request.config.validation_repeats
        if phase != "validation" or repeats == 1:
            return self.pay(artifact, candidate_id, cases, seed, phase, runner)
        runs = [self.pay(artifact, candidate_id, cases, s, phase, runner) for s in validation_seeds(seed, repeats)]
        return tuple(replace(ev, score=m.score, objectives=m.objectives)
                     for ev, m in zip(runs[0], case_means(runs), strict=True))

    def pay(self, artifact: Artifact, candidate_id: str, cases: Sequence[Case], seed: int,
            phase: str, runner: CaseRunner | None = None) -> tuple[Evaluation, ...]:
        runner = runner or self.runner
        if self.ledger.max_cost_usd is None or self.request.config.parallel_proposals > 1:
            self.ledger.spend(len(cases))
            return tuple(runner.run(artifact, candidate_id, cases, seed))
        # A money cap (one proposal at a time): pay a worker-sized chunk at a time, checking in between.
        paid: list[Evaluation] = []
        step = max(1, runner.settings.workers)
        for start in range(0, len(cases), step):
            try:
                self.ledger.check_cost(len(cases) - start, phase, paid, self.searching)
            except CostCapReached as exc:
                if paid:  # what this batch already paid for is recorded when the round ends
                    exc.partial = (phase, candidate_id, seed, tuple(paid), runner)
                raise
            chunk = list(cases[start:start + step])
            self.ledger.spend(len(chunk))
            paid += runner.run(artifact, candidate_id, chunk, seed)
        return tuple(paid)

    def emit(self, phase: str, candidate_id: str, seed: int, evaluations: tuple[Evaluation, ...],
             runner: CaseRunner | None = None) -> ScoredBatch:
        self.ledger.add_task_cost(evaluations)
        batch = ScoredBatch(self.batches, phase, candidate_id, seed, evaluations)
        self.batches += 1
        if self.record.persistent:
            self.record.batch(batch, (runner or self.runner).keys(candidate_id, (ev.case_id for ev in evaluations),
                                                                  seed))
        self.trackers.evaluation(batch)
        return batch

    def score(self, artifact: Artifact, candidate_id: str, cases: Sequence[Case], seed: int, phase: str,
              runner: CaseRunner | None = None) -> ScoredBatch:
        return self.emit(phase, candidate_id, seed, self.evaluate(artifact, candidate_id, cases, seed, phase, runner),
                         runner)

    def reflect(self, artifact: Artifact, component: str, records: list[dict[str, Any]]) -> Any:
        reflector = self.request.reflector
        try:
            return without_known_secrets(self._retry(reflector.reflect, artifact, component, records))
        except Exception as exc:
            name = type(reflector).__name__
            if self._retry.transient(exc):
                raise ReflectorUnavailable(f"reflector {name} kept failing ({self.request.reflection.max_retries + 1} "
                                           f"attempts): {describe(exc)}; the run stopped at its last round end: resume "
                                           "it when the provider is back") from exc
            raise ReflectorError(f"reflector {name} raised {describe(exc)} reflecting on {component!r}; this is a bug, "
                                 "not a bad reply (fix the reflector, then resume the run; declare transient error "
                                 "types in `retryable_exceptions`)") from exc

    # -- stage 1: the search ---------------------------------------------------------------------
    def elapsed(self) -> float:
        return self.elapsed_before + time.monotonic() - self.started

    def snapshot(self) -> dict[str, Any]:
        assert self.state is not None
        return {"state": self.state.snapshot(), "ledger": self.ledger.snapshot(), "batches": self.batches,
                "elapsed_s": self.elapsed(), "policies": {k: p.state() for k, p in self.policies.stateful().items()}}

    def round_end(self) -> None:
        if self.record.persistent:
            self.record.event("round_end", self.snapshot())
        self.trackers.round_end()

    def score_seed(self) -> None:
        request = self.request
        rng, validation_seed, holdout_seeds = run_rng(request)
        self.state = SearchState(rng, validation_seed, Pool(self.policies.frontier))
        seed_id = artifact_id(request.seed)
        batch = self.score(request.seed, seed_id, request.dataset.validation, validation_seed, "validation")
        if all(ev.score == 0.0 for ev in batch.evaluations):
            log.warning("the seed scores 0 on every validation case: check the evaluator's configuration (a "
                        "misconfigured evaluator makes every candidate look alike)")
        self.state.pool.add(Candidate(seed_id, request.seed, (), (), None, 0, batch.evaluations, self.ledger.used))
        self.trackers.candidate(CandidateInfo(seed_id, request.seed, None, None, None, batch, self.ledger.used))
        if self.transfer_runner is not None:  # exactly the evaluation decide() needs, paid from the holdout reserve
            early = self.score(request.seed, seed_id, request.dataset.holdout, holdout_seeds[0],
                               "holdout-transfer-baseline", self.transfer_runner)
            self.keep_transfer_seed(early)
            self.check_transfer(early.evaluations, "resume=<run dir> with the fixed one: nothing was searched yet")
        self.round_end()

    def stop_reason(self) -> tuple[int, str | None]:
        """Proposals the next round may make (up to parallel_proposals), or 0 and why the search
        ends: the stop policies in order, the budgets first."""
        state = self.state
        assert state is not None
        view = SearchView(state.pool, state.proposals, self.request.run_dir, state.iteration, self.elapsed(),
                          self.ledger, self.proposal_calls)
        k = self.request.config.parallel_proposals
        for condition in self.policies.stop.values():
            found = condition.reason(view)
            if isinstance(found, str):
                return 0, found
            if found is not None:
                k = min(k, found)
        return k, None

    def search(self) -> None:
        state = self.state
        assert state is not None
        self.searching = True
        while state.stop_reason is None:
            k, state.stop_reason = self.stop_reason()
            if state.stop_reason is not None or (proposals := self.run_round(k)) is None:
                break  # a stop policy ended the search before the round, or the money cap within it
            for proposal in proposals:
                self._report(proposal)
            self.policies.observe(proposals)
            self.round_end()
        self.searching = False
        self.record.event("search_end", {"stop_reason": str(state.stop_reason), **self.snapshot()})

    def run_round(self, k: int) -> list[Proposal] | None:
        """One round; None when the money cap ended the search mid-round. A reflector that stays
        down stops the run (resumable: nothing is decided on a search cut short by an outage)."""
        state, request = self.state, self.request
        assert state is not None
        reflector = request.reflector
        usage_before = _usage(reflector) if self.metered else None
        plans = plan_round(state, request.config, self.policies, k, self.ledger.calls_left(), request.dataset)
        if self.steps is None:
            self.steps = Steps(self.evaluate, self.reflect, self.policies.component, self.policies.acceptance,
                               state.pool, request.dataset.validation, state.validation_seed,
                               request.config.skip_perfect_parents, request.config.accept_top is None,
                               lambda: self.ledger.used)
        try:
            return self.scheduler.run_round(plans, self.steps, self.emit, request.config.accept_top)
        except CostCapReached as exc:
            log.warning("stopping the search mid-proposal: %s", exc)
            if exc.partial is not None:
                self.emit(*exc.partial)
            state.stop_reason = "cost_budget"
        finally:
            if usage_before is not None:
                usage_after = _usage(reflector)
                self.ledger.add_reflection(usage_after[0] - usage_before[0], usage_after[1] - usage_before[1])
        return None

    def _report(self, proposal: Proposal) -> None:
        state = self.state
        assert state is not None
        state.proposals += 1
        state.skipped += proposal.status == "skipped"
        if proposal.status == "accepted":
            joined = state.pool.get(str(proposal.candidate_id))
            assert proposal.validation_batch is not None
            self.trackers.candidate(CandidateInfo(joined.id, joined.artifact, joined.parent_id, joined.component,
                                                  joined.iteration, proposal.validation_batch, joined.metric_calls,
                                                  joined.rationale))
        self.record.proposal(proposal, self.ledger.used)
        self.trackers.proposal(proposal)
        if self.trackers.wants("iteration"):
            best = state.pool.best()
            self.trackers.iteration(IterationStats(state.iteration, best.id, best.mean, len(state.pool),
                                                   len(state.pool.survivors()), self.ledger.used, state.proposals,
                                                   self.ledger.task_cost_usd, self.ledger.reflection_cost_usd))
        state.iteration += 1

    # -- stage 2: the decision -----------------------------------------------------------------
    def decide(self, number: int) -> Result:
        """The seed and the winner on Holdout with the holdout seeds (every repeat), the transfer
        check, the promotion rules. Evaluations the record holds are not paid again."""
        state, request = self.state, self.request
        assert state is not None
        dataset, seed = request.dataset, request.seed
        seed_id, best = artifact_id(seed), state.pool.best()
        paid_before = self.paid()
        _, _, seeds = run_rng(request)
        base_repeats, cand_repeats = [], []
        for holdout_seed in seeds:
            base = self.score(seed, seed_id, dataset.holdout, holdout_seed, "holdout-baseline").evaluations
            base_repeats.append(base)
            cand_repeats.append(base if best.id == seed_id else self.score(
                best.artifact, best.id, dataset.holdout, holdout_seed, "holdout-candidate").evaluations)
        transfer = None
        if self.transfer_runner is not None and best.id != seed_id:  # the first holdout seed, once more
            early = self.transfer_seed
            if early is None:  # a transfer evaluator given after the search: the seed is scored now
                early = self.score(seed, seed_id, dataset.holdout, seeds[0], "holdout-transfer-baseline",
                                   self.transfer_runner).evaluations
                self.check_transfer(early, "decide again with resume=<run dir>")
            transfer = (early, self.score(best.artifact, best.id, dataset.holdout, seeds[0],
                                         "holdout-transfer-candidate", self.transfer_runner).evaluations)
        result = build_result(request, self.experiment_id, state, self.ledger, seeds, base_repeats, cand_repeats,
                              transfer)  # type: ignore[arg-type]
        result.decision_number, result.warnings = number, self.warnings
        result.decision_paid_evaluations = self.paid() - paid_before
        result.links = self.trackers.links()
        if dataset.holdout:  # the look ledger counts every decision on this split, wherever it was taken
            result.holdout_reuse = count_decision(result.dataset["digests"]["holdout"], self.experiment_id, number,
                                                  request.run_dir)
        self.record.decision(number, decision_settings(request), result.to_dict(),
                             promotion_outcome(result, request.submit))
        return result

    def keep_transfer_seed(self, batch: ScoredBatch) -> None:
        """The seed's transfer scores, paid before the search: the decision reuses them, and the
        holdout reserve no longer needs to hold their calls."""
        self.transfer_seed = batch.evaluations
        self.ledger.reserve -= len(batch.evaluations)

    def check_transfer(self, seed_evaluations: tuple[Evaluation, ...], then: str) -> None:
        if self.transfer_runner is not None and all(ev.score == 0.0 for ev in seed_evaluations):
            raise GepaLabError(f"transfer evaluator {self.transfer_runner.name} scored the seed 0 on every holdout "
                               f"case: it is misconfigured, not evidence (check transfer.evaluator, then {then})")

    def paid(self) -> int:
        return self.runner.paid + (self.transfer_runner.paid if self.transfer_runner else 0)

    # -- stage 3: the submission -----------------------------------------------------------------
    def submit(self, result: Result) -> Exception | None:
        """Hand an eligible winner to the store; a failure is recorded with the result and returned."""
        failure: Exception | None = None
        try:
            submit_winner(result, self.request.dataset, self.request.submitter)
        except Exception as exc:  # the decision stands: its result (and why submission failed) is kept
            failure = exc
        self.record.submission(result.decision_number, result.to_dict(), promotion_outcome(result, True))
        return failure

    # -- resuming --------------------------------------------------------------------------------
    def restore(self) -> None:
        """The search state at the record's last round end (nothing when the seed was not scored)."""
        recorded = self.recorded
        assert recorded is not None
        snap = recorded.search_end or recorded.snapshot
        if snap is None:
            return
        request, validation = self.request, recorded.batches[0]
        self.state = SearchState(random.Random(), validation.seed, Pool(self.policies.frontier))
        self.state.pool.add(Candidate(validation.candidate_id, request.seed, (), (), None, 0, validation.evaluations,
                                      len(validation.evaluations) * request.config.validation_repeats))
        accepted = [row for row in recorded.proposals if row["status"] == "accepted"]
        for row in accepted[:int(snap["state"]["pool_size"]) - 1]:  # the pool's members joined in this order
            self.state.pool.add(Candidate(
                row["candidate_id"], artifact_from_dict(row["artifact"]), tuple(row["parents"]),
                tuple(row["components"]), row["iteration"], 0, recorded.batches[row["batches"][-1]].evaluations,
                int(row["metric_calls"]), row.get("rationale", ""), joined_after=int(row["iteration"]) + 1))
        self.state.restore(snap["state"])
        self.state.stop_reason = recorded.search_end["stop_reason"] if recorded.search_end else None
        self.ledger.restore(snap["ledger"])
        self.batches, self.elapsed_before = int(snap["batches"]), float(snap["elapsed_s"])
        for name, policy in self.policies.stateful().items():
            if name in snap.get("policies", {}):
                policy.restore(snap["policies"][name])
        early = recorded.batches.get(1)  # the seed under the transfer evaluator the search ran with
        if (self.transfer_runner is not None and early is not None and early.phase == "holdout-transfer-baseline"
                and recorded.experiment["identity"].get("transfer") == decision_settings(request)["transfer"]):
            self.keep_transfer_seed(early)


def _usage(reflector: Reflector) -> tuple[float, int]:
    """Reflectors that pay for LM calls expose a cumulative `total_cost_usd` and `total_tokens`."""
    cost, tokens = getattr(reflector, "total_cost_usd", 0.0), getattr(reflector, "total_tokens", 0)
    return (float(cost) if isinstance(cost, (int, float)) and math.isfinite(cost) else 0.0,
            int(tokens) if isinstance(tokens, int) and not isinstance(tokens, bool) else 0)


# -- the entry point -------------------------------------------------------------------------------
def optimize(seed: Artifact, dataset: Dataset, evaluator: Evaluator, reflector: Reflector,
             config: SearchConfig | None = None, *, evaluation: EvaluationSettings | None = None,
             reflection: ReflectionSettings | None = None, promotion: PromotionPolicy | None = None,
             submitter: RevisionSubmitter | None = None, submit: bool = False, run_dir: str | Path | None = None,
             resume: bool = False, trackers: list[Tracker] | tuple[Tracker, ...] = (), name: str = "default",
             run_config: dict[str, Any] | None = None, transfer: Evaluator | None = None) -> Result:
    """Run one GEPA experiment and decide whether its winner may be promoted.

    `run_dir` gets the run record (which is also the evaluation cache). `resume=True` continues
    the run recorded there and ends with the result an uninterrupted run would have had; on a
    finished run it re-runs only the later stages asked for: a decision under another promotion
    policy or transfer evaluator, or the submission of an eligible winner (`submit=True`).
    `trackers` observe the run (progress, MLflow); `name` and `run_config` only label it for them.
    `transfer`: a second evaluator under which the winner must also beat the seed on Holdout.
    """
    read_secrets()  # the environment as this run sees it: its values are never written
    config, evaluation = config or SearchConfig(), evaluation or EvaluationSettings()
    reflection, promotion = reflection or ReflectionSettings(), promotion or PromotionPolicy()
    for settings in (config, evaluation, reflection, promotion):
        settings.validate()  # dataclasses are mutable: re-check what a caller may have changed
    policies = build_policies(config)
    request = Request(seed, dataset, evaluator, reflector, config, evaluation, reflection, promotion, submitter,
                      submit, Path(run_dir) if run_dir is not None else None, transfer, name, dict(run_config or {}))
    check_request(request)
    identity = run_identity(request)
    if resume and request.run_dir is None:
        raise ResumeError("resume needs the run directory of the interrupted run (run_dir=...)")
    with RunLock(request.run_dir) if request.run_dir is not None else nullcontext():
        record, recorded, experiment_id = _open_record(request, identity, resume)
        run = Run(request, Trackers(list(trackers)), policies, record, recorded, experiment_id)
        try:
            return _stages(run)
        finally:
            run.close()


def _open_record(request: Request, identity: dict[str, Any], resume: bool
                 ) -> tuple[RunRecord, Recorded | None, str]:
    if request.run_dir is None:
        return RunRecord(None), None, str(uuid.uuid4())
    if not resume:
        experiment = {"id": str(uuid.uuid4()), "name": request.name, "algorithm": ALGORITHM, "started_at": now(),
                      "identity": identity, "config": _full_config(request),
                      "seed": {"id": identity["seed_id"], "artifact": artifact_dict(request.seed)},
                      "dataset": {"id": request.dataset.id, "version": request.dataset.version,
                                  "digests": identity["digests"],
                                  **{s: [c.to_dict() for c in request.dataset.split(s)] for s in identity["digests"]}}}
        return RunRecord.create(request.run_dir, experiment), None, str(experiment["id"])
    record, recorded = RunRecord.reopen(request.run_dir)
    recorded_identity = recorded.experiment.get("identity") or {}
    unsearched = recorded.snapshot is None and recorded.search_end is None
    if unsearched:  # a transfer evaluator refused before the search may be replaced: nothing depends on it yet
        recorded_identity = {**recorded_identity, "transfer": identity["transfer"]}
    try:
        check_same_search(recorded_identity, identity, searched=recorded.search_end is not None)
    except ResumeError:
        record.close()
        raise
    if unsearched and recorded.experiment.get("identity") != identity:
        record.amend_experiment({**recorded.experiment, "identity": identity, "config": _full_config(request)})
    return record, recorded, str(recorded.experiment["id"])


def _next_stage(run: Run) -> str:
    """What a resumed run does: `search`, `decision`, `submission`, or refuse (nothing asked)."""
    recorded, request = run.recorded, run.request
    if recorded is None or recorded.search_end is None:
        return "search"
    if not recorded.decisions or recorded.decisions[-1]["settings"] != decision_settings(request):
        return "decision"
    last = recorded.decisions[-1]
    submitted = next((s["revision"] for s in recorded.submissions if s["decision"] == last["number"] and s["revision"]),
                     None)
    if request.submit and submitted is None:
        if not last["result"]["promotion_eligible"]:
            reason = last["result"]["promotion_reason"]
            raise ResumeError(f"cannot submit: the run's decision was NOT ELIGIBLE ({reason}); only an eligible "
                              "winner is submitted")
        return "submission"
    if not recorded.finished:  # decided, but a tracker never heard of it (killed, interrupted)
        return "report"
    if request.submit and submitted is not None:
        raise AlreadyDone(f"{request.run_dir}: the run already finished and was already submitted as revision "
                          f"{submitted.get('revision_id')} ({submitted.get('status')}); nothing to do")
    raise ResumeError(f"cannot resume {request.run_dir}: the run already finished (see its result.json); to decide "
                      "again pass another promotion policy or transfer evaluator, to submit an eligible winner pass "
                      "submit=true")


def _stages(run: Run) -> Result:
    request, recorded = run.request, run.recorded
    stage = _next_stage(run)
    resume_point = None
    if recorded is not None:
        run.restore()
        resume_point = ResumePoint(run.state.iteration if run.state else 0, run.batches)
    run.warnings = announce(request)
    run.trackers.start(RunInfo(run.experiment_id, request.name, ALGORITHM, now(), request.dataset,
                               request.dataset.digests(), request.seed, artifact_id(request.seed), request.config,
                               _full_config(request), request.submit, str(request.run_dir) if request.run_dir else None,
                               resume_point, simulated=getattr(request.evaluator, "simulated", False) is True))
    if recorded is not None:
        run.record.event("run_resumed", {"stage": stage, "iteration": resume_point.iteration if resume_point else 0,
                                         "batches": run.batches})
    try:
        if stage == "search":
            if run.state is None:
                run.score_seed()
            run.search()
        failure = None
        if stage in ("submission", "report"):
            assert recorded is not None
            result = Result.from_dict(recorded.latest_result())
        else:
            result = run.decide(len(recorded.decisions) + 1 if recorded else 1)
        if request.submit and stage != "report":
            failure = run.submit(result)
        run.trackers.finish(result)
        run.record.event("run_finished", {"decision": result.decision_number})
    except BaseException as exc:
        run.trackers.fail(exc)
        kind = "run_interrupted" if isinstance(exc, KeyboardInterrupt) else "run_failed"
        run.record.event(kind, {"error": describe(exc)})
        raise
    if failure is not None:
        failure.add_note(f"the run's result was recorded; submission_reason: {result.submission_reason}")
        raise failure
    return result


def _full_config(request: Request) -> dict[str, Any]:
    return {"search": asdict(request.config), "evaluation": asdict(request.evaluation),
            "reflection": asdict(request.reflection), "promotion": asdict(request.promotion), **request.run_config}
