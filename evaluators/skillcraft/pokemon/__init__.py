"""The pokemon family ("pokemon-evolution-reporter"): a PokéAPI-like API with species whose
Pokémon carries a form suffix (the loop trap), branching evolution chains (asked about only on
m2 / h1), past_stats of older generations, the 18-type chart with dual types and immunities,
and transient rate limits (docs/skillcraft_sim.md §3).

Modules: the standard family layout (docs/skillcraft_sim.md §2.3); `__init__` only assembles
them with `family.family_spec`.
"""

from __future__ import annotations

from evaluators.skillcraft.family import family_spec
from evaluators.skillcraft.pokemon import agent, behaviours, cases, grade, skills, task, tuned
from evaluators.skillcraft.pokemon.world import PokemonWorld

FAMILY = family_spec("pokemon", PokemonWorld.load, behaviours=behaviours, task=task, agent=agent, grade=grade,
                     skills=skills, cases=cases, tuned=tuned)
