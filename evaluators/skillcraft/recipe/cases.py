"""The recipe family's case generator: which lists, details and fault rates each scale asks for
(docs/skillcraft_sim.md §3.3). Called by `python -m evaluators.skillcraft.generate`.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import partial
from typing import Any

from evaluators.skillcraft.casebook import ATTEMPTS, Casebook, claim, fixtures_text, no_case
from evaluators.skillcraft.family import DatasetFiles
from evaluators.skillcraft.recipe.fixtures import generate_recipe_fixtures
from evaluators.skillcraft.recipe.task import ground_truth, task_params, task_statement
from evaluators.skillcraft.recipe.world import RecipeWorld
from gepa_lab.core.contracts import canonical_json

CASEBOOK = Casebook("recipe")
OUTPUT_FILES = ("cookbook.json", "recipe_report.json", "cookbook_summary.json", "dishes.json")


@dataclass(frozen=True)
class ScaleSpec:
    categories: int
    cuisines: int
    ingredients: int
    details: tuple[int, int]  # (min, max) recipes needing full details; (0, 0) = none
    detail_pairs: int
    max_pages: int
    sentinel_ok: bool
    fault_rate: float
    any_single: bool = False
    detail_share: float = 1.0  # share of cases that ask for full recipes (when detail_pairs > 0)


SCALES: dict[str, ScaleSpec] = {
    "e1": ScaleSpec(1, 0, 0, (0, 0), 0, 3, False, 0.0, any_single=True),
    "e2": ScaleSpec(1, 1, 0, (1, 2), 1, 4, True, 0.0, detail_share=0.4),
    "e3": ScaleSpec(2, 1, 0, (1, 3), 1, 4, True, 0.0),
    "m1": ScaleSpec(1, 1, 1, (1, 3), 1, 4, True, 0.01),
    "m2": ScaleSpec(2, 1, 1, (2, 4), 1, 5, True, 0.10, detail_share=0.8),
    "h1": ScaleSpec(2, 2, 1, (2, 5), 2, 5, True, 0.15),
}


def _pages(world: RecipeWorld, key: str) -> int:
    return -(-len(world.members[key]) // world.page_size)


def _pick_task(world: RecipeWorld, scale: str, r: int, seen: set[str]) -> dict[str, Any]:
    spec = SCALES[scale]
    rng = CASEBOOK.rng(scale, r)
    pools: dict[str, list[str]] = {}
    for by in ("category", "cuisine", "ingredient"):
        pools[by] = sorted(
            k.split(":", 1)[1] for k, q in world.quirks.items()
            if k.startswith(by + ":") and _pages(world, k) <= spec.max_pages
            and (spec.sentinel_ok or not q["sentinel"])
        )
    want_details = spec.detail_pairs > 0 and rng.random() < spec.detail_share
    for _ in range(ATTEMPTS):
        if spec.any_single:  # the easiest tier: one list, a category or a cuisine
            lists = [rng.choice([("category", v) for v in pools["category"]] + [("cuisine", v) for v in pools["cuisine"]])]
        else:
            lists = [("category", v) for v in rng.sample(pools["category"], spec.categories)]
            lists += [("cuisine", v) for v in rng.sample(pools["cuisine"], spec.cuisines)]
            lists += [("ingredient", v) for v in rng.sample(pools["ingredient"], spec.ingredients)]
        details: list[tuple[str, str]] = []
        if want_details:
            cats = [v for b, v in lists if b == "category"]
            cuis = [v for b, v in lists if b == "cuisine"]
            pairs = [(c, u) for c in cats for u in cuis]
            details = rng.sample(pairs, min(spec.detail_pairs, len(pairs)))
        params = task_params(lists, details, spec.fault_rate, rng.choice(OUTPUT_FILES))
        truth = ground_truth(world, params)
        n = len(truth.get("recipes", []))
        if details and not max(1, spec.details[0]) <= n <= spec.details[1]:
            continue
        if claim(seen, canonical_json(params["lists"]) + canonical_json(params["details"])):
            return params
    raise no_case(scale)  # pragma: no cover - generator bug


def build_dataset() -> DatasetFiles:
    fixtures = generate_recipe_fixtures()
    text = fixtures_text(fixtures, ("recipes",))
    world = RecipeWorld.from_fixtures(fixtures)
    return DatasetFiles(
        fixtures_text=text,
        splits=CASEBOOK.splits(partial(_pick_task, world), task_statement, partial(ground_truth, world)),
        note="SkillCraft-sim: a simulated offline stand-in for the SkillCraft recipe family.",
    )
