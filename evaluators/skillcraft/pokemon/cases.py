"""The pokemon family's case generator: which chain (linear or branching, with or without a
species whose Pokémon carries a form suffix), which member names it and which move types to rate,
per scale (docs/skillcraft_sim.md §3). Called by `python -m evaluators.skillcraft.generate`.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import partial
from typing import Any

from evaluators.skillcraft.casebook import ATTEMPTS, Casebook, claim, fixtures_text, no_case
from evaluators.skillcraft.family import DatasetFiles
from evaluators.skillcraft.pokemon.fixtures import TYPES, generate_pokemon_fixtures
from evaluators.skillcraft.pokemon.task import ground_truth, task_params, task_statement
from evaluators.skillcraft.pokemon.world import PokemonWorld, members, types_of

CASEBOOK = Casebook("pokemon")
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
    rng = CASEBOOK.rng(scale, r)
    for _ in range(ATTEMPTS):
        roll = rng.random()
        kind = "branching" if roll < spec.branching else "forms" if rng.random() < spec.forms else "plain"
        cid = rng.choice(pools[kind])
        if not claim(seen, cid):
            continue
        names = [n for n, _ in members(world.chains[cid]["chain"])]
        species = rng.choice(names)
        moves = _moves(world, names, rng.randint(*spec.moves), spec.immune, rng)
        return task_params(species, moves, spec.fault_rate, rng.choice(OUTPUT_FILES))
    raise no_case(scale)  # pragma: no cover - generator bug


def build_dataset() -> DatasetFiles:
    fixtures = generate_pokemon_fixtures()
    text = fixtures_text(fixtures, ("chains", "species", "pokemon", "types"))
    world = PokemonWorld.from_fixtures(fixtures)
    return DatasetFiles(
        fixtures_text=text,
        splits=CASEBOOK.splits(partial(_pick_task, world, _pools(world)), partial(task_statement, world),
                               partial(ground_truth, world)),
        note="SkillCraft-sim: a simulated offline stand-in for the SkillCraft Pokémon (PokéAPI) family.",
    )
