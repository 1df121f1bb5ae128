"""The pokemon family ("pokemon-evolution-reporter"): a PokéAPI-like API with species whose
Pokémon carries a form suffix (the loop trap), branching evolution chains (asked about only on
m2 / h1), past_stats of older generations, the 18-type chart with dual types and immunities,
and transient rate limits (docs/skillcraft_sim.md §3).

Modules: `fixtures` (generated local API data), `world` (tools), `task` (statement, parser,
ground truth), `cases` (case generator), `behaviours` (probabilities + concepts), `agent`
(the simulated agent), `grade` (rubric), `skills` (seed + reference skill), `tuned` (the tuned
reflector's pokemon vocabulary).
"""

from __future__ import annotations

from evaluators.skillcraft.family import FamilySpec
from evaluators.skillcraft.pokemon import agent, behaviours, cases, grade, skills, task, tuned
from evaluators.skillcraft.pokemon.world import PokemonWorld

FAMILY = FamilySpec(
    name="pokemon",
    behaviours=behaviours.BEHAVIOURS,
    topic=behaviours.TOPIC,
    load_world=PokemonWorld.load,
    parse_task=task.parse_task,
    simulate=agent.simulate,
    grade=grade.grade,
    entity_names=task.entity_names,
    seed_skill=skills.SEED_SKILL,
    reference_skill=skills.REFERENCE_SKILL,
    build_dataset=cases.build_dataset,
    tuned=tuned.VOCABULARY,
)
