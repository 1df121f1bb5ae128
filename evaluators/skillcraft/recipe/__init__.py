"""The recipe family ("recipe-cookbook-builder"): a paginated recipe API with overlapping pages,
a self-pointing empty sentinel page (the loop trap), stale `total_hint`s, mixed units, missing
values and transient rate limits (docs/skillcraft_sim.md §3).

Modules: the standard family layout (docs/skillcraft_sim.md §2.3); `__init__` only assembles
them with `family.family_spec`.
"""

from __future__ import annotations

from evaluators.skillcraft.family import family_spec
from evaluators.skillcraft.recipe import agent, behaviours, cases, grade, skills, task, tuned
from evaluators.skillcraft.recipe.world import RecipeWorld

FAMILY = family_spec("recipe", RecipeWorld.load, behaviours=behaviours, task=task, agent=agent, grade=grade,
                     skills=skills, cases=cases, tuned=tuned)
