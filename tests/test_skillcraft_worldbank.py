"""The worldbank family: its world's quirks, tool contracts, rubric messages and scale design."""

from __future__ import annotations

import json

import pytest
from helpers_skillcraft import load, load_all, skill

from evaluators.skillcraft import SkillCraftEvaluator, get_family
from evaluators.skillcraft.rng import Draws
from evaluators.skillcraft.worldbank.agent import guess_code
from evaluators.skillcraft.worldbank.world import WorldBankTools

SPEC = get_family("worldbank")


@pytest.fixture(scope="module")
def ev() -> SkillCraftEvaluator:
    return SkillCraftEvaluator(family="worldbank")


def tools(ev: SkillCraftEvaluator, fault_rate: float = 0.0) -> WorldBankTools:
    return WorldBankTools(ev.world, Draws(1, "t"), fault_rate)


def test_world_has_the_quirks_the_behaviours_need(ev):
    w = ev.world
    assert len(w.countries()) >= 80 and len(w.aggregates) >= 10
    cells = [v for iso3 in w.countries() for series in w.entries[iso3]["series"].values() for v in series]
    assert 0.02 < sum(v is None for v in cells) / len(cells) < 0.15
    latest = [w.entries[c]["series"]["SP.POP.TOTL"][-1] for c in w.countries()]
    assert sum(v is None for v in latest) / len(latest) > 0.25  # the newest year is often unpublished
    # Aggregates dwarf countries: the world's population is larger than any country's.
    year = 2015
    assert w.value("WLD", "SP.POP.TOTL", year) > max(w.value(c, "SP.POP.TOTL", year) or 0 for c in w.countries())
    # Guessing a code from the name: sometimes right, sometimes invalid, sometimes another country.
    kinds = {"right": 0, "invalid": 0, "other": 0}
    for iso3 in w.countries():
        g = guess_code(w.names[iso3])
        kinds["right" if g == iso3 else "other" if g in w.codes else "invalid"] += 1
    assert min(kinds.values()) >= 5 and w.names[w.codes[guess_code("Austria")]] == "Australia"


def test_indicator_endpoint_pages_newest_first_with_nulls_and_raw_units(ev):
    t = tools(ev)
    res, status, _ = t.get_indicator("IND", "SP.POP.TOTL", "2000:2014", 1)
    assert status == "ok" and res["pages"] == 2 and res["per_page"] == 10 and res["total"] == 15
    years = [int(r["date"]) for r in res["data"]]
    assert years == sorted(years, reverse=True) and years[0] == 2014  # newest first
    assert res["data"][0]["value"] > 1e8  # persons, not millions
    page2, _, _ = t.get_indicator("IND", "SP.POP.TOTL", "2000:2014", 2)
    assert [int(r["date"]) for r in page2["data"]] == list(range(2004, 1999, -1))
    assert t.get_indicator("IN", "SP.POP.TOTL", "2005", 1)[0]["data"][0]["countryiso3code"] == "IND"  # ISO2 works
    assert t.get_indicator("IND", "SP.POP.TOTL", "2005", 9)[1] == "empty"
    for bad in (("GER", "SP.POP.TOTL", "2005"), ("DEU", "NOPE", "2005"), ("DEU", "SP.POP.TOTL", "2030"),
                ("DEU", "SP.POP.TOTL", "2010:2005")):
        reply, status, _ = t.get_indicator(*bad, 1)
        assert status == "error" and reply["error"] == "invalid_value"
    everyone, _, _ = t.get_indicator("all", "SP.POP.TOTL", "2010", 1)
    first = {r["countryiso3code"] for r in everyone["data"][:10]}
    assert first <= ev.world.aggregates and everyone["per_page"] == 50  # aggregates come first
    found, _, _ = t.get_countries("korea")
    assert [c["id"] for c in found["countries"]] == ["KOR"]
    regions = {c["region"]["value"] for c in t.get_countries("")[0]["countries"]}
    assert "Aggregates" in regions
    assert WorldBankTools(ev.world, Draws(1, "t"), 1.0).get_countries("India")[0]["error"] == "rate_limited"


