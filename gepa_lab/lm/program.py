"""`evaluator=dspy_program`: optimize any DSPy program's instructions under the holdout protocol.

The artifact is a `texts` artifact, one text per predictor (its name -> its instructions). Each
case runs the program with those instructions on the `lm.task` model (its own LM copy, the case's
provider seed), and the configured metric grades the prediction: a number, or a
`dspy.Prediction(score=..., feedback=...)` as dspy.GEPA's feedback metrics return. A metric with
dspy.GEPA's five arguments `(gold, pred, trace, pred_name, pred_trace)` is also asked about each
predictor that ran (once per predictor per case); its answers become per-predictor sections of
the feedback, which the LM reflector narrows to the predictor it improves
(`gepa_lab.lm.records`). Tokens, USD and latency of the case's LM calls become the objectives
`tokens`, `cost_usd` and `latency_ms`.

A reply the adapter cannot parse scores 0 with feedback saying so (a task failure); rate limits,
server errors, timeouts and dropped connections are raised for gepa_lab's retry layer
(`retryable_exceptions`); anything else (a broken metric, a program bug) stops the run.
"""

from __future__ import annotations

import inspect
import json
import logging
import os
import threading
from collections.abc import Mapping, Sequence
from functools import lru_cache
from pathlib import Path
from typing import Any

from gepa_lab.core.artifacts import Artifact, artifact_id, sha256_hex
from gepa_lab.core.contracts import Case, Evaluation
from gepa_lab.core.errors import describe
from gepa_lab.core.result import Result
from gepa_lab.lm.config import LMSettings
from gepa_lab.lm.examples import to_example, verdict
from gepa_lab.lm.loading import check_inputs, load_metric, load_program, metric_form
from gepa_lab.lm.metered import LMCaller, Metered
from gepa_lab.lm.records import compose_feedback, trace_line
from gepa_lab.lm.texts import apply_texts, program_texts

log = logging.getLogger("gepa_lab.dspy_program")
_PROGRAM_CACHE = 32


def dumps(value: Any) -> str:
    """A prediction / example / inputs mapping as JSON text."""
    if hasattr(value, "toDict"):
        value = value.toDict()
    return json.dumps(dict(value) if isinstance(value, Mapping) else value, ensure_ascii=False, default=str)


class DspyProgramEvaluator(LMCaller):
    """Evaluator (`gepa_lab.core.contracts.Evaluator`) for a DSPy program and metric.

    program: `<module>:<attr>` (a `dspy.Module` instance or a factory returning one), or the module.
    metric:  `<module>:<attr>` or the function: `metric(example, prediction)`, or dspy.GEPA's
             five-argument form (then also asked about each predictor).
    inputs:  the case fields the program takes (keyword arguments of `program(...)`).
    label:   the example field a plain-text `expected` is stored under.
    lm:      the `lm.task` settings, or a `dspy.LM` the caller built.
    run_dir: where to write each scored candidate's program state (`programs/<id>.json`, as
             `program.save` writes it; `program.load` restores it); `auto`: the Hydra run
             directory when built by the command line; None: nowhere.
    """

    def __init__(self, program: Any, metric: Any, inputs: Sequence[str],
                 lm: LMSettings | Mapping[str, Any] | Any = None, label: str = "answer", run_dir: str | None = None):
        # Everything is checked here, one line each, before the first paid call.
        if program is None or program == "" or metric is None or metric == "":
            missing = "program" if program is None or program == "" else "metric"
            raise ValueError(f"evaluator.{missing} is required: set evaluator.{missing}=<module>:<attr>")
        if isinstance(inputs, str) or not inputs or not all(isinstance(x, str) and x for x in inputs):
            raise ValueError(f"inputs must be a non-empty list of field names, got {inputs!r}")
        if not isinstance(label, str) or not label:
            raise ValueError(f"label must be a field name, got {label!r}")
        self.program = load_program(program)
        self.metric = load_metric(metric)
        self.program_spec, self.metric_spec = _name_of(program), _name_of(metric)
        self._metric_form = metric_form(self.metric, self.metric_spec)
        self.inputs, self.label = list(inputs), label
        check_inputs(self.program, self.inputs)
        self.seed_artifact = program_texts(self.program)  # what the program does unoptimized
        super().__init__(lm, "lm.task")
        if run_dir == "auto":  # the running Hydra job's output dir (the command line's run dir), else nowhere
            from hydra.core.hydra_config import HydraConfig

            run_dir = HydraConfig.get().runtime.output_dir if HydraConfig.initialized() else None
        self.run_dir = Path(run_dir) if run_dir else None
        # One program per artifact, the last few kept (artifacts are immutable, hashable dataclasses).
        self.program_for = lru_cache(maxsize=_PROGRAM_CACHE)(self._build_program)

    def fingerprint(self) -> str:
        """The evaluation cache key's evaluator part: program, metric, inputs and the task LM."""
        predictors = {name: str(p.signature) for name, p in self.program.named_predictors()}
        return json.dumps({"evaluator": "dspy_program", "program": self.program_spec, "metric": self.metric_spec,
                           "metric_source": _source_digest(self.metric), "inputs": self.inputs, "label": self.label,
                           "predictors": predictors, "lm": self.settings.public()}, sort_keys=True, default=str)

    # -- programs per artifact ---------------------------------------------------------------
    def _build_program(self, artifact: Artifact) -> Any:
        """The program with the artifact's instructions (names checked against the program's);
        `program_for` keeps the last few built."""
        built = apply_texts(self.program, artifact)
        # once per candidate (a resumed run has the earlier ones)
        if self.run_dir and not (saved := self.run_dir / "programs" / f"{artifact_id(artifact)}.json").exists():
            self.save_program(artifact, saved)
        return built

    def save_program(self, artifact: Artifact, path: str | Path) -> Path:
        """Write the program with the artifact's instructions as `program.save` does (atomically)."""
        path = Path(path)
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_name(f".{path.stem}.{threading.get_ident()}.tmp.json")
        apply_texts(self.program, artifact).save(str(tmp))
        os.replace(tmp, path)
        return path

    def run_trackers(self, run_dir: str | Path) -> list[Any]:
        """Trackers to add to a run of this evaluator: the winner's program state at the end."""
        return [ProgramStateTracker(self, run_dir)]

    # -- evaluation ----------------------------------------------------------------------------
    def check_cases(self, cases: Sequence[Case]) -> None:
        """Every case has the program's inputs and the label (before any LM request)."""
        for case in cases:
            to_example(case, self.inputs, self.label)

    def evaluate(self, artifact: Artifact, cases: list[Case], seed: int) -> list[Evaluation]:
        program = self.program_for(artifact)  # type: ignore[arg-type]  # checks the artifact's names
        examples = [to_example(case, self.inputs, self.label) for case in cases]  # bad cases fail first
        return [self._one(program, case, example, seed) for case, example in zip(cases, examples, strict=True)]

    def _one(self, program: Any, case: Case, example: Any, seed: int) -> Evaluation:
        own = program.deepcopy()  # nothing a run leaves on a module reaches another case
        inputs = example.inputs().toDict()
        run = self.metered(seed, case.id, lambda: own(**inputs))
        names = {id(p): name for name, p in own.named_predictors()}
        trace = _trace(names, run)
        if run.parse_error is not None:
            raw = getattr(run.parse_error, "lm_response", None)
            return Evaluation(case.id, 0.0, output=str(raw or ""), trace=trace,
                              feedback=("The model's reply did not follow the program's output format, so no "
                                        f"prediction was made: {' '.join(str(run.parse_error).split())[:600]}"),
                              objectives={**run.objectives(), "format_error": 1.0})
        args = (example, run.value) if self._metric_form == 2 else (example, run.value, None, None, None)
        score, feedback = verdict(self.metric(*args), f"metric {self.metric_spec}")
        if self._metric_form == 5:  # dspy.GEPA's form: also asked about each predictor
            feedback = compose_feedback(feedback, self._per_predictor(example, run, names))
        return Evaluation(case.id, score, output=dumps(run.value), feedback=feedback, trace=trace,
                          objectives={**run.objectives(), "format_error": 0.0})

    def _per_predictor(self, example: Any, run: Metered, names: dict[int, str]) -> dict[str, str]:
        """What the metric says about each predictor, given its first call in the trace (as
        dspy.GEPA asks: `metric(gold, pred, trace, pred_name, [(predictor, inputs, outputs)])`)."""
        first: dict[str, Any] = {}
        for entry in run.trace:
            if (name := names.get(id(entry[0]))) is not None:
                first.setdefault(name, entry)
        return {name: verdict(self.metric(example, run.value, run.trace, name, [entry]),
                              f"metric {self.metric_spec} (pred_name={name!r})")[1]
                for name, entry in first.items()}


