"""The root structured config and the checks of a composed one.

Its groups are the engine's own dataclasses (`gepa_lab.core.settings`) and the dataset loader's
(`gepa_lab.data.DatasetSource`): their defaults are the only ones (no YAML restates them) and the
promotion presets are `PromotionPolicy.preset`'s, registered here as the options of `promotion`.
Evaluators, reflectors, trackers and submitters are chosen by `_target_` in their YAML and built
with `hydra.utils.instantiate`. `check_config` refuses what can be refused without building
anything (types, unknown keys, ranges, `_target_` classes and their arguments, secrets),
each as one line.
"""

from __future__ import annotations

import dataclasses
import difflib
import inspect
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from hydra.core.config_store import ConfigStore
from omegaconf import MISSING, DictConfig, OmegaConf
from omegaconf.errors import InterpolationKeyError, OmegaConfBaseException, ValidationError

from gepa_lab.core.errors import ConfigError
from gepa_lab.core.settings import (
    PRESETS,
    EvaluationSettings,
    PromotionPolicy,
    ReflectionSettings,
    SearchConfig,
    refuse_secrets,
    target_class,
)
from gepa_lab.data import DatasetSource
from gepa_lab.lm.config import LMConfig


@dataclass
class SeedSource:
    """Where the seed artifact comes from: the dataset's seed file (default), or the active revision
    of the artifact `from_store` names in the revision store (docs/revisions.md), which is then
    also the submission's parent. `prefer_store`: the store's active revision of the seed's own
    artifact when there is one, else the seed file (one setting for every CI run)."""

    from_store: str | None = None  # artifact name
    store: str | None = None  # store URL; None: submitter.url, else sqlite:///revisions.db
    prefer_store: bool = False

    def __post_init__(self) -> None:
        if self.from_store and self.prefer_store:
            raise ConfigError(f"seed.from_store={self.from_store!r} and seed.prefer_store=true contradict each other: "
                              "from_store requires the store's active revision of that artifact, prefer_store falls "
                              "back to the seed file without one; keep one of them")


@dataclass
class TransferConfig:
    """The transfer check (docs/design.md §4, rule 6): a second evaluator under which the winner
    must also beat the seed on Holdout. `evaluator`: a `_target_` mapping (conf/transfer/evaluator/),
    or empty for none."""

    evaluator: Any = field(default_factory=dict)


@dataclass
class Config:
    experiment_name: str = "default"
    submit: bool = False
    resume: str | None = None  # run dir of an interrupted run to continue
    progress: str = "auto"  # auto | bar | log | off (gepa_lab.tracking.progress checks it)
    dataset: DatasetSource = MISSING
    seed: SeedSource = field(default_factory=SeedSource)
    search: SearchConfig = field(default_factory=SearchConfig)
    evaluation: EvaluationSettings = field(default_factory=EvaluationSettings)
    reflection: ReflectionSettings = field(default_factory=ReflectionSettings)
    promotion: PromotionPolicy = field(default_factory=PromotionPolicy)
    # lm.task, lm.reflection (gepa_lab.lm). The `lm` group is composed only by the evaluators and
    # reflectors that use an LM (their YAML selects it); a run without one does not record it.
    lm: LMConfig = field(default_factory=LMConfig)
    # `_target_` groups: a mapping with `_target_` and the constructor's arguments (or empty: none).
    evaluator: Any = MISSING
    reflector: Any = MISSING
    tracking: Any = field(default_factory=dict)
    submitter: Any = field(default_factory=dict)
    transfer: TransferConfig = field(default_factory=TransferConfig)


def register_configs() -> None:
    from gepa_lab.search.policies.build import OPTIONS, default_option, option_node

    store = ConfigStore.instance()
    store.store(name="base_config", node=Config)
    for name in PRESETS:
        store.store(group="promotion", name=name, node=PromotionPolicy.preset(name))
    # The search's policies: each option of search/<slot> generated from its class, and a defaults
    # list (conf/config.yaml includes it) naming the option SearchConfig defaults to.
    for group, options in OPTIONS.items():
        for name in options:
            store.store(group=f"search/{group}", name=name, node=option_node(group, name))
    store.store(name="search_policies", node={"defaults": [{f"search/{g}": default_option(g)} for g in OPTIONS]})
    # A resumed run logs into its own run dir, not into a stray new one...
    OmegaConf.register_new_resolver("gepa_lab.run_dir", lambda resume, fresh: str(resume) if resume else fresh,
                                    replace=True)
    # ...without overwriting the original run's .hydra/ files (its overrides are its audit trail).
    OmegaConf.register_new_resolver("gepa_lab.hydra_subdir", lambda resume: (
        f".hydra/resume-{datetime.now():%Y%m%d-%H%M%S-%f}" if resume else ".hydra"), replace=True, use_cache=True)
    # A config group override (search/parent=pareto) must not nest the sweep job's directory.
    OmegaConf.register_new_resolver("gepa_lab.dirname", lambda overrides: overrides.replace("/", "-"), replace=True)


