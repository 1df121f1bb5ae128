"""The catfacts family's case generator: which filter (a keyword with a maximum length, a length
range alone, or a keyword alone), how many facts and whether an average is asked, per scale
(docs/skillcraft_sim.md §3). Called by `python -m evaluators.skillcraft.generate`.
"""

from __future__ import annotations

import html
from dataclasses import dataclass
from functools import partial
from typing import Any

from evaluators.skillcraft.casebook import ATTEMPTS, Casebook, claim, fixtures_text, no_case
from evaluators.skillcraft.catfacts.fixtures import generate_catfacts_fixtures
from evaluators.skillcraft.catfacts.task import (
    Filter,
    ground_truth,
    normalise,
    task_params,
    task_statement,
)
from evaluators.skillcraft.catfacts.world import CatFactsWorld
from evaluators.skillcraft.family import DatasetFiles
from gepa_lab.core.contracts import canonical_json

CASEBOOK = Casebook("catfacts")
OUTPUT_FILES = ("facts.json", "cat_facts.json", "fact_list.json", "catfacts_report.json")
MAX_PAGES = 8  # the answer lies within this many listing pages


@dataclass(frozen=True)
class ScaleSpec:
    n: int
    length_only: float  # share of tasks filtered by length alone (the random endpoint's bait)
    long: bool  # filters admit facts longer than the listing's cut (m2 / h1 only)
    average: bool
    fault_rate: float


SCALES: dict[str, ScaleSpec] = {
    "e1": ScaleSpec(3, 0.0, False, False, 0.0),
    "e2": ScaleSpec(4, 0.35, False, False, 0.0),
    "e3": ScaleSpec(5, 0.35, False, True, 0.0),
    "m1": ScaleSpec(6, 0.35, False, True, 0.01),
    "m2": ScaleSpec(7, 0.35, True, True, 0.10),
    "h1": ScaleSpec(8, 0.35, True, True, 0.15),
}


def _depth(world: CatFactsWorld, truth: dict[str, Any]) -> int:
    """Listing entries read before the last expected fact appears."""
    last = normalise(truth["facts"][-1]["fact"])
    return next(i for i, f in enumerate(world.facts) if normalise(html.unescape(f["fact"])) == last) + 1


def _pick_task(world: CatFactsWorld, scale: str, r: int, seen: set[str]) -> dict[str, Any]:
    spec = SCALES[scale]
    rng = CASEBOOK.rng(scale, r)
    for _ in range(ATTEMPTS):
        if rng.random() < spec.length_only:
            f = Filter(None, *rng.choice(((120, 260), (150, 300), (160, 320), (180, 330)))) if spec.long \
                else Filter(None, None, rng.choice((40, 45, 50, 55)))
        elif spec.long:
            f = Filter(rng.choice(world.keywords), None, rng.choice((None, 250, 300)))
        else:
            f = Filter(rng.choice(world.keywords), None, rng.choice((100, 120, 150, 200)))
        params = task_params(f, spec.n, spec.average, spec.fault_rate, rng.choice(OUTPUT_FILES))
        truth = ground_truth(world, params)
        if truth["count"] < spec.n or _depth(world, truth) > MAX_PAGES * world.per_page:
            continue
        if claim(seen, canonical_json([f.keyword, f.min_length, f.max_length])):
            return params
    raise no_case(scale)  # pragma: no cover - generator bug


def build_dataset() -> DatasetFiles:
    fixtures = generate_catfacts_fixtures()
    text = fixtures_text(fixtures, ("facts",))
    world = CatFactsWorld.from_fixtures(fixtures)
    return DatasetFiles(
        fixtures_text=text,
        splits=CASEBOOK.splits(partial(_pick_task, world), task_statement, partial(ground_truth, world)),
        note="SkillCraft-sim: a simulated offline stand-in for the SkillCraft cat-facts family.",
    )
