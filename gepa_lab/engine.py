"""Run lifecycle (DESIGN §3): validate, score the seed, search, select, holdout, promote, submit.

The engine owns the budget and the single seeded RNG; the search strategy (`search.py`) only
advances the state; everything observable goes to trackers (`tracking.py`).
"""

from __future__ import annotations

import logging
import math
import random
import time
import uuid
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from gepa_lab.artifacts import Artifact, artifact_dict, artifact_id
from gepa_lab.cache import EvaluationCache
from gepa_lab.checkpoint import (
    prepare_resume,
    save_checkpoint,
    state_from_json,
    state_to_json,
)
from gepa_lab.contracts import Case, Dataset, Evaluation, Evaluator, Reflector, Summary
from gepa_lab.evaluation import CaseRunner, EvaluationSettings, evaluator_fingerprint
from gepa_lab.promotion import PromotionDecision, assess_promotion
from gepa_lab.reflection import ReflectionSettings, ReflectorFailed
from gepa_lab.search import (
    Budget,
    Candidate,
    SearchState,
    draw_seed,
    iteration_calls,
    iteration_stats,
    run_iteration,
)
from gepa_lab.submission import RevisionSubmitter, submit_winner
from gepa_lab.tracking import EvaluationRecord, RunInfo, Tracker, Trackers

log = logging.getLogger("gepa_lab")

ALGORITHM = "gepa"


@dataclass(frozen=True)
class SearchConfig:
    max_iterations: int = 10
    max_metric_calls: int = 1000
    minibatch_size: int = 3
    random_seed: int = 1
    min_holdout_improvement: float = 0.0
    critical_tolerance: float = 0.0  # a critical holdout case may drop by at most this much
    max_cost_usd: float | None = None  # task + reflection spend; None = no money budget
    time_limit_s: float | None = None  # wall time for the search; None = no limit

    def validate(self) -> None:
        if not isinstance(self.max_iterations, int) or self.max_iterations < 0:
            raise ValueError("max_iterations must be a non-negative integer (0 scores the seed only)")
        if not isinstance(self.max_metric_calls, int) or self.max_metric_calls <= 0:
            raise ValueError("max_metric_calls must be a positive integer")
        if not isinstance(self.minibatch_size, int) or self.minibatch_size <= 0:
            raise ValueError("minibatch_size must be a positive integer")
        if not isinstance(self.random_seed, int):
            raise ValueError("random_seed must be an integer")
        m = self.min_holdout_improvement
        if not isinstance(m, (int, float)) or math.isnan(m) or not 0.0 <= m <= 1.0:
            raise ValueError("min_holdout_improvement must be between 0 and 1")
        t = self.critical_tolerance
        if not isinstance(t, (int, float)) or math.isnan(t) or not 0.0 <= t <= 1.0:
            raise ValueError("critical_tolerance must be between 0 and 1")
        for name in ("max_cost_usd", "time_limit_s"):
            value = getattr(self, name)
            if value is not None and (not isinstance(value, (int, float)) or not math.isfinite(value) or value <= 0):
                raise ValueError(f"{name} must be a positive number (or null for no limit)")


@dataclass
class Result:
    algorithm: str
    experiment_id: str
    best: Artifact
    best_id: str
    seed_id: str
    baseline_validation: Summary
    candidate_validation: Summary
    baseline_holdout: Summary
    candidate_holdout: Summary
    candidate_count: int
    metric_calls: int
    stop_reason: str
    promotion_eligible: bool
    promotion_reason: str
    promotion_rules: list[dict[str, Any]]
    seeds: dict[str, int]
    dataset: dict[str, Any]
    submission_reason: str | None = None
    revision: dict[str, Any] | None = None
    holdout_cases: list[dict[str, Any]] = field(default_factory=list)
    cost_usd: dict[str, float] = field(default_factory=dict)

    @property
    def holdout_delta(self) -> float:
        return self.candidate_holdout.score - self.baseline_holdout.score

    def to_dict(self) -> dict[str, Any]:
        out = asdict(self)
        out["best"] = artifact_dict(self.best)
        out["holdout_delta"] = self.holdout_delta
        return out


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="milliseconds")


