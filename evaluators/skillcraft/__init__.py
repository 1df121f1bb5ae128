"""SkillCraft-sim: the offline stand-in for the SkillCraft tool-use benchmark.

    SkillCraftEvaluator(family="recipe")   seeded simulated agent + rubric grading
    FeedbackReflector(seed=0)              family-agnostic offline reflector (the default)
    TunedReflector(seed=0, family=...)     reflector co-designed with the simulator (a reference)
    get_family(name), family_names()       the families (family.py), each loaded when first asked for

Layout: the generic simulator (concepts, skill, agent, tools, grading, feedback, evaluator) lives
here; each family in its own subpackage (`recipe/`, `weather/`, …) with its tables in
family.yaml; reflectors in `reflectors/`. Names are exported lazily (PEP 562), so importing one
submodule — the feedback reflector, say — loads no family.

It is a simulation and documented as one: docs/skillcraft_sim.md; numbers in
experiments/reports/skillcraft_calibration.md (`python experiments/skillcraft_calibration.py`).
"""

from __future__ import annotations

from importlib import import_module
from typing import Any

_EXPORTS = {name: f"evaluators.skillcraft.{module}" for module, names in {
    "evaluator": ("SkillCraftEvaluator", "DEFAULT_TOKEN_BUDGET", "DEFAULT_USD_PER_1K_TOKENS"),
    "reflectors.feedback": ("FeedbackReflector",),
    "reflectors.tuned": ("TunedReflector", "HeuristicReflector"),
    "family": ("get_family", "family_names", "Behaviour", "FamilySpec"),
}.items() for name in names}

__all__ = sorted(_EXPORTS)


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'evaluators.skillcraft' has no attribute {name!r}")
    return getattr(import_module(module), name)
