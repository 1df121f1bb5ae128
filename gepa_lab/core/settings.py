"""The engine's settings. These dataclasses are also the Hydra structured configs of the groups
`search`, `evaluation`, `reflection` and `promotion` (registered once in `gepa_lab.config`, the
promotion presets too): one definition per setting and per default, validated on construction.
"""

from __future__ import annotations

import math
import os
import re
from collections.abc import Mapping
from dataclasses import dataclass, field, fields
from typing import Any, TypeVar

from gepa_lab.core.errors import ConfigError, GepaLabError, describe
from gepa_lab.core.redact import redact, url_secrets

T = TypeVar("T")
# Threads a run may start per pool (case workers, concurrent proposals): far beyond what a provider's
# rate limit or a machine serves, so a larger number is a typo, not a plan.
MAX_THREADS = 256
# Bootstrap resamples: the interval's bounds are stable to the printed digits long before this,
# and the resampling matrix grows with resamples x holdout cases (10**12 asked for 149 GiB).
MAX_RESAMPLES = 100_000
# Retry backoff (doubling per retry): an hour already outlasts any provider outage worth waiting
# out in-process; far larger values overflow time.sleep at the first transient failure.
MAX_BACKOFF_S = 3600.0


def _policy(name: str) -> Any:
    return lambda: {"_target_": f"gepa_lab.search.policies.{name}"}


def from_mapping(cls: type[T], value: Mapping[str, Any], where: str) -> T:
    """A settings dataclass from a config mapping (what a `_target_` class or a config node
    receives); a key the dataclass lacks is a one-line ConfigError naming the keys it takes."""
    known = {f.name for f in fields(cls)}  # type: ignore[arg-type]
    unknown = sorted(set(map(str, value)) - known)
    if unknown:
        raise ConfigError(f"unknown config key '{where}.{unknown[0]}'; {where} takes: {', '.join(sorted(known))}")
    return cls(**{str(k): v for k, v in value.items()})


def build_target(where: str, node: Any) -> Any:
    """The one `_target_` builder (evaluators, reflectors, trackers, submitters, policies): the class
    located by Hydra and called with the node's other keys (resolved, as plain values; a node
    nesting other `_target_` nodes goes through Hydra's instantiate), its errors as one line naming
    `where`. None when the node is empty; anything but a mapping is already built (a policy object
    a library caller passes)."""
    if node is None or (isinstance(node, Mapping) and not node):
        return None
    if not isinstance(node, Mapping):
        return node
    from hydra.utils import instantiate
    from omegaconf import OmegaConf

    cls = target_class(where, node)
    kwargs = dict(OmegaConf.to_container(node, resolve=True) if OmegaConf.is_config(node) else node)  # type: ignore[arg-type]
    kwargs.pop("_target_")
    try:
        if any(isinstance(v, Mapping) and "_target_" in v for v in kwargs.values()):
            return instantiate(node, _convert_="all")
        return cls(**kwargs)
    except Exception as exc:
        cause = exc.__cause__ or exc if type(exc).__module__.startswith("hydra") else exc
        if not isinstance(cause, (TypeError, ValueError)):
            raise GepaLabError(f"{where} could not be built: {describe(cause)}") from cause
        text = describe(cause)
        if where == "transfer.evaluator":  # an evaluator names its keys `evaluator.<key>`: here they are not
            text = re.sub(r"(?<![\w.])evaluator\.", "transfer.evaluator.", text)
        raise ConfigError(f"{where}: {text}") from cause


def target_class(where: str, node: Any) -> Any:
    """The class (or function) a `_target_` node names, located by Hydra's instantiate as a partial
    (nothing is built); a node without one, or a target that cannot be imported, is a ConfigError."""
    from hydra.utils import instantiate

    if "_target_" not in node:
        raise ConfigError(f"{where} needs a `_target_` naming its class (see conf/{where.replace('.', '/')}/)")
    try:
        return instantiate({"_target_": str(node["_target_"]), "_partial_": True}).func
    except Exception as exc:
        cause: BaseException = exc
        while cause.__cause__ is not None:  # Hydra's wrappers around the import error
            cause = cause.__cause__
        raise ConfigError(f"{where}._target_ {node['_target_']!r} cannot be imported: {describe(cause)}") from None


