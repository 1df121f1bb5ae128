"""gepa-lab: offline GEPA optimization research harness."""

from gepa_lab.artifacts import PromptArtifact, RoutingPolicy, SkillSpec, ToolDescription
from gepa_lab.contracts import Case, Dataset, Evaluation, Evaluator, Reflector, Summary
from gepa_lab.engine import Result, SearchConfig, optimize

__version__ = "0.1.0"

__all__ = [
    "Case",
    "Dataset",
    "Evaluation",
    "Evaluator",
    "PromptArtifact",
    "Reflector",
    "Result",
    "RoutingPolicy",
    "SearchConfig",
    "SkillSpec",
    "Summary",
    "ToolDescription",
    "optimize",
]
