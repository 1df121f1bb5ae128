"""The catfacts family ("cat-facts-collector"): a catfact.ninja-like paginated listing with
repeated facts, HTML-escaped texts, stale `length` fields, keyword forms that fool substring or
case-sensitive matching, long facts cut in the listing (asked about only on m2 / h1), a
random-fact endpoint that invites a loop and transient rate limits (docs/skillcraft_sim.md §3).

Modules: `fixtures` (generated local API data), `world` (tools), `task` (statement, parser,
ground truth), `cases` (case generator), `behaviours` (probabilities + concepts), `agent`
(the simulated agent), `grade` (rubric), `skills` (seed + reference skill), `tuned` (the tuned
reflector's catfacts vocabulary).
"""

from __future__ import annotations

from evaluators.skillcraft.catfacts import agent, behaviours, cases, grade, skills, task, tuned
from evaluators.skillcraft.catfacts.world import CatFactsWorld
from evaluators.skillcraft.family import FamilySpec

FAMILY = FamilySpec(
    name="catfacts",
    behaviours=behaviours.BEHAVIOURS,
    topic=behaviours.TOPIC,
    load_world=CatFactsWorld.load,
    parse_task=task.parse_task,
    simulate=agent.simulate,
    grade=grade.grade,
    entity_names=task.entity_names,
    seed_skill=skills.SEED_SKILL,
    reference_skill=skills.REFERENCE_SKILL,
    build_dataset=cases.build_dataset,
    tuned=tuned.VOCABULARY,
)