def check_int(value: Any, name: str, minimum: int, hint: str = "", *, maximum: int | None = None,
              why: str = "") -> None:
    """The range check of every integer setting (ConfigError naming the key)."""
    if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
        raise ConfigError(f"{name} must be an integer >= {minimum}{hint} (got {value!r})")
    if maximum is not None and value > maximum:
        raise ConfigError(f"{name} must be at most {maximum} (got {value!r}){why}")


def check_number(value: Any, name: str, low: float, high: float = math.inf, *, optional: bool = False,
                 open_low: bool = False) -> None:
    """The range check of every real-valued setting; `optional`: None means no limit."""
    if value is None and optional:
        return
    ok = not isinstance(value, bool) and isinstance(value, (int, float)) and math.isfinite(value)
    ok = ok and (value > low if open_low else value >= low) and value <= high
    if not ok:
        bound = f"> {low:g}" if open_low else (f"between {low:g} and {high:g}" if high < math.inf else f">= {low:g}")
        suffix = " (or null for no limit)" if optional else ""
        raise ConfigError(f"{name} must be a number {bound}{suffix} (got {value!r})")


def refuse_secrets(node: Any, key: str = "") -> None:
    """No credential in settings that are recorded (the config, which Hydra writes to .hydra/ before
    the run starts; experiment.json; MLflow): any value redaction would change (a URL's password or
    unlisted query parameter, a key's shape, a secret variable's value) is refused naming its key,
    never its value. Secrets come from the environment only."""
    if isinstance(node, Mapping):
        for name, value in node.items():
            refuse_secrets(value, f"{key}.{name}" if key else str(name))
    elif isinstance(node, (list, tuple)):
        for value in node:
            refuse_secrets(value, key)
    elif isinstance(node, str) and redact(node) != node:
        what = (url_secrets(node) or ["what looks like a credential"])[0]
        raise ConfigError(f"{key} holds {what}, and it is recorded with the run (.hydra/, experiment.json, MLflow): "
                          "remove it and keep the secret where its client reads it (PGPASSWORD, "
                          "MLFLOW_TRACKING_PASSWORD; an LM's key in the variable lm.<role>.api_key_env names)")


class _Validated:
    """Settings are validated on construction (and again by `optimize`: dataclasses are mutable)."""

    def __post_init__(self) -> None:
        self.validate()

    def validate(self) -> None: ...


def check_choice(value: Any, name: str, choices: tuple[str, ...]) -> None:
    if value not in choices:
        raise ConfigError(f"{name} must be {' or '.join(repr(c) for c in choices)} (got {value!r})")