# -- configuration errors -----------------------------------------------------------------------
def describe_config_error(exc: BaseException) -> str:
    """One line for a Hydra / OmegaConf composition error, built from the exceptions' fields."""
    from hydra.errors import MissingConfigException, OverrideParseException

    chain: list[BaseException] = []
    current: BaseException | None = exc
    while current is not None and current not in chain:
        chain.append(current)
        current = current.__cause__ or current.__context__
    for err in chain:
        if isinstance(err, MissingConfigException) and err.missing_cfg_file:
            group, _, option = err.missing_cfg_file.rpartition("/")
            if group:
                options = ", ".join(err.options or []) or "none"
                return f"unknown option {group}={option}; available: {options}"
            return f"config {err.missing_cfg_file!r} not found"
        if isinstance(err, OverrideParseException):
            return f"cannot parse the override {err.override!r}; write key=value (`python -m gepa_lab --help`)"
        if isinstance(err, OmegaConfBaseException) and err.full_key:
            if isinstance(err, ValidationError):
                reason = str(err.msg).splitlines()[0] if err.msg else "wrong type"
                return f"config key {err.full_key} cannot take {err.value!r}: {reason}"
            if isinstance(err, InterpolationKeyError):  # `${a.b}` names a key the config lacks
                return f"config key {err.full_key}: {str(err.msg).splitlines()[0]} (pick options that provide it)"
            return unknown_key(str(err.full_key), _siblings(err))
    # Hydra's own message, its lines joined: the later ones often say what to do.
    return " ".join(line.strip() for line in str(exc).splitlines() if line.strip()) or type(exc).__name__


def _siblings(err: OmegaConfBaseException) -> list[str]:
    parent = err.parent_node
    if isinstance(parent, DictConfig):
        return [str(k) for k in parent.keys()]
    schema = err.object_type
    return [f.name for f in dataclasses.fields(schema)] if dataclasses.is_dataclass(schema) else []


def unknown_key(full_key: str, known: list[str], hint: str = "`python -m gepa_lab --cfg job` prints every key") -> str:
    name = full_key.rpartition(".")[2]
    close = difflib.get_close_matches(name, known, n=1)
    did_you_mean = f"; did you mean {close[0]!r}?" if close else ""
    return f"unknown config key {full_key!r}{did_you_mean} ({hint})"


def to_config(cfg: DictConfig) -> Config:
    """Types, unknown keys and value ranges, into the root dataclass. The composed config is merged
    onto a fresh schema, which refuses the keys a `+key=value` override forced into a typed group."""
    try:
        merged = OmegaConf.merge(OmegaConf.structured(Config), OmegaConf.to_container(cfg))
        conf = OmegaConf.to_object(merged)
    except OmegaConfBaseException as exc:
        raise ConfigError(describe_config_error(exc)) from exc
    assert isinstance(conf, Config)
    return conf


# -- `_target_` groups --------------------------------------------------------------------------
TARGET_GROUPS = {"evaluator": True, "reflector": True, "tracking": False, "submitter": False,  # required?
                 "transfer.evaluator": False}


def _check_target(group: str, node: Any, required: bool) -> None:
    """The class a `_target_` group names, located by Hydra's instantiate (as a partial: nothing is
    built), its keys bound to the constructor's parameters as instantiate's call will bind them."""
    if not node:
        if required:
            raise ConfigError(f"{group} is not configured; pick an option ({group}=<name>)")
        return
    target = target_class(group, node if OmegaConf.is_dict(node) else {})
    keys = [str(k) for k in node.keys() if not str(k).startswith("_")]
    try:
        signature = inspect.signature(target)
        signature.bind(**dict.fromkeys(keys))
    except ValueError:  # no signature to check against (some builtins)
        return
    except TypeError as exc:
        takes = [n for n, p in signature.parameters.items() if p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)]
        unknown = [k for k in keys if k not in takes]
        if unknown:
            raise ConfigError(unknown_key(f"{group}.{unknown[0]}", takes,
                                          f"{group} takes: {', '.join(takes)}")) from None
        raise ConfigError(f"{group}: {exc}; set it in the {group} config") from None


def uses_lm(cfg: DictConfig) -> bool:
    """Whether a component reads the `lm` settings (`${lm.task}`, `${lm.reflection}` in its YAML)."""
    nodes = [OmegaConf.select(cfg, group) for group in TARGET_GROUPS]
    return "${lm." in str([OmegaConf.to_container(n, resolve=False) for n in nodes if OmegaConf.is_config(n)])


def check_config(cfg: DictConfig) -> Config:
    """Everything that can be checked without building anything; raises ConfigError. (The
    pre-flight also builds the search's policies, which check their own values.)"""
    from gepa_lab.tracking.progress import ProgressTracker

    conf = to_config(cfg)
    refuse_secrets(dataclasses.asdict(conf))
    ProgressTracker(conf.progress)  # it owns the progress modes and refuses others
    for group, required in TARGET_GROUPS.items():
        _check_target(group, OmegaConf.select(cfg, group), required)
    return conf
