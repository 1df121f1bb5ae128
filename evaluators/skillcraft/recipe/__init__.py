"""The recipe family ("recipe-cookbook-builder"): a paginated recipe API with overlapping pages,
a self-pointing empty sentinel page (the loop trap), stale `total_hint`s, mixed units, missing
values and transient rate limits (docs/skillcraft_sim.md §3).

Modules: `fixtures` (generated local API data), `world` (tools), `task` (statement, parser,
ground truth), `cases` (case generator), `behaviours` (probabilities + concepts), `agent`
(the simulated agent), `grade` (rubric), `skills` (seed + reference skill), `tuned` (the tuned
reflector's recipe vocabulary).
"""

from __future__ import annotations

from evaluators.skillcraft.family import FamilySpec
from evaluators.skillcraft.recipe import agent, behaviours, cases, grade, skills, task, tuned
from evaluators.skillcraft.recipe.world import RecipeWorld

FAMILY = FamilySpec(
    name="recipe",
    behaviours=behaviours.BEHAVIOURS,
    topic=behaviours.TOPIC,
    load_world=RecipeWorld.load,
    parse_task=task.parse_task,
    simulate=agent.simulate,
    grade=grade.grade,
    entity_names=task.entity_names,
    seed_skill=skills.SEED_SKILL,
    reference_skill=skills.REFERENCE_SKILL,
    build_dataset=cases.build_dataset,
    cap_nouns=behaviours.CAP_NOUNS,
    tuned=tuned.VOCABULARY,
)
