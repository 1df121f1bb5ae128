"""The pokemon family's world and tools: a PokéAPI-like API over the fixtures, with real
contracts (the generic tools contract is evaluators/skillcraft/tools.py).

- `get_pokemon(name)` -> `{id, name, species: {name}, types: [{slot, type: {name}}], stats: [{base_stat,
  effort, stat: {name}}], past_stats?: [{generation: {name}, stats: [...]}], height, weight}`; a
  species whose default variety has a form suffix (deoxys -> deoxys-normal) has no Pokémon of its
  own name: `{"error": "not_found"}` (status `not_found`).
- `get_species(name)` -> `{id, name, evolution_chain: {id}, evolves_from_species, varieties: [{is_default,
  pokemon: {name}}]}`.
- `get_evolution_chain(id)` -> `{id, chain: {species: {name}, evolves_to: [...]}}` (nested; a chain
  may branch).
- `get_type(name)` -> `{name, damage_relations: {double_damage_to, half_damage_to, no_damage_to,
  double_damage_from, half_damage_from, no_damage_from}}`, each a list of `{name}`.
Every call may fail with `rate_limited` at the case's fault rate (seeded, paired).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from evaluators.skillcraft.tools import Api, ToolReply, or_not_found, rate_limited


def _api_chain(node: dict[str, Any]) -> dict[str, Any]:
    return {"species": {"name": node["species"]}, "evolves_to": [_api_chain(c) for c in node["evolves_to"]]}


def members(node: dict[str, Any], stage: int = 1,
            every_branch: bool | Callable[[str], bool] = True) -> list[tuple[str, int]]:
    """(species, stage) of a chain in depth-first order; only the first branch below a species when
    told so (`every_branch`: for the whole chain, or asked per species that branches)."""
    out = [(name := str(node["species"]["name"]), stage)]
    follow = every_branch(name) if callable(every_branch) and len(node["evolves_to"]) > 1 else every_branch
    for child in node["evolves_to"] if follow else node["evolves_to"][:1]:
        out += members(child, stage + 1, every_branch)
    return out


class PokemonWorld:
    def __init__(self, data: dict[str, Any]) -> None:
        self.chains: dict[int, dict[str, Any]] = {  # id -> API response
            int(c["id"]): {"id": int(c["id"]), "chain": _api_chain(c["chain"])} for c in data["chains"]}
        self.species: dict[str, dict[str, Any]] = {s["name"]: s for s in data["species"]}
        self.pokemon: dict[str, dict[str, Any]] = {p["name"]: p for p in data["pokemon"]}
        self.types: dict[str, dict[str, Any]] = {t["name"]: t for t in data["types"]}

    def display_name(self, species: str) -> str:
        found = self.species.get(species)
        return str(found["display_name"]) if found else species.replace("-", " ").title()

    def default_pokemon(self, species: str) -> dict[str, Any]:
        name = next(v["pokemon"]["name"] for v in self.species[species]["varieties"] if v["is_default"])
        return self.pokemon[name]

    def multiplier(self, move: str, types: list[str]) -> float:
        """Damage multiplier of a move type against a Pokémon of these types."""
        return effectiveness(self.types[move]["damage_relations"], types)

def effectiveness(rel: dict[str, Any], types: list[str], side: str = "to", immune: bool = True) -> float:
    """The product of a type's damage relations over `types`: "to" is what a move of the type
    deals to them, "from" what they deal to it (the chart read the wrong way round); without
    `immune`, no_damage counts as no relation (an immunity ignored)."""
    m = 1.0
    for t in types:  # the first relation that names the type applies
        m *= next((f for kind, f in (("no", 0.0), ("double", 2.0), ("half", 0.5)) if (immune or kind != "no")
                   and any(x["name"] == t for x in rel[f"{kind}_damage_{side}"])), 1.0)
    return m


def base_stat_total(pokemon: dict[str, Any]) -> int:
    return sum(int(s["base_stat"]) for s in pokemon["stats"])


def types_of(pokemon: dict[str, Any]) -> list[str]:
    return [t["type"]["name"] for t in sorted(pokemon["types"], key=lambda t: t["slot"])]


class PokemonTools(Api[PokemonWorld]):
    """One agent run's view of the API (seeded faults + attempt counters)."""

    def get_pokemon(self, name: str) -> ToolReply:
        if self.fault(f"pokemon:{name}"):
            return rate_limited()
        found = self.world.pokemon.get(str(name).lower())
        if found is None:
            return {"error": "not_found", "detail": f"no pokemon named {name!r}"}, "not_found", 20
        return found, "ok", 150 + 20 * len(found.get("past_stats", ()))

    def get_species(self, name: str) -> ToolReply:
        return self.serve(f"species:{name}", lambda: or_not_found(
            self.world.species.get(str(name).lower()), lambda s: 60 + 12 * len(s["varieties"])))

    def get_evolution_chain(self, id: int) -> ToolReply:  # noqa: A002 (the tool's parameter name)
        return self.serve(f"chain:{id}", lambda: or_not_found(
            self.world.chains.get(int(id)), lambda c: 40 + 15 * len(members(c["chain"]))))

    def get_type(self, name: str) -> ToolReply:
        return self.serve(f"type:{name}", lambda: or_not_found(self.world.types.get(str(name).lower()), lambda _: 160))


World, Tools = PokemonWorld, PokemonTools  # the family's hooks (family.HOOKS)
