"""The pokemon family's task: its parser, the ground truth and the rubric.

A case's `metadata["task"]` holds the parameters (a species, the move types to rate, fault rate,
output file); `expected` is the artifact a flawless agent writes: the chain id, every member of
the species' evolution chain (all branches) with its default Pokémon, stage, types, base stat
total (current stats) and the damage multiplier of each move type against it, and the strongest
member (docs/skillcraft_sim.md §3.6). The rubric: members (critical: every species of the chain,
no other); per member base_stat_total (critical), one multiplier per move type (critical) and its
entry (pokemon = the default variety, stage, types); chain_id and strongest (§5).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from evaluators.skillcraft.concepts import tokens, words
from evaluators.skillcraft.family import Check, Task, best, common, first, number, part, reading_task, same
from evaluators.skillcraft.pokemon.world import PokemonWorld, base_stat_total, effectiveness, members, types_of
from gepa_lab import Case


@dataclass(frozen=True)
class PokemonTask(Task):
    species: str
    moves: tuple[str, ...]
    world: PokemonWorld = field(repr=False, compare=False)  # the rubric reads the type chart and past stats


def totals(entries: list[dict[str, Any]]) -> dict[str, Any]:
    """Each member's base stat total: the strongest member is their `best`."""
    return {str(e.get("species")): e.get("base_stat_total") for e in entries}


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
    return {"chain_id": chain_id, "members": entries, "strongest": best(totals(entries))}


def parse_task(world: PokemonWorld, case: Case) -> PokemonTask:
    with reading_task(case, "pokemon") as params:
        species = str(params["species"])
        moves = tuple(str(m) for m in params["moves"])
    if species not in world.species:
        raise ValueError(f"case {case.id!r}: unknown pokemon species {species!r}")
    if bad := [m for m in moves if m not in world.types]:
        raise ValueError(f"case {case.id!r}: unknown pokemon type {bad[0]!r}")
    chain = world.chains[int(world.species[species]["evolution_chain"]["id"])]["chain"]
    names = [n for n, _ in members(chain)]
    wanted = "evolution chain stats" + (" type move effectiveness" if moves else "")
    return PokemonTask(**common(case, params, "chain.json", lambda: ground_truth(world, params)), species=species,
                       moves=moves, entities=frozenset(" ".join(tokens(n)) for n in names), task_words=words(wanted),
                       world=world)


def entity_names(world: PokemonWorld) -> frozenset[str]:
    """Species names (as words): an item naming one applies only to tasks about its chain."""
    return frozenset(" ".join(tokens(n)) for n in world.species)


def _cause(world: PokemonWorld, move: str, types: list[str], got: float) -> str:
    """Which known slip produces the reported multiplier (a grader's reading of the number)."""
    rel = world.types[move]["damage_relations"]
    if len(types) > 1 and got == effectiveness(rel, types[:1]):
        return f"; its second type ({types[1]}) was not counted"
    if got in (effectiveness(rel, types, "from"), effectiveness(rel, types[:1], "from")):
        return (f"; the multiplier was read the wrong way round (the damage its types deal to {move}, not the "
                f"damage {move} deals)")
    if got in (effectiveness(rel, types, immune=False), effectiveness(rel, types[:1], immune=False)):
        return f"; the immunity was not applied (a {move} move has no effect on it)"
    return ""


def grade(task: PokemonTask, artifact: dict[str, Any]) -> list[Check]:
    """Rubric checks of the written artifact against the ground truth."""
    exp, world = task.expected, task.world
    got = {str(r.get("species")): r for r in part(artifact, "members", list) if isinstance(r, dict)}
    want = [m["species"] for m in exp["members"]]
    missing, extra = [s for s in want if s not in got], [s for s in got if s not in want]
    msg = ""
    if missing:
        msg = f"{len(missing)} of {len(want)} chain members missing ({first([world.display_name(s) for s in missing], 4)})"
    elif extra:
        msg = "members that are not in the chain: " + ", ".join(world.display_name(s) for s in extra[:4] if s in world.species)
    checks = [Check("members", not missing and not extra, True, msg)]
    for m in exp["members"]:
        name = m["species"]
        where = f'"{world.display_name(name)}"'
        g = got.get(name)
        if g is None:
            continue  # the members check reports it
        total = g.get("base_stat_total")
        ok = total == m["base_stat_total"]
        msg = "" if ok else f"{where}: base_stat_total is {total}, expected {m['base_stat_total']}"
        past = (world.pokemon.get(m["pokemon"]) or {}).get("past_stats")
        if not ok and total == (base_stat_total(past[0]) if past else None):
            msg += "; it is the total of the older past_stats, not of the current stats"
        checks.append(Check(f"{name}.base_stat_total", ok, True, msg))
        for move, value in (m.get("multipliers") or {}).items():
            reported = part(g, "multipliers", dict).get(move)
            ok = number(reported) and abs(reported - value) < 1e-9
            msg = "" if ok else (f"{where}: a {move} move does {reported}× in the artifact, expected {value}× "
                                 f"({'/'.join(m['types'])})")
            if not ok and isinstance(reported, (int, float)):
                msg += _cause(world, move, m["types"], float(reported))
            checks.append(Check(f"{name}.multipliers.{move}", ok, True, msg))
        wrong = [k for k in ("pokemon", "stage", "types") if g.get(k) != m[k]]
        checks.append(Check(f"{name}.entry", not wrong, False, "" if not wrong else (
            f"{where}: " + "; ".join(f"{k} is {g.get(k)}, expected {m[k]}" for k in wrong))))
    checks.append(same("chain_id", artifact.get("chain_id"), exp["chain_id"]))
    checks.append(same("strongest", artifact.get("strongest"), exp["strongest"]))
    return checks
