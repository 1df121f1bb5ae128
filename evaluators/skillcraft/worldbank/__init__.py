"""The worldbank family ("worldbank-indicator-reporter"): a World-Bank-Indicators-like API with
country codes to look up (a guessed code is invalid, the loop trap, or another country's),
newest-first paginated series, null values, raw units (persons, US$), aggregates mixed into the
all-countries listing (asked about only on m2 / h1) and transient rate limits
(docs/skillcraft_sim.md §3).

Modules: `fixtures` (generated local API data), `world` (tools), `task` (statement, parser,
ground truth), `cases` (case generator), `behaviours` (probabilities + concepts), `agent`
(the simulated agent), `grade` (rubric), `skills` (seed + reference skill), `tuned` (the tuned
reflector's worldbank vocabulary).
"""

from __future__ import annotations

from evaluators.skillcraft.family import FamilySpec
from evaluators.skillcraft.worldbank import agent, behaviours, cases, grade, skills, task, tuned
from evaluators.skillcraft.worldbank.world import WorldBankWorld

FAMILY = FamilySpec(
    name="worldbank",
    behaviours=behaviours.BEHAVIOURS,
    topic=behaviours.TOPIC,
    load_world=WorldBankWorld.load,
    parse_task=task.parse_task,
    simulate=agent.simulate,
    grade=grade.grade,
    entity_names=task.entity_names,
    seed_skill=skills.SEED_SKILL,
    reference_skill=skills.REFERENCE_SKILL,
    build_dataset=cases.build_dataset,
    tuned=tuned.VOCABULARY,
)
