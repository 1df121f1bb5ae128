"""The root structured config. Its groups are the engine's own dataclasses (`gepa_lab.core.settings`)
and the dataset loader's (`gepa_lab.data.DatasetSource`); evaluators, reflectors, trackers and
submitters are chosen by `_target_` in their YAML and built with `hydra.utils.instantiate`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from hydra.core.config_store import ConfigStore
from omegaconf import MISSING

from gepa_lab.core.errors import ConfigError
from gepa_lab.core.settings import (
    EvaluationSettings,
    PromotionPolicy,
    ReflectionSettings,
    SearchConfig,
)
from gepa_lab.data import DatasetSource

PROGRESS_MODES = ("auto", "bar", "log", "off")


@dataclass
class Config:
    experiment_name: str = "default"
    submit: bool = False
    resume: str | None = None  # run dir of an interrupted run to continue
    progress: str = "auto"  # auto | bar | log | off
    dataset: DatasetSource = MISSING
    search: SearchConfig = field(default_factory=SearchConfig)
    evaluation: EvaluationSettings = field(default_factory=EvaluationSettings)
    reflection: ReflectionSettings = field(default_factory=ReflectionSettings)
    promotion: PromotionPolicy = field(default_factory=PromotionPolicy)
    # `_target_` groups: a mapping with `_target_` and the constructor's arguments (or empty: none).
    evaluator: Any = MISSING
    reflector: Any = MISSING
    tracking: Any = field(default_factory=dict)
    submitter: Any = field(default_factory=dict)

    def __post_init__(self) -> None:
        if self.progress not in PROGRESS_MODES:
            raise ConfigError(f"progress must be one of {', '.join(PROGRESS_MODES)} (got {self.progress!r})")


def register_configs() -> None:
    ConfigStore.instance().store(name="base_config", node=Config)
