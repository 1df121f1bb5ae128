"""The weather family's task: its parser, the ground truth and the rubric.

A case's `metadata["task"]` holds the parameters (places as [name, region, country], a date
range, the variables, fault rate, output file); `expected` is the artifact a flawless agent
writes: per place its coordinates, metric units, one row per date (null where the station has no
value) and a summary over the requested dates, plus the wettest place (docs/skillcraft_sim.md §3.3).
The rubric, per place: location (critical: the right place's coordinates), days (critical: every
requested date, no other), units (critical: °C / mm / km/h), values (daily values within
tolerance, nulls as null), summary (critical: mean max temperature, total precipitation, hottest
day over the requested dates); wettest_city when several places were asked for (§5).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from evaluators.skillcraft.concepts import tokens, words
from evaluators.skillcraft.family import Check, Task, absent, best, common, first, part, reading_task, same
from evaluators.skillcraft.weather.world import METRIC, UNIT_KEYS, WeatherWorld, summarise
from gepa_lab import Case

FIELDS = {"temperature_2m_max": "temperature_max", "temperature_2m_min": "temperature_min",
          "precipitation_sum": "precipitation", "wind_speed_10m_max": "wind_speed_max"}


@dataclass(frozen=True)
class Place:
    name: str
    admin1: str
    country: str
    label: str  # how the task names it (the key under "cities")
    city_id: int
    ambiguous: bool  # several places share its plain name


@dataclass(frozen=True)
class WeatherTask(Task):
    places: tuple[Place, ...]
    dates: tuple[str, ...]
    variables: tuple[str, ...]


def label(world: WeatherWorld, name: str, admin1: str, country: str) -> str:
    """"Name, CC", or "Name, Region, CC" when several places share the plain name."""
    cid = world.find(name, admin1, country)
    shared = cid is not None and len(world.index.get(world.cities[cid]["ascii_name"].lower(), [])) > 1
    return f"{name}, {admin1}, {country}" if shared else f"{name}, {country}"


def _dates(world: WeatherWorld, start: str, end: str) -> list[str]:
    return world.dates[world.dates.index(start): world.dates.index(end) + 1]


def ground_truth(world: WeatherWorld, params: dict[str, Any]) -> dict[str, Any]:
    """The artifact a flawless agent writes (stored as the case's `expected`)."""
    dates = _dates(world, params["start_date"], params["end_date"])
    first = world.dates.index(dates[0])
    cities: dict[str, Any] = {}
    for name, admin1, country in params["places"]:
        cid = world.find(name, admin1, country)
        assert cid is not None
        c = world.cities[cid]
        daily = c["daily"]
        rows = [{"date": d, **{FIELDS[v]: daily[v][first + k] for v in params["variables"]}}
                for k, d in enumerate(dates)]
        cities[label(world, name, admin1, country)] = {
            "latitude": c["latitude"], "longitude": c["longitude"], "daily": rows,
            "units": {UNIT_KEYS[v]: METRIC[UNIT_KEYS[v]] for v in params["variables"]},
            "summary": summarise(dates, daily["temperature_2m_max"][first:first + len(dates)],
                                 daily["precipitation_sum"][first:first + len(dates)])}
    out: dict[str, Any] = {"cities": cities}
    if len(cities) > 1:
        out["wettest_city"] = best({k: v["summary"]["total_precipitation"] for k, v in cities.items()})
    return out


def parse_task(world: WeatherWorld, case: Case) -> WeatherTask:
    with reading_task(case, "weather") as params:
        raw = [(str(n), str(a), str(c)) for n, a, c in params["places"]]
        start, end = str(params["start_date"]), str(params["end_date"])
        variables = tuple(str(v) for v in params["variables"])
    if not raw:
        raise ValueError(f"case {case.id!r}: a weather task needs at least one place")
    if start not in world.dates or end not in world.dates or end < start:
        raise ValueError(f"case {case.id!r}: dates {start}..{end} are outside the forecast horizon "
                         f"{world.dates[0]}..{world.dates[-1]}")
    if not variables or any(v not in FIELDS for v in variables):
        raise ValueError(f"case {case.id!r}: unknown weather variable(s) in {list(variables)}")
    places = []
    for name, admin1, country in raw:
        cid = world.find(name, admin1, country)
        if cid is None:
            raise ValueError(f"case {case.id!r}: unknown weather place {name}, {admin1}, {country}")
        shared = len(world.index[world.cities[cid]["ascii_name"].lower()]) > 1
        places.append(Place(name, admin1, country, label(world, name, admin1, country), cid, shared))
    wanted = "temperature precipitation daily" + (" wind" if "wind_speed_10m_max" in variables else "")
    return WeatherTask(**common(case, params, "forecast.json", lambda: ground_truth(world, params)),
                       places=tuple(places), dates=tuple(_dates(world, start, end)), variables=variables,
                       entities=frozenset(" ".join(tokens(p.name)) for p in places), task_words=words(wanted))


def entity_names(world: WeatherWorld) -> frozenset[str]:
    """Place names (accent-folded, lower case): an item naming one applies only to its tasks."""
    return frozenset(" ".join(tokens(c["name"])) for c in world.cities.values())


COORD_TOLERANCE = 0.05
UNIT_WORDS = {"°F": "fahrenheit (°F)", "inch": "inches", "mph": "mph", "°C": "celsius (°C)", "mm": "millimetres",
              "km/h": "km/h"}


def _close(a: Any, b: Any) -> bool:
    if a is None or b is None:
        return a is None and b is None
    if not isinstance(a, (int, float)) or not isinstance(b, (int, float)):
        return False
    return abs(a - b) <= 0.15 + 0.01 * abs(b)


def _grade_place(where: str, exp: dict[str, Any], got: Any) -> list[Check]:
    if not isinstance(got, dict):
        return absent(where, "location! days! units! values summary!")
    checks: list[Check] = []
    lat, lon = got.get("latitude"), got.get("longitude")
    here = (isinstance(lat, (int, float)) and isinstance(lon, (int, float))
            and abs(lat - exp["latitude"]) <= COORD_TOLERANCE and abs(lon - exp["longitude"]) <= COORD_TOLERANCE)
    checks.append(Check(f"{where}.location", here, True, "" if here else (
        f"{where}: coordinates {lat}, {lon} belong to a different place with the same name; the task asked for "
        f"the one at {exp['latitude']}, {exp['longitude']}")))
    rows = {r.get("date"): r for r in got.get("daily") or [] if isinstance(r, dict)}
    want = [r["date"] for r in exp["daily"]]
    missing = [d for d in want if d not in rows]
    extra = sorted(set(rows) - set(want), key=str)
    ok = not missing and not extra
    msg = ""
    if missing:
        msg = f"{where}: {len(missing)} of {len(want)} requested days missing ({first(missing, 3)})"
        gaps = {r["date"] for r in exp["daily"] if any(v is None for v in r.values())}
        if set(missing) <= gaps:
            msg += "; every missing day has null values in the forecast"
    elif extra:
        msg = f"{where}: days outside the requested range ({first(extra, 3)})"
    checks.append(Check(f"{where}.days", ok, True, msg))
    units = part(got, "units", dict)
    wrong = {k: units.get(k) for k in exp["units"] if units.get(k) != METRIC[k]}
    checks.append(Check(f"{where}.units", not wrong, True, "" if not wrong else (
        f"{where}: " + ", ".join(f"{k} in {UNIT_WORDS.get(str(v), v)}" for k, v in wrong.items())
        + "; the task asks for " + ", ".join(UNIT_WORDS[METRIC[k]] for k in wrong))))
    # A missing day is the days check's to report; an exactly right one has nothing to count.
    differ = sum(not _close(g.get(k), v) for r in exp["daily"] if (g := rows.get(r["date"])) is not None and g != r
                 for k, v in r.items() if k != "date")
    checks.append(Check(f"{where}.values", differ == 0, False,
                        f"{where}: {differ} daily value(s) differ from the ground truth" if differ else ""))
    summary = part(got, "summary", dict)
    bad = [k for k, v in exp["summary"].items()
           if not (summary.get(k) == v if k == "hottest_day" else _close(summary.get(k), v))]
    checks.append(Check(f"{where}.summary", not bad, True, "" if not bad else (
        f"{where}.summary: " + "; ".join(f"{k} is {summary.get(k)}, expected {exp['summary'][k]}" for k in bad)
        + ("; the summary was not computed from the requested days" if not missing and not wrong else ""))))
    return checks


def grade(task: WeatherTask, artifact: dict[str, Any]) -> list[Check]:
    """Rubric checks of the written artifact against the ground truth."""
    exp, got_cities = task.expected, part(artifact, "cities", dict)
    checks = [c for p in task.places
              for c in _grade_place(f'cities["{p.label}"]', exp["cities"][p.label], got_cities.get(p.label))]
    if "wettest_city" in exp:
        checks.append(same("wettest_city", artifact.get("wettest_city"), exp["wettest_city"]))
    return checks
