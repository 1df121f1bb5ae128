"""SkillCraft-sim: the offline stand-in for the SkillCraft tool-use benchmark.

    SkillCraftEvaluator(family="recipe")   seeded simulated agent + rubric grading
    HeuristicReflector(seed=0)             offline reflector (reads only artifact + records)
    FAMILIES                               registry of task families (recipe for now)

It is a simulation and documented as one: the model is described in docs/skillcraft_sim.md, its
numbers in experiments/reports/skillcraft_calibration.md (regenerate with
`python experiments/skillcraft_calibration.py`).
"""

from evaluators.skillcraft import catalog  # noqa: F401  (registers the built-in families)
from evaluators.skillcraft.evaluator import (
    DEFAULT_TOKEN_BUDGET,
    DEFAULT_USD_PER_1K_TOKENS,
    SkillCraftEvaluator,
)
from evaluators.skillcraft.families import FAMILIES, Behaviour, FamilySpec
from evaluators.skillcraft.reflector import HeuristicReflector

__all__ = [
    "DEFAULT_TOKEN_BUDGET",
    "DEFAULT_USD_PER_1K_TOKENS",
    "FAMILIES",
    "Behaviour",
    "FamilySpec",
    "HeuristicReflector",
    "SkillCraftEvaluator",
]
