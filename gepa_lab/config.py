"""The root structured config. Its groups are the engine's own dataclasses (`gepa_lab.core.settings`)
and the dataset loader's (`gepa_lab.data.DatasetSource`); evaluators, reflectors, trackers and
submitters are chosen by `_target_` in their YAML and built with `hydra.utils.instantiate`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from hydra.core.config_store import ConfigStore
from omegaconf import MISSING, OmegaConf

from gepa_lab.core.errors import ConfigError
from gepa_lab.core.settings import (
    EvaluationSettings,
    PromotionPolicy,
    ReflectionSettings,
    SearchConfig,
)
from gepa_lab.data import DatasetSource
from gepa_lab.lm.config import LMConfig

PROGRESS_MODES = ("auto", "bar", "log", "off")


@dataclass
class SeedSource:
    """Where the seed artifact comes from: the dataset's seed file (default), or the active revision
    of the artifact `from_store` names in the revision store (docs/revisions.md), which is then
    also the submission's parent. `prefer_store`: the store's active revision of the seed's own
    artifact when there is one, else the seed file (one setting for every CI run)."""

    from_store: str | None = None  # artifact name
    store: str | None = None  # store URL; None: submitter.url, else sqlite:///revisions.db
    prefer_store: bool = False


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
    progress: str = "auto"  # auto | bar | log | off
    dataset: DatasetSource = MISSING
    seed: SeedSource = field(default_factory=SeedSource)
    search: SearchConfig = field(default_factory=SearchConfig)
    evaluation: EvaluationSettings = field(default_factory=EvaluationSettings)
    reflection: ReflectionSettings = field(default_factory=ReflectionSettings)
    promotion: PromotionPolicy = field(default_factory=PromotionPolicy)
    lm: LMConfig = field(default_factory=LMConfig)  # lm.task, lm.reflection (gepa_lab.lm)
    # `_target_` groups: a mapping with `_target_` and the constructor's arguments (or empty: none).
    evaluator: Any = MISSING
    reflector: Any = MISSING
    tracking: Any = field(default_factory=dict)
    submitter: Any = field(default_factory=dict)
    transfer: TransferConfig = field(default_factory=TransferConfig)

    def __post_init__(self) -> None:
        if self.progress not in PROGRESS_MODES:
            raise ConfigError(f"progress must be one of {', '.join(PROGRESS_MODES)} (got {self.progress!r})")


def _run_dir(resume: str | None, fresh: str) -> str:
    # A resumed run logs into its own run dir, not into a stray new one.
    return str(resume) if resume else fresh


def _hydra_subdir(resume: str | None) -> str:
    # ...without overwriting the original run's .hydra/ files (its overrides are its audit trail).
    return f".hydra/resume-{datetime.now():%Y%m%d-%H%M%S-%f}" if resume else ".hydra"


def _dirname(overrides: str) -> str:
    # A config group override (search/parent=pareto) must not nest the sweep job's directory.
    return overrides.replace("/", "-")


def register_configs() -> None:
    ConfigStore.instance().store(name="base_config", node=Config)
    OmegaConf.register_new_resolver("gepa_lab.run_dir", _run_dir, replace=True)
    OmegaConf.register_new_resolver("gepa_lab.dirname", _dirname, replace=True)
    OmegaConf.register_new_resolver("gepa_lab.hydra_subdir", _hydra_subdir, replace=True, use_cache=True)