def validate_request(seed: Artifact, dataset: Dataset, config: SearchConfig, submit: bool,
                     submitter: RevisionSubmitter | None) -> None:
    """DESIGN §2 order: seed, dataset, submitter, budget. Raises ValueError before any spend."""
    config.validate()
    if seed is None:
        raise ValueError("seed artifact is required")
    try:
        seed.validate()
    except ValueError as exc:
        raise ValueError(f"invalid seed artifact: {exc}") from exc
    dataset.validate(submit=submit)
    if submit and submitter is None:
        raise ValueError("submission requested without a revision submitter (set submitter=... or submit=false)")
    need = len(dataset.validation) + 2 * len(dataset.holdout)
    if need > config.max_metric_calls:
        raise ValueError(
            f"metric budget cannot cover validation and holdout: needs at least {need} calls "
            f"(|validation| + 2 x |holdout|), max_metric_calls is {config.max_metric_calls}"
        )


def max_iterations_allowed(config: SearchConfig, dataset: Dataset) -> int:
    """Pre-flight: how many iterations the metric budget allows at most."""
    per_iteration = iteration_calls(config.minibatch_size, dataset)
    room = config.max_metric_calls - len(dataset.validation) - 2 * len(dataset.holdout)
    return min(config.max_iterations, max(0, room // per_iteration))


class _Run:
    """One run's mutable context: scoring (budget, cache, records), checkpoints, stop rules."""

    def __init__(self, *, dataset: Dataset, reflector: Reflector, config: SearchConfig, runner: CaseRunner,
                 trackers: Trackers, run_dir: Path | None, experiment_id: str, digests: dict[str, str],
                 seed_id: str, reflection: ReflectionSettings):
        self.dataset = dataset
        self.reflector = reflector
        self.config = config
        self.runner = runner
        self.trackers = trackers
        self.run_dir = run_dir
        self.experiment_id = experiment_id
        self.digests = digests
        self.seed_id = seed_id
        self.reflection = reflection
        self.batches = 0
        self.task_cost_usd = 0.0  # nominal: cached results count too, so resumes replay exactly
        self.reflection_cost_usd = 0.0
        self.elapsed_before = 0.0
        self.started = time.monotonic()
        self.state: SearchState | None = None

    # -- scoring -------------------------------------------------------------------------
    def score(self, artifact: Artifact, candidate_id: str, cases: list[Case], seed: int,
              phase: str) -> list[Evaluation]:
        assert self.state is not None
        # Spent before the call: an evaluation that fails still consumed its calls.
        self.state.budget.used += len(cases)
        outcomes = self.runner.run(artifact, candidate_id, cases, seed)
        evaluations = [o.evaluation for o in outcomes]
        self.task_cost_usd += math.fsum(ev.objectives.get("cost_usd", 0.0) for ev in evaluations)
        self.trackers.evaluation(
            EvaluationRecord(self.batches, phase, candidate_id, seed, evaluations, Summary.of(evaluations))
        )
        self.batches += 1
        return evaluations

    # -- checkpoints ---------------------------------------------------------------------
    def elapsed(self) -> float:
        return self.elapsed_before + time.monotonic() - self.started

    def checkpoint(self) -> None:
        if self.run_dir is None or self.state is None:
            return
        payload = {
            "experiment_id": self.experiment_id,
            "digests": self.digests,
            "search": asdict(self.config),
            "seed_id": self.seed_id,
            "evaluator": self.runner.fingerprint,
            "batches": self.batches,
            "task_cost_usd": self.task_cost_usd,
            "reflection_cost_usd": self.reflection_cost_usd,
            "elapsed_s": self.elapsed(),
            "state": state_to_json(self.state),
        }
        self.trackers.checkpoint(payload)  # lets the recorder add its file offsets
        save_checkpoint(self.run_dir, payload)

    def restore(self, checkpoint: dict[str, Any]) -> None:
        self.state = state_from_json(checkpoint["state"], self.config.max_metric_calls)
        self.batches = int(checkpoint["batches"])
        self.task_cost_usd = float(checkpoint["task_cost_usd"])
        self.reflection_cost_usd = float(checkpoint["reflection_cost_usd"])
        self.elapsed_before = float(checkpoint["elapsed_s"])

    # -- lifecycle -----------------------------------------------------------------------
    def init_seed(self, seed: Artifact) -> None:
        rng = random.Random(self.config.random_seed)
        validation_seed = draw_seed(rng)  # first draw
        self.state = SearchState(rng=rng, budget=Budget(self.config.max_metric_calls), validation_seed=validation_seed)
        seed_validation = self.score(seed, self.seed_id, self.dataset.validation, validation_seed, "validation")
        self.state.pool.append(Candidate(self.seed_id, seed, None, None, None, 0, seed_validation))
        self.trackers.candidate(self.state.pool[0].info())
        self.checkpoint()

    def stop_reason(self) -> str | None:
        """Checked before each iteration; each budget keeps the holdout comparison affordable."""
        state, config, ds = self.state, self.config, self.dataset
        assert state is not None
        if state.iteration >= config.max_iterations:
            return "max_iterations"
        per_iteration = iteration_calls(config.minibatch_size, ds)
        reserve = 2 * len(ds.holdout)
        if not state.budget.can_spend(per_iteration, reserve):
            return "metric_budget"
        if config.max_cost_usd is not None:
            per_call = self.task_cost_usd / max(1, state.budget.used)
            per_reflection = self.reflection_cost_usd / max(1, state.iteration)
            projected = (self.task_cost_usd + self.reflection_cost_usd
                         + per_call * (per_iteration + reserve) + per_reflection)
            if projected > config.max_cost_usd:
                return "cost_budget"
        if config.time_limit_s is not None and self.elapsed() >= config.time_limit_s:
            return "time_limit"
        return None

    def search(self) -> None:
        state = self.state
        assert state is not None
        while state.stop_reason is None:
            reason = self.stop_reason()
            if reason is not None:
                state.stop_reason = reason
                break
            before = _reflector_cost(self.reflector)
            try:
                proposal = run_iteration(state, self.dataset, self.reflector, self.score,
                                         self.config.minibatch_size, self.reflection)
            except ReflectorFailed as exc:
                # A reflector that keeps failing ends the search cleanly; the holdout still runs.
                log.error("stopping the search: %s", exc)
                self.trackers.note("reflector_failed", {"iteration": state.iteration, "error": str(exc)})
                state.stop_reason = "reflector_error"
                break
            self.reflection_cost_usd += max(0.0, _reflector_cost(self.reflector) - before)
            if proposal.status == "accepted":
                self.trackers.candidate(state.pool[-1].info())
            self.trackers.proposal(proposal)
            self.trackers.iteration(iteration_stats(state, self.task_cost_usd, self.reflection_cost_usd))
            state.iteration += 1
            self.checkpoint()
        self.checkpoint()


def _reflector_cost(reflector: Reflector) -> float:
    """Reflectors that pay for LM calls expose a cumulative `total_cost_usd`."""
    value = getattr(reflector, "total_cost_usd", 0.0)
    return float(value) if isinstance(value, (int, float)) and math.isfinite(value) else 0.0


def optimize(
    seed: Artifact,
    dataset: Dataset,
    evaluator: Evaluator,
    reflector: Reflector,
    config: SearchConfig | None = None,
    *,
    submitter: RevisionSubmitter | None = None,
    submit: bool = False,
    run_dir: str | Path | None = None,
    trackers: list[Tracker] | tuple[Tracker, ...] = (),
    run_config: dict[str, Any] | None = None,
    evaluation: EvaluationSettings | None = None,
    reflection: ReflectionSettings | None = None,
    resume: bool = False,
) -> Result:
    """Run one GEPA experiment.

    `run_dir` gets the auditable run record, the evaluation cache and checkpoints;
    `resume=True` continues the interrupted run recorded there and ends with the result an
    uninterrupted run would have had.
    """
    config = config or SearchConfig()
    validate_request(seed, dataset, config, submit, submitter)
    settings = evaluation or EvaluationSettings()
    settings.validate()
    path = Path(run_dir) if run_dir is not None else None
    digests = dataset.digests()
    seed_id = artifact_id(seed)
    checkpoint: dict[str, Any] | None = None
    if not resume and path is not None and (path / "experiment.json").exists():
        raise ValueError(f"{path} already holds a run record; resume it (resume=True) or use a new run_dir")
    experiment_id = str(uuid.uuid4())
    if resume:
        if path is None:
            raise ValueError("resume needs the run directory of the interrupted run")
        experiment_id, checkpoint = prepare_resume(path, digests, asdict(config), seed_id,
                                                   evaluator_fingerprint(evaluator))

    sinks: list[Any] = []
    if path is not None:
        from gepa_lab.record import RunRecorder

        sinks.append(RunRecorder(path, resume=resume, checkpoint=checkpoint))
    sinks.extend(trackers)
    fanout = Trackers(sinks)
    cache = EvaluationCache(path / "cache.sqlite") if path is not None else None
    runner = CaseRunner(evaluator, settings, cache)
    run = _Run(dataset=dataset, reflector=reflector, config=config, runner=runner, trackers=fanout,
               run_dir=path, experiment_id=experiment_id, digests=digests, seed_id=seed_id,
               reflection=reflection or ReflectionSettings())
    full_config = {"search": asdict(config), "evaluation": asdict(settings), **(run_config or {})}
    log.info(
        "pre-flight: the metric budget (%d calls) allows at most %d of %d iterations",
        config.max_metric_calls, max_iterations_allowed(config, dataset), config.max_iterations,
    )
    fanout.start(
        RunInfo(experiment_id, ALGORITHM, _now(), dataset, digests, artifact_dict(seed), seed_id,
                full_config, submit, str(path) if path else None, resumed=resume)
    )
    try:
        if checkpoint is not None:
            run.restore(checkpoint)
        else:
            run.init_seed(seed)
        run.search()
        result, decision = _finish(run, seed, config)
    except BaseException as exc:
        fanout.fail(exc)
        raise
    finally:
        runner.close()
        if cache is not None:
            cache.close()
    if submit:
        try:
            run_id = next((getattr(t, "run_id", None) for t in trackers if getattr(t, "run_id", None)), None)
            submit_winner(result, decision, dataset, submitter, mlflow_run_id=run_id)
        except Exception as exc:
            # The search finished: its result (and why submission failed) is kept on record.
            fanout.finish(result)
            exc.add_note(f"the run's result was recorded; submission_reason: {result.submission_reason}")
            raise
    fanout.finish(result)
    return result


def _finish(run: _Run, seed: Artifact, config: SearchConfig) -> tuple[Result, PromotionDecision]:
    """Final selection, paired holdout, promotion, submission."""
    state, dataset, seed_id = run.state, run.dataset, run.seed_id
    assert state is not None and state.stop_reason is not None
    best = state.best()
    seed_candidate = state.pool[0]
    holdout_seed = draw_seed(state.rng) if dataset.holdout else None
    base_holdout: list[Evaluation] = []
    cand_holdout: list[Evaluation] = []
    if holdout_seed is not None:
        base_holdout = run.score(seed, seed_id, dataset.holdout, holdout_seed, "holdout-baseline")
        if best.id == seed_id:
            cand_holdout = base_holdout
        else:
            cand_holdout = run.score(best.artifact, best.id, dataset.holdout, holdout_seed, "holdout-candidate")

    decision = assess_promotion(
        best_is_seed=best.id == seed_id,
        holdout=dataset.holdout,
        baseline=base_holdout,
        candidate=cand_holdout,
        min_improvement=config.min_holdout_improvement,
        critical_tolerance=config.critical_tolerance,
    )
    result = Result(
        algorithm=ALGORITHM,
        experiment_id=run.experiment_id,
        best=best.artifact,
        best_id=best.id,
        seed_id=seed_id,
        baseline_validation=Summary.of(seed_candidate.validation),
        candidate_validation=Summary.of(best.validation),
        baseline_holdout=Summary.of(base_holdout),
        candidate_holdout=Summary.of(cand_holdout),
        candidate_count=len(state.pool),
        metric_calls=state.budget.used,
        stop_reason=state.stop_reason,
        promotion_eligible=decision.eligible,
        promotion_reason=decision.reason,
        promotion_rules=[asdict(r) for r in decision.rules],
        seeds={"random_seed": config.random_seed, "validation_seed": state.validation_seed,
               **({"holdout_seed": holdout_seed} if holdout_seed is not None else {})},
        dataset={"id": dataset.id, "version": dataset.version, "digests": run.digests},
        holdout_cases=[
            {"case_id": c.id, "critical": c.critical, "baseline": b.score, "candidate": k.score,
             "delta": k.score - b.score}
            for c, b, k in zip(dataset.holdout, base_holdout, cand_holdout, strict=True)
        ],
        cost_usd={"task": run.task_cost_usd, "reflection": run.reflection_cost_usd},
    )
    return result, decision
