"""gepa-lab: offline GEPA optimization research harness.

    from gepa_lab import load_dataset_dir, load_artifact, optimize, SearchConfig

The names below are the stable library surface; submodules may move.
"""

from gepa_lab.core.artifacts import (
    Artifact,
    PromptArtifact,
    RoutingPolicy,
    SkillSpec,
    TextsArtifact,
    ToolDescription,
)
from gepa_lab.core.contracts import (
    Case,
    Dataset,
    Evaluation,
    Evaluator,
    Reflector,
    RevisionSubmitter,
    Summary,
    canonical_json,
    split_digest,
)
from gepa_lab.core.errors import (
    ConfigError,
    EvaluatorContractError,
    EvaluatorError,
    GepaLabError,
    ReflectorError,
    RunAborted,
)
from gepa_lab.core.events import Tracker
from gepa_lab.core.result import Result
from gepa_lab.core.settings import (
    EvaluationSettings,
    PromotionPolicy,
    ReflectionSettings,
    SearchConfig,
    from_mapping,
)
from gepa_lab.data import (
    DatasetSource,
    HFSplits,
    load_artifact,
    load_dataset,
    load_dataset_dir,
    load_hf_saved,
    resolve_path,
)
from gepa_lab.lm.client import build_lm, transient_errors
from gepa_lab.lm.config import LMSettings, as_settings
from gepa_lab.lm.metered import Metered, case_seed, metered
from gepa_lab.lm.usage import Usage, UsageMeter
from gepa_lab.search.engine import optimize
from gepa_lab.search.pareto import select_parent

__version__ = "0.1.0"

__all__ = [
    "Artifact",
    "Case",
    "ConfigError",
    "Dataset",
    "DatasetSource",
    "Evaluation",
    "EvaluationSettings",
    "Evaluator",
    "EvaluatorContractError",
    "EvaluatorError",
    "GepaLabError",
    "HFSplits",
    "LMSettings",
    "Metered",
    "PromotionPolicy",
    "PromptArtifact",
    "ReflectionSettings",
    "Reflector",
    "ReflectorError",
    "Result",
    "RevisionSubmitter",
    "RoutingPolicy",
    "RunAborted",
    "SearchConfig",
    "SkillSpec",
    "Summary",
    "TextsArtifact",
    "ToolDescription",
    "Tracker",
    "Usage",
    "UsageMeter",
    "as_settings",
    "build_lm",
    "case_seed",
    "canonical_json",
    "from_mapping",
    "load_artifact",
    "load_dataset",
    "load_dataset_dir",
    "load_hf_saved",
    "metered",
    "optimize",
    "resolve_path",
    "select_parent",
    "split_digest",
    "transient_errors",
]
