"""Policies from configuration: each `search.<policy>` value is a `_target_` mapping (from its
config group) or, for library callers, the policy object itself."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from omegaconf import OmegaConf

from gepa_lab.core.errors import ConfigError, describe
from gepa_lab.core.fingerprint import fingerprint
from gepa_lab.core.settings import SearchConfig
from gepa_lab.search.policies.acceptance import Acceptance
from gepa_lab.search.policies.batch import BatchSampler
from gepa_lab.search.policies.component import ComponentSelector
from gepa_lab.search.policies.frontier import Frontier
from gepa_lab.search.policies.merge import Merge
from gepa_lab.search.policies.parent import ParentSelector
from gepa_lab.search.policies.stop import StopCondition

POLICY_KEYS = ("parent", "batch", "component", "acceptance", "frontier", "merge")


# The policies' config groups: the wheel's gepa_lab/conf, or the checkout's conf/.
_OPTIONS = next(p / "search" for p in (Path(__file__).parents[2] / "conf", Path(__file__).parents[3] / "conf")
                if (p / "search").is_dir())


def _named(key: str, name: Any) -> Any:
    """A policy named by its option of conf/search/<key>/ (`search.parent=current_best` on the command
    line, `search={"parent": "current_best"}` from Python) as that option's mapping; else `name` itself."""
    if not isinstance(name, str):
        return name
    folder = _OPTIONS / key.partition(".")[0]
    options = sorted(path.stem for path in folder.glob("*.yaml"))
    if name not in options:
        raise ConfigError(f"search.{key} {name!r} is not a policy; pick one of {', '.join(options)} (or give a "
                          "`_target_` mapping)")
    loaded = OmegaConf.to_container(OmegaConf.load(folder / f"{name}.yaml")) or {}
    return loaded.get(name, loaded) if isinstance(loaded, dict) else loaded  # search/stop options name their entry


def _build(key: str, value: Any) -> Any:
    value = _named(key, value)
    if value is None or (isinstance(value, Mapping) and not value):
        return None
    if not isinstance(value, Mapping):
        return value  # a policy object (library use)
    if "_target_" not in value:
        raise ConfigError(f"search.{key} needs a `_target_` naming its class (see conf/search/{key}/)")
    from hydra.utils import get_object

    kwargs = {str(k): _plain(v) for k, v in value.items() if k != "_target_"}
    try:
        return get_object(str(value["_target_"]))(**kwargs)
    except Exception as exc:  # an unknown class, a wrong argument, a value the policy refuses
        raise ConfigError(f"search.{key}: {describe(exc)}") from None


@dataclass
class Policies:
    parent: ParentSelector
    batch: BatchSampler
    component: ComponentSelector
    acceptance: Acceptance
    frontier: Frontier
    merge: Merge | None = None
    stop: dict[str, StopCondition] = field(default_factory=dict)

    def stateful(self) -> dict[str, Any]:
        """Policies that keep state across rounds (saved in each round-end snapshot)."""
        found = {"batch": self.batch, "merge": self.merge}
        return {k: v for k, v in found.items() if v is not None and callable(getattr(v, "state", None))}


def build_policies(config: SearchConfig) -> Policies:
    built = {key: _build(key, getattr(config, key)) for key in POLICY_KEYS}
    stop = {str(name): _build(f"stop.{name}", value) for name, value in (config.stop or {}).items()}
    missing = [key for key in POLICY_KEYS if key != "merge" and built[key] is None]
    if missing:
        raise ConfigError(f"search.{missing[0]} is not configured; pick an option (search/{missing[0]}=<name>)")
    return Policies(stop={k: v for k, v in stop.items() if v is not None}, **built)


def describe_policies(config: SearchConfig) -> dict[str, Any]:
    """The policies' part of the run identity: their configuration (or an object's fingerprint)."""
    # An option named by a string ("current_best") is recorded as the mapping it stands for.
    stop = {str(name): _named(f"stop.{name}", value) for name, value in (config.stop or {}).items()}
    return {**{key: _plain(_named(key, getattr(config, key)), identity=True) for key in POLICY_KEYS},
            "stop": _plain(stop, identity=True)}


def _plain(value: Any, identity: bool = False) -> Any:
    """A config value as plain Python (OmegaConf containers to dicts and lists); for the identity,
    a policy object by its fingerprint."""
    if isinstance(value, Mapping):
        return {str(k): _plain(v, identity) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(v, identity) for v in value]
    return value if not identity or value is None or isinstance(value, (str, int, float, bool)) else fingerprint(value)
