"""The pokemon family ("pokemon-evolution-reporter"): a PokéAPI-like API with form-only species
(a bare name loops), branching evolution chains, older past_stats, dual types, a type chart read
in one direction, immunities and transient rate limits (docs/skillcraft_sim.md §3.6). Its
tables: family.yaml.
"""

from evaluators.skillcraft.pokemon.agent import solve, validate
from evaluators.skillcraft.pokemon.task import entity_names, grade, parse_task
from evaluators.skillcraft.pokemon.world import PokemonTools as Tools
from evaluators.skillcraft.pokemon.world import PokemonWorld

World = PokemonWorld.from_fixtures
__all__ = ["Tools", "World", "entity_names", "grade", "parse_task", "solve", "validate"]
