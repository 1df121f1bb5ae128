"""Structured-config schema for Hydra. Groups mirror the code: dataset, evaluator, reflector,
search, promotion, tracking, submitter. Each option of a group registers its own dataclass so a
typo'd key or a wrong type fails at composition time."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from hydra.core.config_store import ConfigStore
from omegaconf import MISSING

from gepa_lab.mlflow_tracker import MlflowTrackingConfig


@dataclass
class DatasetConfig:
    path: str = MISSING  # folder with the split files (relative: cwd, then project root)
    id: str | None = None  # None: take it from the manifest
    version: str | None = None
    feedback: str = "feedback.jsonl"
    validation: str = "validation.jsonl"
    holdout: str | None = "holdout.jsonl"  # null: run without a holdout split
    manifest: str | None = "manifest.json"  # digests to verify; null: skip
    seed_artifact: str = "seed_skill.json"  # relative to `path`


@dataclass
class SearchGroupConfig:
    algorithm: str = "gepa"
    max_iterations: int = 10
    max_metric_calls: int = 1000
    minibatch_size: int = 3
    random_seed: int = 1
    max_cost_usd: float | None = None  # task + reflection USD; null = no money budget
    time_limit_s: float | None = None  # wall time of the search; null = no limit


@dataclass
class PromotionConfig:
    min_holdout_improvement: float = 0.0
    critical_tolerance: float = 0.0  # 0 = DESIGN's exact rule: any drop on a critical case fails


@dataclass
class EvaluationConfig:
    workers: int = 1  # results are identical for every value
    backend: str = "thread"  # thread | process
    timeout_s: float | None = None  # per case; null = no limit
    max_retries: int = 2
    retry_backoff_s: float = 0.5
    max_consecutive_failures: int = 10  # abort the run after this many failed evaluations in a row


@dataclass
class ReflectionConfig:
    max_retries: int = 2  # provider errors / rate limits; then the search stops cleanly
    retry_backoff_s: float = 1.0


@dataclass
class SkillCraftEvaluatorConfig:
    name: str = "skillcraft"
    family: str = "recipe"
    data_dir: str | None = None  # None: datasets/skillcraft/<family>
    token_budget: int = 200_000
    usd_per_1k_tokens: float = 0.002


@dataclass
class HeuristicReflectorConfig:
    name: str = "heuristic"
    seed: int = 0


@dataclass
class NoTrackingConfig:
    name: str = "none"


@dataclass
class NoSubmitterConfig:
    name: str = "none"


@dataclass
class Config:
    experiment_name: str = "default"
    submit: bool = False
    resume: str | None = None  # run dir of an interrupted run to continue
    progress: str = "auto"  # auto | bar | log | off
    evaluation: EvaluationConfig = field(default_factory=EvaluationConfig)
    reflection: ReflectionConfig = field(default_factory=ReflectionConfig)
    dataset: DatasetConfig = field(default_factory=DatasetConfig)
    search: SearchGroupConfig = field(default_factory=SearchGroupConfig)
    promotion: PromotionConfig = field(default_factory=PromotionConfig)
    evaluator: Any = MISSING
    reflector: Any = MISSING
    tracking: Any = MISSING
    submitter: Any = MISSING


GROUP_SCHEMAS: dict[str, dict[str, type]] = {
    "dataset": {"dataset_schema": DatasetConfig},
    "search": {"search_schema": SearchGroupConfig},
    "promotion": {"promotion_schema": PromotionConfig},
    "evaluator": {"skillcraft_schema": SkillCraftEvaluatorConfig},
    "reflector": {"heuristic_schema": HeuristicReflectorConfig},
    "tracking": {"none_schema": NoTrackingConfig, "mlflow_schema": MlflowTrackingConfig},
    "submitter": {"none_schema": NoSubmitterConfig},
}


def register_configs() -> None:
    cs = ConfigStore.instance()
    cs.store(name="base_config", node=Config)
    for group, schemas in GROUP_SCHEMAS.items():
        for name, node in schemas.items():
            cs.store(group=group, name=name, node=node)
