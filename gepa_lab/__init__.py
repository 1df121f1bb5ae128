"""gepa-lab: offline GEPA optimization research harness.

    from gepa_lab import load_dataset_dir, load_artifact, optimize, SearchConfig

The names below are the stable library surface; submodules may move.
"""

import types

from gepa_lab.core.artifacts import (
    Artifact,
    PromptArtifact,
    RoutingPolicy,
    SkillSpec,
    TextsArtifact,
    ToolDescription,
    artifact_id,
)
from gepa_lab.core.contracts import (
    SPLITS,
    Case,
    Dataset,
    Evaluation,
    Evaluator,
    Reflector,
    RevisionSubmitter,
    Summary,
    canonical_json,
    sha256_hex,
    split_digest,
)
from gepa_lab.core.errors import (
    ConfigError,
    EvaluatorContractError,
    EvaluatorError,
    GepaLabError,
    ReflectorError,
    RunAborted,
    describe,
)
from gepa_lab.core.events import Tracker
from gepa_lab.core.result import Result
from gepa_lab.core.settings import EvaluationSettings, PromotionPolicy, ReflectionSettings, SearchConfig, from_mapping
from gepa_lab.data import (
    DatasetSource,
    HFSplits,
    frozen_files,
    hf_rows,
    load_artifact,
    load_dataset,
    load_dataset_dir,
    load_hf_saved,
    resolve_path,
)
from gepa_lab.search.engine import optimize
from gepa_lab.search.state import select_parent

__version__ = "0.1.0"

# The stable surface (docs/design.md §2.7): every name imported above, written once.
__all__ = sorted(name for name, value in globals().items()
                 if not name.startswith("_") and not isinstance(value, types.ModuleType))
