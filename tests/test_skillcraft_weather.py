"""The weather family: its world's quirks, tool contracts, rubric messages and scale design."""

from __future__ import annotations

import json

import pytest
from helpers_skillcraft import load, load_all, skill

from evaluators.skillcraft import SkillCraftEvaluator, get_family
from evaluators.skillcraft.rng import Draws
from evaluators.skillcraft.weather.world import WeatherTools

SPEC = get_family("weather")


@pytest.fixture(scope="module")
def ev() -> SkillCraftEvaluator:
    return SkillCraftEvaluator(family="weather")


def tools(ev: SkillCraftEvaluator, fault_rate: float = 0.0) -> WeatherTools:
    return WeatherTools(ev.world, Draws(1, "t"), fault_rate)


def test_world_has_the_quirks_the_behaviours_need(ev):
    w = ev.world
    assert len(w.cities) >= 100
    shared = [ids for ids in w.index.values() if len(ids) > 1]
    assert len(shared) >= 15
    accented = [c for c in w.cities.values() if not c["name"].isascii()]
    assert len(accented) >= 20
    assert {c["units"] for c in w.cities.values()} == {"metric", "imperial"}
    cells = [v for c in w.cities.values() for series in c["daily"].values() for v in series]
    assert 0.01 < sum(v is None for v in cells) / len(cells) < 0.06
    assert len(w.dates) == 16 and w.window_days == 7


def test_geocoder_is_ascii_only_and_lists_shared_names_by_population(ev):
    t = tools(ev)
    res, status, _ = t.geocode("Zürich")
    assert (res, status) == ({"results": []}, "empty")
    res, status, _ = t.geocode("zurich")
    assert status == "ok" and res["results"][0]["name"] == "Zürich"
    res, _, _ = t.geocode("Springfield")
    pops = [r["population"] for r in res["results"]]
    assert len(pops) == 3 and pops == sorted(pops, reverse=True)


def test_forecast_windows_units_nulls_and_a_stale_summary(ev):
    t = tools(ev)
    boston = next(c for c in ev.world.cities.values() if c["name"] == "Boston")
    res, status, _ = t.get_forecast(boston["latitude"], boston["longitude"], "2024-07-02", "2024-07-14")
    assert status == "ok" and len(res["daily"]["time"]) == 7 and res["next_start_date"] == "2024-07-09"
    assert res["daily_units"]["temperature_2m_max"] == "°F"  # a US station
    assert res["summary"]["period"] == "2024-07-01/2024-07-16"  # the whole horizon, not the request
    res2, _, _ = t.get_forecast(boston["latitude"], boston["longitude"], "2024-07-09", "2024-07-14")
    assert len(res2["daily"]["time"]) == 6 and res2["next_start_date"] is None
    assert t.get_forecast(0.0, 0.0, "2024-07-02", "2024-07-03")[1] == "error"
    assert t.get_forecast(boston["latitude"], boston["longitude"], "2024-06-30", "2024-07-03")[1] == "error"
    faulty = WeatherTools(ev.world, Draws(1, "t"), 1.0)
    assert faulty.geocode("Paris")[0]["error"] == "rate_limited"


def test_scales_long_ranges_only_on_m2_and_h1():
    for case in load_all("weather"):
        task = json.loads(case.metadata["task"])
        days = len(json.loads(case.expected)["cities"][next(iter(json.loads(case.expected)["cities"]))]["daily"])
        assert (days > 7) == (case.metadata["scale"] in ("m2", "h1")), case.id
        assert (task["fault_rate"] > 0) == (case.metadata["scale"] in ("m1", "m2", "h1"))
    assert all(len(json.loads(c.metadata["task"])["places"]) == 1 for c in load("feedback", "weather")[:10])


def test_rubric_messages_name_the_problem(ev):
    case = next(c for c in load("validation", "weather")
                if any(p.ambiguous for p in ev.task(c).places))
    task = ev.task(case)
    truth = json.loads(case.expected)
    place = next(p for p in task.places if p.ambiguous)
    broken = json.loads(case.expected)
    entry = broken["cities"][place.label]
    entry["latitude"] += 3.0
    entry["units"]["temperature"] = "°F"
    entry["summary"]["mean_temperature_max"] = 99.0
    failed = {c.name.rsplit(".", 1)[1]: c for c in SPEC.grade(task, broken) if not c.passed}
    assert failed["location"].critical and "different place with the same name" in failed["location"].message
    assert failed["units"].critical and "fahrenheit" in failed["units"].message
    assert failed["summary"].critical
    gappy = next(c for c in load_all("weather")
                 if any(v is None for e in json.loads(c.expected)["cities"].values() for r in e["daily"]
                        for v in r.values()))
    task = ev.task(gappy)
    dropped = json.loads(gappy.expected)
    for e in dropped["cities"].values():
        e["daily"] = [r for r in e["daily"] if None not in r.values()]
    days = [c for c in SPEC.grade(task, dropped) if c.name.endswith(".days") and not c.passed]
    assert days and days[0].critical and "every missing day has null values" in days[0].message
    assert truth != broken


def test_naming_a_place_scopes_the_guidance(ev):
    art = skill(SPEC.seed_skill, steps=list(SPEC.seed_skill["steps"]) + ["For Zürich, convert fahrenheit to celsius."])
    prof = ev.profile(art)
    assert "convert_units" in prof.guidance(frozenset({"zurich"}))[0]
    assert "convert_units" not in prof.guidance(frozenset({"boston"}))[0]