class ProgramStateTracker:
    """A tracker with only the `finish` hook; put it after the MLflow tracker. The winner as the
    program's own saved state (as `program.save` writes it, so `program.load` restores it), in the
    run dir and under `best/` in the run's MLflow run: `program.json` when the winner is
    promotion-eligible, `program.not_eligible.json` when it is not, so a refused winner is never
    mistaken for a shippable one."""

    def __init__(self, evaluator: Any, run_dir: str | Path):
        self.evaluator = evaluator
        self.run_dir = Path(run_dir)
        self.path: Path | None = None

    def finish(self, result: Result) -> None:
        name = "program.json" if result.promotion_eligible else "program.not_eligible.json"
        path = self.path = self.evaluator.save_program(result.best, self.run_dir / name)
        log.info("winner's program state%s: %s (dspy: program.load(path))",
                 "" if result.promotion_eligible else " (NOT ELIGIBLE)", path)
        run_id, uri = result.links.get("mlflow_run_id"), result.links.get("mlflow_tracking_uri")
        if run_id and not uri:
            log.warning("%s not logged to MLflow run %s: its tracking URI holds a password (keep credentials "
                        "in MLFLOW_TRACKING_USERNAME / MLFLOW_TRACKING_PASSWORD)", name, run_id)
        elif run_id:
            try:
                from mlflow import MlflowClient

                MlflowClient(tracking_uri=uri).log_artifact(run_id, str(path), "best")
            except Exception as exc:  # like every MLflow failure after start-up: logged, never fatal
                log.warning("could not log %s to MLflow run %s: %s", name, run_id, describe(exc))


def _name_of(value: Any) -> str:
    """A reference as given, or an object's `module.qualname` (the fingerprint's stable part)."""
    if isinstance(value, str):
        return value
    kind = value if inspect.isfunction(value) or inspect.isclass(value) else type(value)
    return f"{kind.__module__}.{kind.__qualname__}"


def _source_digest(fn: Any) -> str | None:
    """The metric's source text, hashed: an edited metric never reuses cached scores."""
    try:
        return sha256_hex(inspect.getsource(fn))[:16]
    except (OSError, TypeError):
        return None


def _trace(names: dict[int, str], run: Metered) -> str:
    how = "sent to the provider" if run.seed_sent else "not sent: the provider takes no seed"
    lines = [f"provider seed {run.provider_seed} ({how})"]
    for entry in run.trace:
        predictor, inputs, outputs = (list(entry) + [None, None, None])[:3]
        name = names.get(id(predictor), type(predictor).__name__)
        lines.append(trace_line(name, "inputs", dumps(inputs)))
        lines.append(trace_line(name, "outputs", dumps(outputs)))
    return "\n".join(lines)
