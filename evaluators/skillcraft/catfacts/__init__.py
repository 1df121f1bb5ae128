"""The catfacts family ("cat-facts-collector"): a catfact.ninja-like paginated listing with
repeated facts, HTML entities, stale lengths, truncated long facts, a tempting random-fact
endpoint (the loop trap) and transient rate limits (docs/skillcraft_sim.md §3.5). Its tables:
family.yaml.
"""

from evaluators.skillcraft.catfacts.agent import solve, validate
from evaluators.skillcraft.catfacts.task import entity_names, grade, parse_task
from evaluators.skillcraft.catfacts.world import CatFactsTools as Tools
from evaluators.skillcraft.catfacts.world import CatFactsWorld

World = CatFactsWorld.from_fixtures
__all__ = ["Tools", "World", "entity_names", "grade", "parse_task", "solve", "validate"]
