"""Deterministic generator of a SkillCraft-sim family's dataset directory.

    python -m evaluators.skillcraft.generate               # writes datasets/skillcraft/recipe
    python -m evaluators.skillcraft.generate --check       # exit 1 if the committed files differ

Writes fixtures.json (the local API), feedback/validation/holdout.jsonl (10 cases per scale:
e1,e2 | e3,m1 | m2,h1), manifest.json (split digests) and seed_skill.json.
See docs/skillcraft_sim.md §3.
"""

from __future__ import annotations

import argparse
import json
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from evaluators.skillcraft.fixtures import generate_recipe_fixtures
from evaluators.skillcraft.recipe import SEED_SKILL, ground_truth, task_params, task_statement
from evaluators.skillcraft.rng import derived_rng
from evaluators.skillcraft.tools import RecipeWorld
from gepa_lab.core.contracts import Case, canonical_json, split_digest

VERSION = "sim-v1"
CASES_PER_SCALE = 10
SPLIT_SCALES = {"feedback": ("e1", "e2"), "validation": ("e3", "m1"), "holdout": ("m2", "h1")}
CRITICAL_CASES = {"m2": (2, 5, 8), "h1": (2, 5, 8)}
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
    rng = derived_rng("skillcraft-sim", "recipe", VERSION, scale, r)
    pools: dict[str, list[str]] = {}
    for by in ("category", "cuisine", "ingredient"):
        pools[by] = sorted(
            k.split(":", 1)[1] for k, q in world.quirks.items()
            if k.startswith(by + ":") and _pages(world, k) <= spec.max_pages
            and (spec.sentinel_ok or not q["sentinel"])
        )
    want_details = spec.detail_pairs > 0 and rng.random() < spec.detail_share
    for _ in range(10_000):
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
        key = canonical_json(params["lists"]) + canonical_json(params["details"])
        if key in seen:
            continue
        seen.add(key)
        return params
    raise RuntimeError(f"cannot build a {scale} case")  # pragma: no cover - generator bug


def build_cases(world: RecipeWorld) -> dict[str, list[dict[str, Any]]]:
    splits: dict[str, list[dict[str, Any]]] = {}
    for split, scales in SPLIT_SCALES.items():
        rows = []
        for scale in scales:
            seen: set[str] = set()
            for r in range(1, CASES_PER_SCALE + 1):
                params = _pick_task(world, scale, r, seen)
                rows.append({
                    "id": f"recipe/{scale}/r{r:02d}",
                    "input": task_statement(params, r),
                    "expected": canonical_json(ground_truth(world, params)),
                    "critical": r in CRITICAL_CASES.get(scale, ()),
                    "metadata": {"family": "recipe", "scale": scale, "generator": VERSION,
                                 "task": canonical_json(params)},
                })
        splits[split] = rows
    return splits


def _fixtures_text(fixtures: dict[str, Any]) -> str:
    # One recipe per line: small diffs, still plain JSON.
    head = {k: v for k, v in fixtures.items() if k != "recipes"}
    body = ",\n".join("  " + json.dumps(r, ensure_ascii=False, sort_keys=True) for r in fixtures["recipes"])
    text = json.dumps(head, ensure_ascii=False, sort_keys=True, indent=1)
    return text[:-2] + ',\n "recipes": [\n' + body + "\n ]\n}\n"


def render_files(family: str = "recipe") -> dict[str, str]:
    if family != "recipe":
        raise ValueError(f"no generator for family {family!r} yet")
    fixtures = generate_recipe_fixtures()
    world = RecipeWorld.from_fixtures(fixtures)
    files = {"fixtures.json": _fixtures_text(fixtures)}
    manifest: dict[str, Any] = {"id": f"skillcraft-sim/{family}", "version": VERSION, "splits": {}}
    for split, rows in build_cases(world).items():
        name = f"{split}.jsonl"
        files[name] = "".join(json.dumps(row, ensure_ascii=False, sort_keys=True) + "\n" for row in rows)
        cases = [Case.from_dict(row) for row in rows]
        manifest["splits"][split] = {"file": name, "cases": len(cases), "sha256": split_digest(cases),
                                     "scales": list(SPLIT_SCALES[split])}
    manifest["seed_artifact"] = "seed_skill.json"
    manifest["generator"] = "python -m evaluators.skillcraft.generate"
    manifest["note"] = "SkillCraft-sim: a simulated offline stand-in for the SkillCraft recipe family."
    files["manifest.json"] = json.dumps(manifest, indent=2, ensure_ascii=False) + "\n"
    files["seed_skill.json"] = json.dumps(SEED_SKILL, indent=2, ensure_ascii=False) + "\n"
    return files


def main(argv: list[str] | None = None) -> int:
    root = Path(__file__).resolve().parents[2] / "datasets" / "skillcraft"
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--family", default="recipe")
    ap.add_argument("--out", type=Path, default=None, help="output directory (default datasets/skillcraft/<family>)")
    ap.add_argument("--check", action="store_true", help="compare with the files on disk, write nothing")
    args = ap.parse_args(argv)
    out = args.out or root / args.family
    files = render_files(args.family)
    if args.check:
        stale = [n for n, t in files.items() if not (out / n).is_file() or (out / n).read_text(encoding="utf-8") != t]
        if stale:
            print(f"stale or missing in {out}: {', '.join(stale)}", file=sys.stderr)
            return 1
        print(f"{out}: up to date ({len(files)} files)")
        return 0
    out.mkdir(parents=True, exist_ok=True)
    for name, text in files.items():
        (out / name).write_text(text, encoding="utf-8")
    print(f"wrote {len(files)} files to {out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
