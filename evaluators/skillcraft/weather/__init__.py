"""The weather family ("weather-forecast-reporter"): an Open-Meteo-like geocoder and daily
forecast endpoint with shared place names, accented names the ASCII geocoder cannot find (the
loop trap), imperial US stations, null gaps, a stale whole-horizon summary block, 7-day forecast
windows (long ranges only on m2 / h1) and transient rate limits (docs/skillcraft_sim.md §3).

Modules: the standard family layout (docs/skillcraft_sim.md §2.3); `__init__` only assembles
them with `family.family_spec`.
"""

from __future__ import annotations

from evaluators.skillcraft.family import family_spec
from evaluators.skillcraft.weather import agent, behaviours, cases, grade, skills, task, tuned
from evaluators.skillcraft.weather.world import WeatherWorld

FAMILY = family_spec("weather", WeatherWorld.load, behaviours=behaviours, task=task, agent=agent, grade=grade,
                     skills=skills, cases=cases, tuned=tuned)
