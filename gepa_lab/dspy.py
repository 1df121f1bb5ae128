"""gepa-lab as a DSPy teleprompter: dspy.GEPA's shape, plus a holdout decision.

    import dspy
    from gepa_lab.dspy import GEPA

    optimizer = GEPA(metric=metric, reflection_lm=dspy.LM("openai/gpt-4o"), auto="light")
    optimized = optimizer.compile(program, trainset=train, valset=val, holdoutset=holdout)
    print(optimized.decision)          # eligible or not, why, the holdout interval, the run dir

`compile` runs the same engine as `python -m gepa_lab evaluator=dspy_program` (the program
evaluator and the LM reflector of gepa_lab/lm/), with the same run record, resume,
MLflow run and revision-store submission. The seed is the program's own instructions; the
splits are the examples given, frozen and digested (no files to write first). Everything is
checked before the first paid call, the LMs' keys included. Nothing is written into the working
directory unless asked: the run record goes under the user's cache directory, MLflow only with a
tracking URI or `mlflow=True`. A winner that is not promotion-eligible is not returned
unless asked for (`return_winner_if_not_eligible=True`): the seed program comes back, with the
decision saying why.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, replace
from datetime import datetime
from pathlib import Path
from typing import Any

import dspy
from dspy.teleprompt import Teleprompter
from dspy.teleprompt.gepa.gepa import AUTO_RUN_SETTINGS

from gepa_lab.core.contracts import Dataset, canonical_json, sha256_hex
from gepa_lab.core.errors import ConfigError, ResumeError
from gepa_lab.core.result import Result
from gepa_lab.core.settings import EvaluationSettings, PromotionPolicy, SearchConfig
from gepa_lab.lm.config import settings_of
from gepa_lab.lm.examples import example_inputs, examples_to_cases
from gepa_lab.lm.loading import metric_form
from gepa_lab.lm.program import DspyProgramEvaluator
from gepa_lab.lm.prompt import system_prompt
from gepa_lab.lm.reflector import DspyReflector
from gepa_lab.lm.texts import apply_texts
from gepa_lab.runs.record import run_state
from gepa_lab.search.engine import optimize
from gepa_lab.summary import format_summary
from gepa_lab.tracking.mlflow_tracker import MlflowTracker
from gepa_lab.tracking.progress import ProgressTracker

log = logging.getLogger("gepa_lab")
# dspy.GEPA's names -> the search/parent policy
SELECTION = {"pareto": {"_target_": "gepa_lab.search.policies.Pareto"},
             "current_best": {"_target_": "gepa_lab.search.policies.CurrentBest"}}


@dataclass(frozen=True)
class Decision:
    """What `compile` decided, attached to the returned program as `.decision`."""

    experiment: str
    eligible: bool
    reason: str
    returned: str  # "winner" or "seed"
    holdout_delta: float | None  # winner minus seed, mean over Holdout (None: no holdout)
    interval: tuple[float, float] | None  # its bootstrap interval, at `confidence`
    confidence: float | None
    run_dir: Path
    program_file: Path  # the winner's saved state (program.json, or program.not_eligible.json)
    mlflow_run_id: str | None
    result: Result  # everything result.json holds

    def __str__(self) -> str:
        return format_summary(self.result, self.experiment, self.run_dir)


class GEPA(Teleprompter):  # type: ignore[misc]
    """Reflective instruction search with holdout-gated promotion.

    metric:         `metric(gold, pred)` or dspy.GEPA's `metric(gold, pred, trace, pred_name,
                    pred_trace)`, returning a number or `dspy.Prediction(score=..., feedback=...)`;
                    the five-argument form also gives each predictor its own feedback.
    reflection_lm:  the `dspy.LM` that rewrites instructions.
    task_lm:        the LM the program runs on; default `dspy.settings.lm` (`dspy.configure`).
    budgets:        auto (`light`, `medium`, `heavy`: dspy.GEPA's presets, the metric calls dspy.GEPA
                    would get for this program and valset, plus the holdout comparison) or
                    max_metric_calls (every scored example, holdout included; default 1000);
                    max_cost_usd, time_limit_s, max_iterations; the first one reached stops the search.
    promotion:      a preset name (`default`, `lenient`, `strict`) or a `PromotionPolicy`; None:
                    `default_policy()`, the default preset without the latency ceiling.
    run_dir:        the run record; a run dir holding an interrupted run is resumed. Default:
                    `$XDG_CACHE_HOME/gepa_lab/runs/<timestamp>` (`~/.cache/...`).
    mlflow:         log the run to MLflow at `tracking_uri` (default `$MLFLOW_TRACKING_URI`, else
                    `mlflow.db` in the working directory); None: only when a tracking URI is set.
    submit:         hand an eligible winner to the revision store at `store_url` as
                    `artifact_name` (required then).
    reflection_prompt: the reflection rules (a .md / .txt file or the text); None: the default.
    search:         further `SearchConfig` settings (e.g. `{"parallel_proposals": 2}`).
    """

    def __init__(self, metric: Any, *, reflection_lm: Any, task_lm: Any = None, auto: str | None = None,
                 max_metric_calls: int | None = None,
                 max_cost_usd: float | None = None, time_limit_s: float | None = None,
                 max_iterations: int | None = None, reflection_minibatch_size: int = 3,
                 candidate_selection_strategy: str = "pareto", seed: int = 0, num_threads: int | None = None,
                 promotion: str | PromotionPolicy | None = None, run_dir: str | Path | None = None,
                 experiment_name: str | None = None, mlflow: bool | None = None, tracking_uri: str | None = None,
                 progress: str = "auto", submit: bool = False, artifact_name: str | None = None,
                 store_url: str | None = None, return_winner_if_not_eligible: bool = False,
                 reflection_prompt: str | None = None, search: Mapping[str, Any] | None = None):
        super().__init__()
        # Every setting is checked now, one line each, before anything is built or spent.
        if not callable(metric):
            raise ConfigError(f"metric must be a function metric(gold, pred, ...), got {type(metric).__name__}")
        with config_errors():
            metric_form(metric, getattr(metric, "__qualname__", repr(metric)))
        settings_of(reflection_lm, "reflection_lm")
        with config_errors({"reflector.prompt": "reflection_prompt"}):
            system_prompt(reflection_prompt)
        if task_lm is not None:
            settings_of(task_lm, "task_lm")
        if auto is not None and (auto not in AUTO_RUN_SETTINGS or max_metric_calls is not None):
            raise ConfigError(f"auto must be one of {', '.join(AUTO_RUN_SETTINGS)}, without max_metric_calls "
                              f"(got auto={auto!r}, max_metric_calls={max_metric_calls!r})")
        if candidate_selection_strategy not in SELECTION:
            raise ConfigError(f"candidate_selection_strategy must be one of {', '.join(SELECTION)} "
                              f"(got {candidate_selection_strategy!r})")
        # Like dspy.GEPA, a parent already perfect on its minibatch is not reflected on (no child
        # could beat it); `search={"skip_perfect_parents": False}` turns that off.
        calls = 1000 if max_metric_calls is None else max_metric_calls  # with auto: set by compile
        self.search = SearchConfig(**{"max_metric_calls": calls, "max_cost_usd": max_cost_usd,
                                      "time_limit_s": time_limit_s, "max_iterations": max_iterations,
                                      "minibatch_size": reflection_minibatch_size, "random_seed": seed,
                                      "parent": SELECTION[candidate_selection_strategy],
                                      "skip_perfect_parents": True, **dict(search or {})})
        self.evaluation = EvaluationSettings(workers=num_threads or dspy.settings.num_threads or 1)
        self.promotion = (default_policy() if promotion is None else PromotionPolicy.preset(promotion)
                          if isinstance(promotion, str) else promotion)
        self.promotion.validate()
        if submit and not artifact_name:
            raise ConfigError("submit=True needs artifact_name: the revision store files a DSPy program's "
                              "instructions under a name (e.g. artifact_name='support-triage')")
        self.submitter = None
        if submit:
            from gepa_lab.revisions.submitter import StoreSubmitter
            from gepa_lab.revisions.urls import DEFAULT_STORE_URL

            with config_errors():
                self.submitter = StoreSubmitter(store_url or DEFAULT_STORE_URL, artifact_name=artifact_name)
        ProgressTracker(progress)  # checks the mode
        self.metric, self.reflection_lm, self.task_lm = metric, reflection_lm, task_lm
        self.run_dir, self.experiment_name, self.progress = run_dir, experiment_name, progress
        self.tracking_uri, self.submit, self.auto = tracking_uri, submit, auto
        self.mlflow = bool(tracking_uri or os.environ.get("MLFLOW_TRACKING_URI")) if mlflow is None else mlflow
        self.return_winner, self.reflection_prompt = return_winner_if_not_eligible, reflection_prompt

    def compile(self, student: Any, *, trainset: Sequence[Any], teacher: Any = None,
                valset: Sequence[Any] | None = None, holdoutset: Sequence[Any] | None = None) -> Any:
        """Optimize `student`'s instructions; returns the winner (or the seed, see the class
        docstring) with `.decision`. `valset` defaults to `trainset`, as in dspy.GEPA; without a
        `holdoutset` no winner is eligible."""
        if teacher is not None:
            raise ConfigError("teacher is not supported: GEPA optimizes the student's own instructions")
        name = self.experiment_name or type(student).__name__
        dataset, inputs = _dataset(name, trainset, valset if valset is not None else trainset, holdoutset or (),
                                   self.submit)
        task_lm = self.task_lm if self.task_lm is not None else dspy.settings.lm
        if task_lm is None:
            raise ConfigError("no task LM: call dspy.configure(lm=dspy.LM(...)) or pass task_lm= to GEPA")
        check_key(self.reflection_lm, "reflection_lm")
        check_key(task_lm, "task_lm")
        if not holdoutset:
            log.warning("no holdoutset: no winner can be promotion-eligible, so compile returns the seed program "
                        "(pass holdoutset=[...] for a holdout decision)")
        search = self.search
        if self.auto is not None:  # dspy.GEPA's own formula (its instance is not read), plus the holdout reserve
            calls = dspy.GEPA.auto_budget(self, len(student.named_predictors()), AUTO_RUN_SETTINGS[self.auto]["n"],
                                          len(dataset.validation))
            search = replace(search, max_metric_calls=calls + 2 * len(dataset.holdout) * self.promotion.holdout_repeats)
        run_dir, resume = self._run_dir()
        with config_errors({"evaluator.inputs": "the examples' with_inputs(...)"}):
            evaluator = DspyProgramEvaluator(student, self.metric, inputs, lm=task_lm, run_dir=str(run_dir))
        reflector = DspyReflector(self.reflection_lm, seed=self.search.random_seed, prompt=self.reflection_prompt)
        [saver] = evaluator.run_trackers(run_dir)  # the winner's program state, after MLflow has the run
        mlflow = [MlflowTracker(uri=self.tracking_uri)] if self.mlflow else []
        trackers = [ProgressTracker(self.progress), *mlflow, saver]
        result = optimize(evaluator.seed_artifact, dataset, evaluator, reflector, search,
                          evaluation=self.evaluation, promotion=self.promotion, submitter=self.submitter,
                          submit=self.submit, run_dir=run_dir, resume=resume, trackers=trackers, name=name,
                          run_config={"teleprompter": "gepa_lab.dspy.GEPA", "inputs": inputs,
                                      "program": evaluator.program_spec, "metric": evaluator.metric_spec})
        winner = result.promotion_eligible or self.return_winner
        program = apply_texts(student, result.best) if winner else student.deepcopy()
        interval = tuple(result.holdout_interval) if result.holdout_interval else None
        program.decision = Decision(name, result.promotion_eligible, result.promotion_reason,
                                    "winner" if winner else "seed",
                                    result.holdout_delta if result.holdout_cases else None,
                                    interval, result.confidence, run_dir, saver.path,  # type: ignore[arg-type]
                                    result.links.get("mlflow_run_id"), result)
        log.info("%s", program.decision)
        return program

    def _run_dir(self) -> tuple[Path, bool]:
        """(run dir, resume?): a given dir holding an interrupted run is resumed."""
        if self.run_dir is None:
            cache = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
            return cache / "gepa_lab" / "runs" / datetime.now().strftime("%Y%m%d-%H%M%S-%f"), False
        run_dir = Path(self.run_dir)
        state = run_state(run_dir)
        if state == "finished":
            raise ResumeError(f"{run_dir} holds a finished run (see its result.json); pass a new run_dir")
        return run_dir, state == "unfinished"


def check_key(lm: Any, role: str) -> None:
    """dspy finds an LM's key on its first request, before it connects: that request goes here to a
    closed local port, so a missing key fails now, in dspy's words, and nothing reaches the provider."""
    try:
        lm.copy(api_base="http://127.0.0.1:9/v1", cache=False, num_retries=0, timeout=5)("ping", max_tokens=1)
    except dspy.LMConfigurationError as exc:
        raise ConfigError(f"{role}: {' '.join(str(exc).split())}") from None
    except Exception:  # refused by the closed port (a key was found), or an LM that owns its connection
        pass


def default_policy() -> PromotionPolicy:
    """The `default` preset without its latency ceiling: the wall-clock latency of LM calls moves
    with the provider's and the machine's load, not with the instructions (three identical runs of
    experiments/dspy_vs_gepa.py measured winner/seed latency 0.92x, 1.20x and 1.07x), while the
    token and cost ceilings, which do follow the instructions, stay."""
    policy = PromotionPolicy()
    return replace(policy, gates=replace(policy.gates, ceilings={**policy.gates.ceilings, "latency_ms": None}))


# The engine's split names in a dataset error, as a DSPy user passed them.
DSPY_WORDS = {"feedback split": "trainset", "validation split": "valset", "holdout split": "holdoutset",
              "feedback cases": "trainset examples", "validation cases": "valset examples",
              "holdout cases": "holdoutset examples"}


def _dataset(name: str, trainset: Sequence[Any], valset: Sequence[Any],
             holdoutset: Sequence[Any], submit: bool) -> tuple[Dataset, list[str]]:
    """The examples as a frozen dataset (ids `<split>-<n>`; the version digests the content)."""
    with config_errors():
        inputs = example_inputs([*trainset, *valset, *holdoutset], "the examples")
        splits = {split: examples_to_cases(examples, split, inputs) for split, examples in
                  (("train", trainset), ("val", valset), ("holdout", holdoutset))}
    version = sha256_hex(canonical_json({k: [c.to_dict() for c in v] for k, v in splits.items()}))[:12]
    dataset = Dataset(name, version, splits["train"], splits["val"], splits["holdout"])
    with config_errors(DSPY_WORDS):
        dataset.validate(submit=submit)
    return dataset, inputs


@contextmanager
def config_errors(words: Mapping[str, str] | None = None) -> Iterator[None]:
    """A ValueError raised inside as a ConfigError, the engine's `words` in it replaced by the
    teleprompter's."""
    try:
        yield
    except ValueError as exc:
        text = str(exc)
        for engine_word, dspy_word in (words or {}).items():
            text = text.replace(engine_word, dspy_word)
        raise ConfigError(text) from exc
