"""The weather family ("weather-forecast-reporter"): an Open-Meteo-like geocoder and daily
forecast endpoint with shared place names, accented names the ASCII geocoder cannot find (the
loop trap), imperial US stations, null gaps, a stale whole-horizon summary block, 7-day forecast
windows (long ranges only on m2 / h1) and transient rate limits (docs/skillcraft_sim.md §3).

Modules: `fixtures` (generated local API data), `world` (tools), `task` (statement, parser,
ground truth), `cases` (case generator), `behaviours` (probabilities + concepts), `agent`
(the simulated agent), `grade` (rubric), `skills` (seed + reference skill), `tuned` (the tuned
reflector's weather vocabulary).
"""

from __future__ import annotations

from evaluators.skillcraft.family import FamilySpec
from evaluators.skillcraft.weather import agent, behaviours, cases, grade, skills, task, tuned
from evaluators.skillcraft.weather.world import WeatherWorld

FAMILY = FamilySpec(
    name="weather",
    behaviours=behaviours.BEHAVIOURS,
    topic=behaviours.TOPIC,
    load_world=WeatherWorld.load,
    parse_task=task.parse_task,
    simulate=agent.simulate,
    grade=grade.grade,
    entity_names=task.entity_names,
    seed_skill=skills.SEED_SKILL,
    reference_skill=skills.REFERENCE_SKILL,
    build_dataset=cases.build_dataset,
    tuned=tuned.VOCABULARY,
)
