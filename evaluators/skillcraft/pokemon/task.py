"""The pokemon family's task model: the task statement, its parser and the ground truth.

A case's `metadata["task"]` holds the parameters (a species, the move types to rate, fault rate,
output file); `expected` is the artifact a flawless agent writes: the chain id, every member of
the species' evolution chain (all branches) with its default Pokémon, stage, types, base stat
total (current stats) and the damage multiplier of each move type against it, and the strongest
member (docs/skillcraft_sim.md §3).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from evaluators.skillcraft.concepts import tokens, words
from evaluators.skillcraft.family import expected_of, finish_instruction, reading_task, scale_level
from evaluators.skillcraft.pokemon.world import PokemonWorld, base_stat_total, members, types_of
from gepa_lab.core.contracts import Case


@dataclass(frozen=True)
class PokemonTask:
    scale: str
    level: int
    species: str
    moves: tuple[str, ...]
    fault_rate: float
    output_file: str
    expected: dict[str, Any]
    entities: frozenset[str]
    task_words: frozenset[str]
    task_tokens: int
    world: PokemonWorld = field(repr=False, compare=False)  # the rubric reads the type chart and past stats


def strongest(entries: list[dict[str, Any]]) -> str | None:
    """The member with the highest base stat total (the first listed wins a tie)."""
    best: tuple[int, str] | None = None
    for e in entries:
        total = e.get("base_stat_total")
        if isinstance(total, int) and (best is None or total > best[0]):
            best = (total, str(e.get("species")))
    return best[1] if best else None


def task_params(species: str, moves: list[str], fault_rate: float, output_file: str) -> dict[str, Any]:
    return {"species": species, "moves": list(moves), "fault_rate": fault_rate, "output_file": output_file}


def ground_truth(world: PokemonWorld, params: dict[str, Any]) -> dict[str, Any]:
    """The artifact a flawless agent writes (stored as the case's `expected`)."""
    chain_id = int(world.species[params["species"]]["evolution_chain"]["id"])
    entries = []
    for name, stage in members(world.chains[chain_id]["chain"]):
        p = world.default_pokemon(name)
        entry: dict[str, Any] = {"species": name, "pokemon": p["name"], "stage": stage, "types": types_of(p),
                                 "base_stat_total": base_stat_total(p)}
        if params["moves"]:
            entry["multipliers"] = {m: world.multiplier(m, types_of(p)) for m in params["moves"]}
        entries.append(entry)
    return {"chain_id": chain_id, "members": entries, "strongest": strongest(entries)}


def task_statement(world: PokemonWorld, params: dict[str, Any], variant: int) -> str:
    """The task text the agent (and the reflector) reads; `variant` varies the wording."""
    sp = world.species[params["species"]]
    opener = [
        "Report a Pokémon evolution chain from the local PokéAPI.",
        "Using the PokéAPI tools, describe the evolution chain of one Pokémon species.",
        "Build an evolution chain report from the offline Pokémon data service.",
    ][variant % 3]
    moves = params["moves"]
    lines = [
        opener,
        "Tools: get_pokemon(name) returns {name, species, types, stats, ...}; get_species(name) returns "
        "{evolution_chain, varieties, ...}; get_evolution_chain(id) returns {chain: {species, evolves_to}}; "
        "get_type(name) returns {damage_relations}; write_file(path, content); claim_done().",
        f"Chain: the evolution chain of {sp['display_name']} (species \"{sp['name']}\").",
        "Under \"members\" give one entry per member of the chain: species, pokemon (the name of the species' "
        "default Pokémon), stage (1 for the first), types (in slot order) and base_stat_total (the sum of its "
        "six current base stats)" + (", and multipliers: the damage multiplier of a move of each type below "
                                     "against it" if moves else "") + ".",
    ]
    if moves:
        lines.append("Move types: " + ", ".join(moves) + ". A multiplier is the product of the effectiveness "
                     "against each of the member's types (2, 0.5, or 0 for no effect).")
    lines.append("Also report chain_id and strongest: the species with the highest base_stat_total.")
    lines.append(finish_instruction(params["output_file"]))
    return "\n".join(lines)


def parse_task(world: PokemonWorld, case: Case) -> PokemonTask:
    scale, level = scale_level(case, "pokemon")
    with reading_task(case, "pokemon") as params:
        species = str(params["species"])
        moves = tuple(str(m) for m in params["moves"])
    if species not in world.species:
        raise ValueError(f"case {case.id!r}: unknown pokemon species {species!r}")
    bad = [m for m in moves if m not in world.types]
    if bad:
        raise ValueError(f"case {case.id!r}: unknown pokemon type {bad[0]!r}")
    expected = expected_of(case, lambda: ground_truth(world, params))
    chain = world.chains[int(world.species[species]["evolution_chain"]["id"])]["chain"]
    names = [n for n, _ in members(chain)]
    wanted = "evolution chain stats" + (" type move effectiveness" if moves else "")
    return PokemonTask(
        scale=scale, level=level, species=species, moves=moves, fault_rate=float(params.get("fault_rate", 0.0)),
        output_file=str(params.get("output_file", "chain.json")), expected=expected,
        entities=frozenset(" ".join(tokens(n)) for n in names), task_words=words(wanted),
        task_tokens=len(case.input) // 4, world=world,
    )


def entity_names(world: PokemonWorld) -> frozenset[str]:
    """Species names (as words): an item naming one applies only to tasks about its chain."""
    return frozenset(" ".join(tokens(n)) for n in world.species)
