"""The worldbank family ("worldbank-indicator-reporter"): a World-Bank-Indicators-like API with
ISO3 codes to look up (a guessed code loops), newest-first paginated series, null values, raw
units, aggregates mixed into the country list and transient rate limits
(docs/skillcraft_sim.md §3.4). Its tables: family.yaml.
"""

from evaluators.skillcraft.worldbank.agent import solve, validate
from evaluators.skillcraft.worldbank.task import entity_names, grade, parse_task
from evaluators.skillcraft.worldbank.world import WorldBankTools as Tools
from evaluators.skillcraft.worldbank.world import WorldBankWorld

World = WorldBankWorld.from_fixtures
__all__ = ["Tools", "World", "entity_names", "grade", "parse_task", "solve", "validate"]
