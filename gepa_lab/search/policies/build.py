"""The policies of a run, from its configuration. Each `search.<slot>` value is a `_target_`
mapping (a config group option) or, for library callers, the policy object itself. `OPTIONS`
names every option of the config groups `search/<slot>`: their nodes are generated from the
classes' signatures (`option_node`), so each default is written once, in its class."""

from __future__ import annotations

import inspect
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from gepa_lab.core.errors import ConfigError
from gepa_lab.core.events import Proposal
from gepa_lab.core.fingerprint import fingerprint
from gepa_lab.core.settings import SearchConfig, build_target
from gepa_lab.search.policies import acceptance, batch, component, frontier, parent, sources, stop

SLOTS = ("parent", "batch", "component", "acceptance", "frontier", "merge")
# search/<group> -> option name -> class (None: the empty option). The engine's default is SearchConfig's.
OPTIONS: dict[str, dict[str, type | None]] = {
    "parent": {"pareto": parent.Pareto, "current_best": parent.CurrentBest, "epsilon_greedy": parent.EpsilonGreedy,
               "top_k_pareto": parent.TopKPareto},
    "batch": {"per_iteration": batch.PerIteration, "epoch_shuffled": batch.EpochShuffled},
    "component": {"round_robin": component.RoundRobin, "all": component.AllComponents,
                  "most_failures": component.MostFailures},
    "acceptance": {"strict": acceptance.StrictImprovement, "at_least": acceptance.AtLeast,
                   "margin": acceptance.ByMargin},
    "frontier": {"instance": frontier.Instance, "objective": frontier.Objective, "hybrid": frontier.Hybrid},
    "merge": {"none": None, "on": sources.Merge},
    "stop": {"none": None, "no_improvement": stop.NoImprovement, "score_threshold": stop.ScoreThreshold,
             "stop_file": stop.StopFile},
}


def option_node(group: str, name: str) -> dict[str, Any]:
    """An option's config: its class and every parameter's default (a stop condition under its name)."""
    cls = OPTIONS[group][name]
    if cls is None:
        return {}
    defaults = {p.name: p.default for p in inspect.signature(cls).parameters.values() if p.default is not p.empty}
    node = {"_target_": f"gepa_lab.search.policies.{cls.__name__}",
            **{k: dict(v) if isinstance(v, Mapping) else v for k, v in defaults.items()}}
    return {name: node} if group == "stop" else node


def named(key: str, value: Any) -> Any:
    """A policy named by its option (`search.parent=current_best` on the command line,
    `search={"parent": "current_best"}` from Python) as that option's node; else `value` itself."""
    if not isinstance(value, str):
        return value
    group, _, name = key.partition(".")
    if value not in OPTIONS[group]:
        raise ConfigError(f"search.{key} {value!r} is not a policy; pick one of {', '.join(sorted(OPTIONS[group]))} "
                          "(or give a `_target_` mapping)")
    node = option_node(group, value)
    return node.get(value, {}) if name else node


def default_option(group: str) -> str:
    """The option of search/<group> that SearchConfig's default names (the empty one: none)."""
    target = (getattr(SearchConfig(), group) or {}).get("_target_")
    return next(name for name, cls in OPTIONS[group].items() if option_node(group, name).get("_target_") == target)


@dataclass
class Policies:
    parent: Any
    batch: Any
    component: Any
    acceptance: Any
    frontier: Any
    merge: sources.Merge | None = None
    stop: dict[str, Any] = field(default_factory=dict)  # the budgets first, then the configured ones
    sources: list[Any] = field(default_factory=list)  # a round is planned by each in turn

    def slots(self) -> dict[str, Any]:
        found = {key: getattr(self, key) for key in SLOTS} | {f"stop.{k}": v for k, v in self.stop.items()}
        return {k: v for k, v in found.items() if v is not None}

    def stateful(self) -> dict[str, Any]:
        """Every policy that keeps state across rounds (saved in each round-end snapshot)."""
        return {k: v for k, v in self.slots().items() if callable(getattr(v, "state", None))}

    def observe(self, proposals: Sequence[Proposal]) -> None:
        """A round's outcomes, in proposal order, to every policy that learns from them."""
        for observe in self._observers:
            observe(proposals)

    def __post_init__(self) -> None:  # found once: this runs every round, on the reject path too
        self._observers = [o for p in self.slots().values() if callable(o := getattr(p, "observe", None))]


def _budgets(config: SearchConfig) -> dict[str, Any]:
    found = {"max_iterations": config.max_iterations is not None and stop.MaxIterations(config.max_iterations),
             "metric_budget": stop.MetricBudget(),
             "cost_budget": config.max_cost_usd is not None and stop.CostBudget(),
             "time_limit": config.time_limit_s is not None and stop.TimeLimit(config.time_limit_s)}
    return {k: v for k, v in found.items() if v}


def build_policies(config: SearchConfig) -> Policies:
    built = {key: build_target(f"search.{key}", named(key, getattr(config, key))) for key in SLOTS}
    missing = [key for key in SLOTS if key != "merge" and built[key] is None]
    if missing:
        raise ConfigError(f"search.{missing[0]} is not configured; pick an option (search/{missing[0]}=<name>)")
    budgets = _budgets(config)
    configured = {str(k): build_target(f"search.stop.{k}", named(f"stop.{k}", v))
                  for k, v in (config.stop or {}).items()}
    if clash := set(budgets) & set(configured):
        raise ConfigError(f"search.stop.{min(clash)}: the name is a budget's; name the stop condition otherwise")
    merge = built["merge"]
    reflection = sources.Reflection(same_parent=config.proposal_parents == "same")
    return Policies(**built, stop={**budgets, **{k: v for k, v in configured.items() if v is not None}},
                    sources=[merge, reflection] if merge is not None else [reflection])


def describe_policies(config: SearchConfig) -> dict[str, Any]:
    """The policies' part of the run identity: their configuration (or an object's fingerprint)."""
    # An option named by a string ("current_best") is recorded as the node it stands for.
    stop = {str(k): named(f"stop.{k}", v) for k, v in (config.stop or {}).items()}
    return {**{key: _plain(named(key, getattr(config, key))) for key in SLOTS}, "stop": _plain(stop)}


def _plain(value: Any) -> Any:
    """A config value as plain Python (OmegaConf containers to dicts and lists), a policy object by
    its fingerprint."""
    if isinstance(value, Mapping):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    return value if value is None or isinstance(value, (str, int, float, bool)) else fingerprint(value)