@dataclass
class SearchConfig(_Validated):
    """The search (docs/design.md §3). Budgets end the search; the stop reason names which."""

    max_iterations: int | None = None  # None: only the budgets end the search
    max_metric_calls: int = 1000  # one metric call = one case evaluated, of any split
    minibatch_size: int = 3
    random_seed: int = 1
    max_cost_usd: float | None = None  # task + reflection USD; None: no money budget
    time_limit_s: float | None = None  # wall time of the search; None: no limit
    # Concurrent proposals: a round of k proposals drawn from the same state, run concurrently,
    # applied in proposal order (k = 1: the classic loop).
    parallel_proposals: int = 1
    proposal_parents: str = "independent"  # independent | same (one parent for the whole round)
    accept_top: int | None = None  # of a round's improving children: None = all, n = the n largest gains
    # Ablation (docs/design.md §3 is the default): score the child with a fresh seed instead of
    # the parent's.
    paired_seeds: bool = True
    # Policies (gepa_lab.search.policies; config groups search/<policy>): a `_target_` mapping, or
    # the policy object itself for library callers. The defaults are the classic GEPA loop.
    parent: Any = field(default_factory=_policy("Pareto"))
    batch: Any = field(default_factory=_policy("PerIteration"))
    component: Any = field(default_factory=_policy("RoundRobin"))
    acceptance: Any = field(default_factory=_policy("StrictImprovement"))
    frontier: Any = field(default_factory=_policy("Instance"))
    merge: Any = field(default_factory=dict)  # empty: off; GEPA+Merge: search/merge=on
    stop: Any = field(default_factory=dict)  # name -> stop condition, beyond the budgets
    # Skip reflecting on a parent that already scores 1.0 on every case of its minibatch (no child
    # could beat it under strict improvement); the skip is recorded and counted.
    skip_perfect_parents: bool = False
    # Evaluation seeds per validation case (the Pareto frontier's data): each candidate's score on a
    # case is the mean over r seeds, every one of them a metric call.
    validation_repeats: int = 1

    def validate(self) -> None:
        if self.max_iterations is not None:
            check_int(self.max_iterations, "search.max_iterations", 0, " (0 scores the seed only; null: no cap)")
        check_int(self.max_metric_calls, "search.max_metric_calls", 1)
        check_int(self.minibatch_size, "search.minibatch_size", 1)
        check_int(self.validation_repeats, "search.validation_repeats", 1, " (1: one evaluation seed per case)")
        if isinstance(self.random_seed, bool) or not isinstance(self.random_seed, int):
            raise ConfigError(f"search.random_seed must be an integer (got {self.random_seed!r})")
        check_number(self.max_cost_usd, "search.max_cost_usd", 0.0, optional=True, open_low=True)
        check_number(self.time_limit_s, "search.time_limit_s", 0.0, optional=True, open_low=True)
        check_int(self.parallel_proposals, "search.parallel_proposals", 1, maximum=MAX_THREADS,
                  why="; each is a thread")
        check_choice(self.proposal_parents, "search.proposal_parents", ("independent", "same"))
        if self.accept_top is not None:
            check_int(self.accept_top, "search.accept_top", 1, " (null: accept every improving child)")


@dataclass
class EvaluationSettings(_Validated):
    """How cases are evaluated: workers, per-case timeout, retries of transient failures."""

    workers: int = 1  # results are identical for every value
    backend: str = "thread"  # thread | process
    timeout_s: float | None = None  # per evaluator call; None: no limit
    max_retries: int = 2  # transient failures only (timeouts, connection errors, 429 / 5xx)
    retry_backoff_s: float = 0.5  # doubles per retry
    max_consecutive_failures: int = 10  # abort after this many transiently failed cases in a row

    def validate(self) -> None:
        check_int(self.workers, "evaluation.workers", 1, maximum=MAX_THREADS,
                  why=f"; each is a {'process' if self.backend == 'process' else 'thread'}")
        check_choice(self.backend, "evaluation.backend", ("thread", "process"))
        cpus = os.cpu_count() or 1
        if self.backend == "process" and self.workers > cpus:
            raise ConfigError(f"evaluation.workers={self.workers} with evaluation.backend=process would start "
                              f"{self.workers} processes on {cpus} CPUs; set evaluation.workers <= {cpus} (or "
                              "evaluation.backend=thread for an evaluator that waits on a network)")
        # Below 0.1 s a timeout measures thread start-up, not the evaluator: every call would "time out".
        check_number(self.timeout_s, "evaluation.timeout_s", 0.1, optional=True)
        check_int(self.max_retries, "evaluation.max_retries", 0)
        check_number(self.retry_backoff_s, "evaluation.retry_backoff_s", 0.0, MAX_BACKOFF_S)
        check_int(self.max_consecutive_failures, "evaluation.max_consecutive_failures", 1)


@dataclass
class ReflectionSettings(_Validated):
    """Retries of transient reflector failures (provider errors, rate limits)."""

    max_retries: int = 2  # then the run stops, resumable
    retry_backoff_s: float = 1.0  # doubles per retry

    def validate(self) -> None:
        check_int(self.max_retries, "reflection.max_retries", 0)
        check_number(self.retry_backoff_s, "reflection.retry_backoff_s", 0.0, MAX_BACKOFF_S)


