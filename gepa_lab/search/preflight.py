"""The request (every argument of `optimize`) and the checks made before anything is spent:
the request (docs/design.md §2 order), the protocols, the budgets' pre-flight."""

from __future__ import annotations

import inspect
import logging
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from gepa_lab.core.artifacts import Artifact
from gepa_lab.core.contracts import SPLITS, Dataset, Evaluator, Reflector, RevisionSubmitter
from gepa_lab.core.errors import GepaLabError, ProtocolError, declared_retryable, describe
from gepa_lab.core.settings import EvaluationSettings, PromotionPolicy, ReflectionSettings, SearchConfig
from gepa_lab.search.planning import proposal_calls

log = logging.getLogger("gepa_lab")


@dataclass
class Request:
    """What the caller asked for (every argument of `optimize`, checked by `check_request`)."""

    seed: Artifact
    dataset: Dataset
    evaluator: Evaluator
    reflector: Reflector
    config: SearchConfig
    evaluation: EvaluationSettings
    reflection: ReflectionSettings
    promotion: PromotionPolicy
    submitter: RevisionSubmitter | None
    submit: bool
    run_dir: Path | None
    transfer: Evaluator | None
    name: str
    run_config: dict[str, Any]

    @property
    def holdout_reserve(self) -> int:
        """Metric calls kept back for the final comparison: seed and winner, every repeat, and once
        more under the transfer evaluator when one is configured."""
        transfer = 1 if self.transfer is not None else 0
        return 2 * len(self.dataset.holdout) * (self.promotion.holdout_repeats + transfer)

    @property
    def declared_price(self) -> float | None:
        """USD per case the evaluator declares (`cost_per_case_usd`), for the cost pre-flight."""
        value = getattr(self.evaluator, "cost_per_case_usd", None)
        return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) and value >= 0 else None


# Each protocol's method and the parameters a call passes.
PROTOCOLS = {"evaluate": ("artifact", "cases", "seed"), "reflect": ("artifact", "component", "records"),
             "submit": ("request",)}


def _check_method(obj: object, role: str, method: str) -> None:
    fn, params = getattr(obj, method, None), PROTOCOLS[method]
    wanted = f"{method}({', '.join(params)})"
    if not callable(fn):
        raise ProtocolError(f"{role} {type(obj).__name__} has no method {wanted}")
    try:
        signature = inspect.signature(fn)
    except (TypeError, ValueError):  # some builtins and C callables have no signature
        return
    try:
        signature.bind(*params)
    except TypeError as exc:
        raise ProtocolError(f"{role} {type(obj).__name__}.{method}{signature} cannot be called as {wanted}: "
                            f"{exc}") from None


def check_request(request: Request) -> None:
    """Everything `optimize` checks before anything is spent: the request (docs/design.md §2
    order), the protocols' method signatures, the cases, the submitter."""
    validate_request(request)
    for role, component, method in (("evaluator", request.evaluator, "evaluate"), ("transfer evaluator",
                                    request.transfer, "evaluate"), ("reflector", request.reflector, "reflect"),
                                    ("submitter", request.submitter, "submit")):
        if component is not None:
            _check_method(component, role, method)
            if role != "submitter":
                declared_retryable(component)
    for role, evaluator in (("evaluator", request.evaluator), ("transfer evaluator", request.transfer)):
        if evaluator is not None:
            check_cases(evaluator, request.dataset, request.seed, role)
    check = getattr(request.submitter, "preflight", None) if request.submit else None
    if callable(check):  # with submit=true, a submitter that can check itself (store reachable, settings present)
        try:
            check(request.seed)
        except GepaLabError:
            raise
        except Exception as exc:
            raise GepaLabError(f"the revision submitter is not ready: {describe(exc)}") from exc


