"""The catfacts family ("cat-facts-collector"): a catfact.ninja-like paginated listing with
repeated facts, HTML-escaped texts, stale `length` fields, keyword forms that fool substring or
case-sensitive matching, long facts cut in the listing (asked about only on m2 / h1), a
random-fact endpoint that invites a loop and transient rate limits (docs/skillcraft_sim.md §3).

Modules: the standard family layout (docs/skillcraft_sim.md §2.3); `__init__` only assembles
them with `family.family_spec`.
"""

from __future__ import annotations

from evaluators.skillcraft.catfacts import agent, behaviours, cases, grade, skills, task, tuned
from evaluators.skillcraft.catfacts.world import CatFactsWorld
from evaluators.skillcraft.family import family_spec

FAMILY = family_spec("catfacts", CatFactsWorld.load, behaviours=behaviours, task=task, agent=agent, grade=grade,
                     skills=skills, cases=cases, tuned=tuned)