# Growth ceilings (candidate / seed on Holdout) for the efficiency objectives an evaluator may
# report; an objective nobody reports is recorded as skipped, a null ceiling switches one off
# (a YAML override can null a key but not remove it).
CEILING_OBJECTIVES = ("tokens", "agent_tokens", "cost_usd", "latency_ms")


@dataclass
class GatePolicy(_Validated):
    """Rule 5 of the promotion decision: pass-rate floors, pass-rate regression, safety checks and
    efficiency ceilings (objectives `passed`, `safety_passed` and the ceilings' keys)."""

    validation_pass_rate_floor: float | None = None  # the winner's share of `passed` on Validation
    holdout_pass_rate_floor: float | None = None  # the winner's share of `passed` on Holdout
    no_pass_rate_regression: bool = True  # the winner's Holdout pass rate >= the seed's
    require_safety: bool = True  # every Holdout case's `safety_passed` is 1 where reported
    ceilings: dict[str, float | None] = field(  # objective -> max ratio
        default_factory=lambda: dict.fromkeys(CEILING_OBJECTIVES, 1.2))

    def validate(self) -> None:
        for name in ("validation_pass_rate_floor", "holdout_pass_rate_floor"):
            check_number(getattr(self, name), f"promotion.gates.{name}", 0.0, 1.0, optional=True)
        for objective, ceiling in self.ceilings.items():
            check_number(ceiling, f"promotion.gates.ceilings.{objective}", 0.0, optional=True, open_low=True)


PRESETS = ("lenient", "default", "strict")


@dataclass
class PromotionPolicy(_Validated):
    """The holdout rules a winner must pass to be promotion-eligible (docs/design.md §4).

    `PromotionPolicy()` is the `default` preset; `PromotionPolicy.preset(name)` gives `lenient`
    (mean delta only, no ceilings), `default` or `strict` — the only definition of the presets:
    `gepa_lab.config` registers them as the Hydra options `promotion=<name>`."""

    min_holdout_improvement: float = 0.0
    # The lower bound of a paired-bootstrap interval of the mean delta must be above the minimum.
    require_interval: bool = True
    confidence: float = 0.95
    bootstrap_resamples: int = 2000
    # A critical case regresses when it passed under the seed and fails under the winner, or its
    # quality (the evaluator's `quality_objective`, else the score) drops by more than this.
    critical_tolerance: float = 0.0
    holdout_repeats: int = 1  # seed and winner scored this many times on Holdout, each with its own seed
    gates: GatePolicy = field(default_factory=GatePolicy)

    def validate(self) -> None:
        check_number(self.min_holdout_improvement, "promotion.min_holdout_improvement", 0.0, 1.0)
        check_number(self.confidence, "promotion.confidence", 0.5, 0.999)
        check_int(self.bootstrap_resamples, "promotion.bootstrap_resamples", 100, maximum=MAX_RESAMPLES,
                  why=": the interval is stable long before, and memory grows with resamples x holdout cases")
        check_number(self.critical_tolerance, "promotion.critical_tolerance", 0.0, 1.0)
        check_int(self.holdout_repeats, "promotion.holdout_repeats", 1)
        self.gates.validate()

    @classmethod
    def preset(cls, name: str) -> PromotionPolicy:
        if name == "default":
            return cls()
        if name == "lenient":
            return cls(require_interval=False,
                       gates=GatePolicy(no_pass_rate_regression=False, require_safety=False,
                                        ceilings=dict.fromkeys(CEILING_OBJECTIVES)))
        if name == "strict":
            return cls(holdout_repeats=3, gates=GatePolicy(holdout_pass_rate_floor=0.8))
        raise ConfigError(f"unknown promotion preset {name!r}; pick one of {', '.join(PRESETS)}")