def check_cases(evaluator: Evaluator, dataset: Dataset, seed: Artifact, role: str = "evaluator") -> None:
    """An evaluator that can check cases or the seed artifact without paying for them
    (`check_cases(cases)`: every field it needs is there; `check_artifact(seed)`: a kind it
    evaluates) does so before anything is spent; its refusal is a one-line ValueError."""
    for method, value, what in (("check_artifact", seed, "seed artifact"),
                                ("check_cases", [c for name in SPLITS for c in dataset.split(name)], "dataset")):
        check = getattr(evaluator, method, None)
        if callable(check):
            try:
                check(value)
            except (ValueError, KeyError, TypeError) as exc:
                raise ValueError(f"the {what} does not fit the {role} {type(evaluator).__name__}: "
                                 f"{describe(exc)}") from exc


def announce(request: Request) -> list[str]:
    """Logged before anything is spent: what would make the run's evidence weaker than it looks
    (returned: the result records it) and how many iterations the metric budget allows."""
    dataset, config = request.dataset, request.config
    found = []
    if config.minibatch_size > len(dataset.feedback):
        found.append(f"search.minibatch_size {config.minibatch_size} is larger than the feedback split "
                     f"({len(dataset.feedback)} cases): every minibatch is the whole split")
    for name in SPLITS:
        size, distinct = len(dataset.split(name)), dataset.distinct(name)
        if distinct < size:
            found.append(f"the {name} split has {size} cases but only {distinct} distinct inputs"
                         + (": the holdout decision counts each distinct case once" if name == "holdout" else ""))
    if not dataset.holdout:
        found.append("no holdout split: the run can never be promotion-eligible (promotion rule 2)")
    for warning in found:
        log.warning("pre-flight: %s", warning)
    # The iterations the metric budget allows. At least: every child accepted (minibatch twice plus
    # a validation each). At most: every proposal rejected before its child is scored (one
    # minibatch each); the last one must still fit a whole iteration.
    room = config.max_metric_calls - config.validation_repeats * len(dataset.validation) - request.holdout_reserve
    full = proposal_calls(config.minibatch_size, dataset, repeats=config.validation_repeats)
    least = max(0, room // full)
    most = 0 if room < full else (room - full) // min(config.minibatch_size, len(dataset.feedback)) + 1
    if config.max_iterations is not None:
        least, most = min(least, config.max_iterations), min(most, config.max_iterations)
    log.info("pre-flight: the metric budget (%d calls) allows %d to %d iterations%s", config.max_metric_calls,
             least, most, "" if config.max_iterations is None else f" (max_iterations {config.max_iterations})")
    return found


def validate_request(request: Request) -> None:
    """docs/design.md §2 order: dataset, seed, submitter, budget. Raises ValueError before any spend."""
    dataset, config, transfer = request.dataset, request.config, request.transfer is not None
    dataset.validate(submit=request.submit)
    if request.seed is None:
        raise ValueError("seed artifact is required")
    try:
        request.seed.validate()
    except ValueError as exc:
        raise ValueError(f"invalid seed artifact: {exc}") from exc
    if request.submit and request.submitter is None:
        raise ValueError("submission requested without a revision submitter (set submitter=store, or submit=false)")
    if transfer and not dataset.holdout:
        raise ValueError("a transfer evaluator needs a holdout split (set one, or drop transfer/evaluator)")
    need = config.validation_repeats * len(dataset.validation) + request.holdout_reserve
    price = request.declared_price
    if need > config.max_metric_calls:
        repeats = " x validation_repeats" if config.validation_repeats > 1 else ""
        raise ValueError(f"metric budget cannot cover validation and holdout: needs at least {need} calls "
                         f"(|validation|{repeats} + 2 x |holdout| x "
                         f"{'(holdout_repeats + 1 for transfer)' if transfer else 'holdout_repeats'}), "
                         f"max_metric_calls is {config.max_metric_calls}")
    if config.max_cost_usd is not None and price is not None and need * price > config.max_cost_usd:
        raise ValueError(f"cost budget ${config.max_cost_usd:g} cannot cover the seed's validation and the holdout "
                         f"reserve: {need} cases at the evaluator's declared ${price:g} per case need "
                         f"${need * price:g} (raise search.max_cost_usd)")
