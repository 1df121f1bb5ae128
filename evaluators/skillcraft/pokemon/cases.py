"""The pokemon family's case generator: which chain (linear or branching, with or without a
species whose Pokémon carries a form suffix), which member names it and which move types to rate,
per scale (docs/skillcraft_sim.md §3). Called by `python -m evaluators.skillcraft.generate`.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from evaluators.skillcraft.family import CASES_PER_SCALE, CRITICAL_CASES, SPLIT_SCALES, DatasetFiles
from evaluators.skillcraft.pokemon.fixtures import TYPES, generate_pokemon_fixtures
from evaluators.skillcraft.pokemon.task import ground_truth, task_params, task_statement
from evaluators.skillcraft.pokemon.world import PokemonWorld, members, types_of
from evaluators.skillcraft.rng import derived_rng
from gepa_lab.core.contracts import canonical_json

VERSION = "sim-v1"
OUTPUT_FILES = ("chain.json", "evolution_report.json", "pokemon_chain.json", "evolutions.json")


@dataclass(frozen=True)
class ScaleSpec:
    moves: tuple[int, int]  # (min, max) move types to rate
    forms: float  # chance the chain has a species whose Pokémon carries a form suffix
    branching: float  # chance the chain branches (m2 / h1 only)
    immune: float  # chance a move type is one some member is immune to
    fault_rate: float


SCALES: dict[str, ScaleSpec] = {
    "e1": ScaleSpec((0, 1), 0.0, 0.0, 0.0, 0.0),
    "e2": ScaleSpec((1, 1), 0.3, 0.0, 0.35, 0.0),
    "e3": ScaleSpec((1, 2), 0.3, 0.0, 0.35, 0.0),
    "m1": ScaleSpec((2, 2), 0.3, 0.0, 0.35, 0.01),
    "m2": ScaleSpec((2, 2), 0.3, 0.7, 0.35, 0.10),
    "h1": ScaleSpec((2, 3), 0.3, 0.8, 0.35, 0.15),
}


def _pools(world: PokemonWorld) -> dict[str, list[int]]:
    pools: dict[str, list[int]] = {"plain": [], "forms": [], "branching": []}
    for cid, chain in sorted(world.chains.items()):
        names = [n for n, _ in members(chain["chain"])]
        if len(names) < 2:
            continue
        branching = len(names) != len(members(chain["chain"], every_branch=False))
        forms = any(world.default_pokemon(n)["name"] != n for n in names)
        pools["branching" if branching else "forms" if forms else "plain"].append(cid)
    return pools


def _moves(world: PokemonWorld, names: list[str], k: int, immune: float, rng: Any) -> list[str]:
    types = [types_of(world.default_pokemon(n)) for n in names]
    moves: list[str] = []
    while len(moves) < k:
        immunes = [m for m in TYPES if any(world.multiplier(m, ts) == 0.0 for ts in types)]
        if immunes and rng.random() < immune:
            m = rng.choice(immunes)
        else:
            m = rng.choice(TYPES)
            if all(world.multiplier(m, ts) == 1.0 for ts in types):
                continue  # a move type that changes nothing tells nothing
        if m not in moves:
            moves.append(m)
    return moves


def _pick_task(world: PokemonWorld, pools: dict[str, list[int]], scale: str, r: int,
               seen: set[int]) -> dict[str, Any]:
    spec = SCALES[scale]
    rng = derived_rng("skillcraft-sim", "pokemon", VERSION, scale, r)
    for _ in range(10_000):
        roll = rng.random()
        kind = "branching" if roll < spec.branching else "forms" if rng.random() < spec.forms else "plain"
        cid = rng.choice(pools[kind])
        if cid in seen:
            continue
        names = [n for n, _ in members(world.chains[cid]["chain"])]
        species = rng.choice(names)
        moves = _moves(world, names, rng.randint(*spec.moves), spec.immune, rng)
        seen.add(cid)
        return task_params(species, moves, spec.fault_rate, rng.choice(OUTPUT_FILES))
    raise RuntimeError(f"cannot build a {scale} case")  # pragma: no cover - generator bug


def build_cases(world: PokemonWorld) -> dict[str, list[dict[str, Any]]]:
    """10 cases per scale; ids pokemon/<scale>/pNN; p02, p05, p08 of m2 and h1 are critical."""
    pools = _pools(world)
    splits: dict[str, list[dict[str, Any]]] = {}
    for split, scales in SPLIT_SCALES.items():
        rows = []
        for scale in scales:
            seen: set[int] = set()
            for r in range(1, CASES_PER_SCALE + 1):
                params = _pick_task(world, pools, scale, r, seen)
                rows.append({
                    "id": f"pokemon/{scale}/p{r:02d}",
                    "input": task_statement(world, params, r),
                    "expected": canonical_json(ground_truth(world, params)),
                    "critical": r in CRITICAL_CASES.get(scale, ()),
                    "metadata": {"family": "pokemon", "scale": scale, "generator": VERSION,
                                 "task": canonical_json(params)},
                })
        splits[split] = rows
    return splits


def _fixtures_text(fixtures: dict[str, Any]) -> str:
    # One record per line: small diffs, still plain JSON.
    head = {k: v for k, v in fixtures.items() if k not in ("chains", "species", "pokemon", "types")}
    text = json.dumps(head, ensure_ascii=False, sort_keys=True, indent=1)[:-2]
    for key in ("chains", "species", "pokemon", "types"):
        body = ",\n".join("  " + json.dumps(x, ensure_ascii=False, sort_keys=True) for x in fixtures[key])
        text += f',\n "{key}": [\n' + body + "\n ]"
    return text + "\n}\n"


def build_dataset() -> DatasetFiles:
    fixtures = generate_pokemon_fixtures()
    return DatasetFiles(
        fixtures_text=_fixtures_text(fixtures),
        splits=build_cases(PokemonWorld.from_fixtures(fixtures)),
        note="SkillCraft-sim: a simulated offline stand-in for the SkillCraft Pokémon (PokéAPI) family.",
    )