def test_scales_ranking_only_on_m2_and_h1_and_the_expected_skips_missing_values(ev):
    skipped = 0
    for case in load_all("worldbank"):
        params = json.loads(case.metadata["task"])
        scale = case.metadata["scale"]
        assert bool(params["top"]) <= (scale in ("m2", "h1")), case.id
        assert (params["fault_rate"] > 0) == (scale in ("m1", "m2", "h1"))
        for ind, block in json.loads(case.expected)["indicators"].items():
            for entry in block["countries"].values():
                # The expected start and end are the outermost years of the range that have a value.
                assert params["start_year"] <= entry["start_year"] < entry["end_year"] <= params["end_year"]
                assert None not in (entry["start_value"], entry["end_value"])
                assert ev.world.value(entry["iso3"], ind, entry["start_year"]) is not None
                skipped += (entry["start_year"], entry["end_year"]) != (params["start_year"], params["end_year"])
    assert any(json.loads(c.metadata["task"])["top"] for c in load("holdout", "worldbank"))
    assert skipped >= 10  # boundary years without a value are common


def test_rubric_messages_name_the_problem(ev):
    case = next(c for c in load("validation", "worldbank") if len(json.loads(c.metadata["task"])["countries"]) > 1)
    task = ev.task(case)
    ind = task.indicators[0]
    name = task.countries[0]

    def broken(change):
        art = json.loads(case.expected)
        change(art["indicators"][ind]["countries"][name])
        return {c.name.rsplit(".", 1)[1]: c for c in SPEC.grade(task, art) if not c.passed}

    def swap(e):
        e["start_year"], e["end_year"] = e["end_year"], e["start_year"]
        e["start_value"], e["end_value"] = e["end_value"], e["start_value"]
    failed = broken(swap)
    assert failed["years"].critical and "wrong order" in failed["years"].message
    failed = broken(lambda e: e.update(iso3="ZZZ"))
    assert failed["country"].critical and "not for" in failed["country"].message
    if ind in ("SP.POP.TOTL", "NY.GDP.MKTP.CD"):
        failed = broken(lambda e: e.update(start_value=e["start_value"] * 1e6, end_value=e["end_value"] * 1e6))
        assert "not in" in failed["values"].message


def test_a_null_boundary_and_aggregates_in_a_ranking_are_reported():
    ev = SkillCraftEvaluator(family="worldbank")
    case = next(c for c in load_all("worldbank") if any(
        e["end_year"] != json.loads(c.metadata["task"])["end_year"]
        for b in json.loads(c.expected)["indicators"].values() for e in b["countries"].values()))
    task = ev.task(case)
    art = json.loads(case.expected)
    for block in art["indicators"].values():
        for entry in block["countries"].values():
            if entry["end_year"] != task.end_year:
                entry.update(end_year=task.end_year, end_value=None, change=None, percent_change=None)
    msgs = [c.message for c in SPEC.grade(task, art) if not c.passed and c.name.endswith(".years")]
    assert msgs and all("nearest year with a value" in m for m in msgs)
    top = next(c for c in load("holdout", "worldbank") if json.loads(c.metadata["task"])["top"])
    task = ev.task(top)
    art = json.loads(top.expected)
    art["top"]["countries"][0] = {"iso3": "WLD", "name": "World", "value": 1.0}
    failed = [c for c in SPEC.grade(task, art) if not c.passed and c.name == "top.countries"]
    assert failed and failed[0].critical and "aggregates" in failed[0].message


def test_naming_a_country_scopes_the_guidance(ev):
    art = skill(SPEC.seed_skill, steps=list(SPEC.seed_skill["steps"]) + ["For India, report values in millions."])
    prof = ev.profile(art)
    assert "scale_units" in prof.guidance(frozenset({"india"}))[0]
    assert "scale_units" not in prof.guidance(frozenset({"brazil"}))[0]
