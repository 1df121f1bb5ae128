"""The recipe family ("recipe-cookbook-builder"): a paginated recipe API with overlapping pages,
a self-pointing empty sentinel page (the loop trap), stale `total_hint`s, mixed units, missing
values and transient rate limits (docs/skillcraft_sim.md §3.2). Its tables: family.yaml.
"""

from evaluators.skillcraft.recipe.agent import solve, validate
from evaluators.skillcraft.recipe.task import entity_names, grade, parse_task
from evaluators.skillcraft.recipe.world import RecipeTools as Tools
from evaluators.skillcraft.recipe.world import RecipeWorld

World = RecipeWorld.from_fixtures
__all__ = ["Tools", "World", "entity_names", "grade", "parse_task", "solve", "validate"]
