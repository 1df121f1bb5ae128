"""The simulated pokemon agent: solves a PokemonTask by really calling the tools.

Each named behaviour is drawn right or wrong (AgentRun.right) and a wrong one changes what the
agent does: it re-sends a species' bare name that has no Pokémon (the loop) before it looks up the
default variety, follows only the first branch of a chain, sums the older past_stats, rates only
a member's first type, reads the type chart in the defending direction, ignores immunities, skips
rate-limited calls, fetches species nobody needs, or never writes the file. Grading then finds
the damage.
"""

from __future__ import annotations

from typing import Any

from evaluators.skillcraft.agent import AgentRun, misread
from evaluators.skillcraft.pokemon.task import PokemonTask, totals
from evaluators.skillcraft.pokemon.world import PokemonTools, base_stat_total, effectiveness, members, types_of


def _pokemon(run: AgentRun, tools: PokemonTools, name: str) -> dict[str, Any] | None:
    res = run.ask(tools, f"pokemon:{name}", "get_pokemon", name=name)
    if res is not None or run.calls[-1].status != "not_found":
        return res
    if not run.right("resolve_default_form", name):
        # The loop: the bare species name re-sent until the agent notices, then the species lookup.
        run.repeat_until_noticed(tools, name, "get_pokemon", name=name)
    sp = run.ask(tools, f"species:{name}", "get_species", name=name)
    default = None if sp is None else next((v["pokemon"]["name"] for v in sp["varieties"] if v["is_default"]), None)
    return None if default is None else run.ask(tools, f"pokemon:{default}", "get_pokemon", name=default)


def solve(run: AgentRun, tools: PokemonTools, task: PokemonTask) -> dict[str, Any]:
    draft: dict[str, Any] = {"chain_id": None, "members": []}
    sp = run.ask(tools, f"species:{task.species}", "get_species", name=task.species)
    chain_id = None if sp is None else sp["evolution_chain"]["id"]
    chain = None if sp is None else run.ask(tools, f"chain:{chain_id}", "get_evolution_chain", id=chain_id)
    if chain is not None:
        draft["chain_id"] = chain["id"]
        for name, stage in members(chain["chain"], every_branch=lambda n: run.right("follow_every_branch", n)):
            if name != task.species and not run.right("skip_unneeded_calls", name):
                run.ask(tools, f"species:{name}", "get_species", name=name)
                run.bump("wasted")
            p = _pokemon(run, tools, name)
            if p is None:
                continue
            shown = p["past_stats"][0] if p.get("past_stats") and not run.right("use_current_stats", name) else p
            draft["members"].append({"species": name, "pokemon": p["name"], "stage": stage, "types": types_of(p),
                                     "base_stat_total": base_stat_total(shown)})
    _rate_moves(run, tools, task, draft["members"])
    draft["strongest"] = misread(totals(draft["members"]), run.draws, "strongest:slip", fix=False)
    return draft


def validate(run: AgentRun, draft: dict[str, Any], task: PokemonTask) -> None:
    if run.draws.below("fix:strongest", 0.7):
        draft["strongest"] = misread(totals(draft["members"]), run.draws, "strongest:slip", fix=True)


def _rate_moves(run: AgentRun, tools: PokemonTools, task: PokemonTask, entries: list[dict[str, Any]]) -> None:
    if not task.moves:
        return
    for e in entries:
        e["multipliers"] = {}
    for move in task.moves:
        res = run.ask(tools, f"type:{move}", "get_type", name=move)
        if res is None:
            continue  # a skipped error: this move type is not rated
        rel = res["damage_relations"]
        attacking = run.right("read_attacking_relations", move)
        immune = run.right("apply_immunities", move)
        for e in entries:
            types = e["types"] if run.right("multiply_dual_types", e["species"]) else e["types"][:1]
            e["multipliers"][move] = effectiveness(rel, types, "to" if attacking else "from", immune)


