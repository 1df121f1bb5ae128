"""The catfacts family's case generator: which filter (a keyword with a maximum length, a length
range alone, or a keyword alone), how many facts and whether an average is asked, per scale
(docs/skillcraft_sim.md §3). Called by `python -m evaluators.skillcraft.generate`.
"""

from __future__ import annotations

import html
import json
from dataclasses import dataclass
from typing import Any

from evaluators.skillcraft.catfacts.fixtures import generate_catfacts_fixtures
from evaluators.skillcraft.catfacts.task import (
    Filter,
    ground_truth,
    normalise,
    task_params,
    task_statement,
)
from evaluators.skillcraft.catfacts.world import CatFactsWorld
from evaluators.skillcraft.family import CASES_PER_SCALE, CRITICAL_CASES, SPLIT_SCALES, DatasetFiles
from evaluators.skillcraft.rng import derived_rng
from gepa_lab.core.contracts import canonical_json

VERSION = "sim-v1"
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
    rng = derived_rng("skillcraft-sim", "catfacts", VERSION, scale, r)
    for _ in range(10_000):
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
        key = canonical_json([f.keyword, f.min_length, f.max_length])
        if key in seen:
            continue
        seen.add(key)
        return params
    raise RuntimeError(f"cannot build a {scale} case")  # pragma: no cover - generator bug


def build_cases(world: CatFactsWorld) -> dict[str, list[dict[str, Any]]]:
    """10 cases per scale; ids catfacts/<scale>/cNN; c02, c05, c08 of m2 and h1 are critical."""
    splits: dict[str, list[dict[str, Any]]] = {}
    for split, scales in SPLIT_SCALES.items():
        rows = []
        for scale in scales:
            seen: set[str] = set()
            for r in range(1, CASES_PER_SCALE + 1):
                params = _pick_task(world, scale, r, seen)
                rows.append({
                    "id": f"catfacts/{scale}/c{r:02d}",
                    "input": task_statement(params, r),
                    "expected": canonical_json(ground_truth(world, params)),
                    "critical": r in CRITICAL_CASES.get(scale, ()),
                    "metadata": {"family": "catfacts", "scale": scale, "generator": VERSION,
                                 "task": canonical_json(params)},
                })
        splits[split] = rows
    return splits


def _fixtures_text(fixtures: dict[str, Any]) -> str:
    # One fact per line: small diffs, still plain JSON.
    head = {k: v for k, v in fixtures.items() if k != "facts"}
    body = ",\n".join("  " + json.dumps(f, ensure_ascii=False, sort_keys=True) for f in fixtures["facts"])
    text = json.dumps(head, ensure_ascii=False, sort_keys=True, indent=1)
    return text[:-2] + ',\n "facts": [\n' + body + "\n ]\n}\n"


def build_dataset() -> DatasetFiles:
    fixtures = generate_catfacts_fixtures()
    return DatasetFiles(
        fixtures_text=_fixtures_text(fixtures),
        splits=build_cases(CatFactsWorld.from_fixtures(fixtures)),
        note="SkillCraft-sim: a simulated offline stand-in for the SkillCraft cat-facts family.",
    )
