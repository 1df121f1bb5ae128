"""The worldbank family ("worldbank-indicator-reporter"): a World-Bank-Indicators-like API with
country codes to look up (a guessed code is invalid, the loop trap, or another country's),
newest-first paginated series, null values, raw units (persons, US$), aggregates mixed into the
all-countries listing (asked about only on m2 / h1) and transient rate limits
(docs/skillcraft_sim.md §3).

Modules: the standard family layout (docs/skillcraft_sim.md §2.3); `__init__` only assembles
them with `family.family_spec`.
"""

from __future__ import annotations

from evaluators.skillcraft.family import family_spec
from evaluators.skillcraft.worldbank import agent, behaviours, cases, grade, skills, task, tuned
from evaluators.skillcraft.worldbank.world import WorldBankWorld

FAMILY = family_spec("worldbank", WorldBankWorld.load, behaviours=behaviours, task=task, agent=agent, grade=grade,
                     skills=skills, cases=cases, tuned=tuned)
