"""The pokemon family: its world's quirks, tool contracts, rubric messages and scale design."""

from __future__ import annotations

import json

import pytest
from helpers_skillcraft import load, load_all, skill

from evaluators.skillcraft import SkillCraftEvaluator, get_family
from evaluators.skillcraft.pokemon.world import PokemonTools, members, types_of
from evaluators.skillcraft.rng import Draws

SPEC = get_family("pokemon")


@pytest.fixture(scope="module")
def ev() -> SkillCraftEvaluator:
    return SkillCraftEvaluator(family="pokemon")


def test_world_has_the_quirks_the_behaviours_need(ev):
    w = ev.world
    assert len(w.chains) >= 100 and len(w.pokemon) >= 250
    branching = [c for c in w.chains.values() if len(members(c["chain"])) > len(members(c["chain"], every_branch=False))]
    assert len(branching) >= 12
    eevee = next(c for c in branching if c["chain"]["species"]["name"] == "eevee")
    assert len(members(eevee["chain"])) == 9 and len(members(eevee["chain"], every_branch=False)) == 2
    forms = [s for s in w.species if s not in w.pokemon]
    assert len(forms) >= 15 and all(w.default_pokemon(s)["name"].startswith(s + "-") for s in forms)
    assert 0.15 < sum("past_stats" in p for p in w.pokemon.values()) / len(w.pokemon) < 0.45


def test_the_type_chart_multiplies_dual_types_and_knows_immunities(ev):
    w = ev.world
    assert w.multiplier("electric", ["ground"]) == 0.0
    assert w.multiplier("ice", ["dragon", "ground"]) == 4.0  # garchomp
    assert w.multiplier("fire", ["grass", "poison"]) == 2.0 and w.multiplier("fire", ["water", "rock"]) == 0.25
    assert w.multiplier("ground", ["rock", "flying"]) == 0.0
    fire = w.types["fire"]["damage_relations"]
    assert {x["name"] for x in fire["double_damage_from"]} == {"water", "ground", "rock"}
    assert {x["name"] for x in fire["double_damage_to"]} == {"grass", "ice", "bug", "steel"}


def test_tools_follow_the_pokeapi_contracts(ev):
    t = PokemonTools(ev.world, Draws(1, "t"), 0.0)
    assert t.get_pokemon("darmanitan")[1] == "not_found"  # a form species: no Pokémon of its bare name
    species, status, _ = t.get_species("darmanitan")
    default = next(v["pokemon"]["name"] for v in species["varieties"] if v["is_default"])
    assert status == "ok" and default == "darmanitan-standard" and t.get_pokemon(default)[1] == "ok"
    chain, _, _ = t.get_evolution_chain(species["evolution_chain"]["id"])
    assert [n for n, _ in members(chain["chain"])] == ["darumaka", "darmanitan"]
    pikachu, _, _ = t.get_pokemon("pikachu")
    assert types_of(pikachu) == ["electric"] and len(pikachu["stats"]) == 6
    assert t.get_type("shadow")[1] == "not_found"
    assert PokemonTools(ev.world, Draws(1, "t"), 1.0).get_type("fire")[0]["error"] == "rate_limited"


def test_scales_branching_chains_only_on_m2_and_h1(ev):
    for case in load_all("pokemon"):
        task = ev.task(case)
        scale = case.metadata["scale"]
        chain = ev.world.chains[json.loads(case.expected)["chain_id"]]["chain"]
        branches = len(members(chain)) > len(members(chain, every_branch=False))
        assert branches <= (scale in ("m2", "h1")), case.id
        assert (task.fault_rate > 0) == (scale in ("m1", "m2", "h1"))
        assert len(task.moves) <= (1 if scale == "e1" else 3)
    assert sum(len(members(ev.world.chains[json.loads(c.expected)["chain_id"]]["chain"]))
               > len(members(ev.world.chains[json.loads(c.expected)["chain_id"]]["chain"], every_branch=False))
               for c in load("holdout", "pokemon")) >= 10


def test_rubric_messages_name_the_problem(ev):
    case = next(c for c in load("validation", "pokemon")
                if any(len(m["types"]) > 1 and m.get("multipliers") for m in json.loads(c.expected)["members"]))
    task = ev.task(case)
    art = json.loads(case.expected)
    dual = next(m for m in art["members"] if len(m["types"]) > 1 and m["multipliers"])
    move = next(iter(dual["multipliers"]))
    first_only = ev.world.multiplier(move, dual["types"][:1])
    if first_only != dual["multipliers"][move]:
        dual["multipliers"][move] = first_only
        failed = [c for c in SPEC.grade(task, art) if not c.passed]
        assert failed[0].critical and "second type" in failed[0].message
    art = json.loads(case.expected)
    art["members"] = art["members"][:1]
    failed = {c.name: c for c in SPEC.grade(task, art) if not c.passed}
    assert failed["members"].critical and "missing" in failed["members"].message
    past = next(c for c in load_all("pokemon") if any("past_stats" in ev.world.pokemon[m["pokemon"]]
                                                      for m in json.loads(c.expected)["members"]))
    task = ev.task(past)
    art = json.loads(past.expected)
    member = next(m for m in art["members"] if "past_stats" in ev.world.pokemon[m["pokemon"]])
    member["base_stat_total"] = sum(s["base_stat"] for s in ev.world.pokemon[member["pokemon"]]["past_stats"][0]["stats"])
    failed = [c for c in SPEC.grade(task, art) if not c.passed]
    assert failed[0].critical and "past_stats" in failed[0].message


def test_naming_a_species_scopes_the_guidance(ev):
    art = skill(SPEC.seed_skill, steps=list(SPEC.seed_skill["steps"]) + ["For eevee, multiply both types."])
    prof = ev.profile(art)
    assert "multiply_dual_types" in prof.guidance(frozenset({"eevee"}))[0]
    assert "multiply_dual_types" not in prof.guidance(frozenset({"oddish"}))[0]
