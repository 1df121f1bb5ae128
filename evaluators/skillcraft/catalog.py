"""Registers the built-in families. Add weather / worldbank / catfacts / pokemon here."""

from __future__ import annotations

from evaluators.skillcraft import recipe, recipe_agent
from evaluators.skillcraft.families import FAMILIES, FamilySpec, register
from evaluators.skillcraft.tools import RecipeWorld

if "recipe" not in FAMILIES:
    register(FamilySpec(
        name="recipe",
        behaviours=recipe.BEHAVIOURS,
        trigger_words=recipe.TRIGGER_WORDS,
        load_world=RecipeWorld.load,
        parse_task=recipe.parse_task,
        simulate=recipe_agent.simulate,
        grade=recipe.grade,
        entity_names=recipe.entity_names,
        seed_skill=recipe.SEED_SKILL,
        reference_skill=recipe.REFERENCE_SKILL,
    ))
