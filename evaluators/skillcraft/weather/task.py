"""The weather family's task model: the task statement, its parser and the ground truth.

A case's `metadata["task"]` holds the parameters (places as [name, region, country], a date
range, the variables, fault rate, output file); `expected` is the artifact a flawless agent
writes: per place its coordinates, metric units, one row per date (null where the station has no
value) and a summary over the requested dates, plus the wettest place (docs/skillcraft_sim.md §3).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from evaluators.skillcraft.concepts import tokens, words
from evaluators.skillcraft.family import expected_of, finish_instruction, reading_task, scale_level
from evaluators.skillcraft.weather.world import WeatherWorld, summarise
from gepa_lab.core.contracts import Case

FIELDS = {"temperature_2m_max": "temperature_max", "temperature_2m_min": "temperature_min",
          "precipitation_sum": "precipitation", "wind_speed_10m_max": "wind_speed_max"}
UNIT_KEYS = {"temperature_2m_max": "temperature", "temperature_2m_min": "temperature",
             "precipitation_sum": "precipitation", "wind_speed_10m_max": "wind_speed"}
METRIC = {"temperature": "°C", "precipitation": "mm", "wind_speed": "km/h"}


@dataclass(frozen=True)
class Place:
    name: str
    admin1: str
    country: str
    label: str  # how the task names it (the key under "cities")
    city_id: int
    ambiguous: bool  # several places share its plain name


@dataclass(frozen=True)
class WeatherTask:
    scale: str
    level: int
    places: tuple[Place, ...]
    dates: tuple[str, ...]
    variables: tuple[str, ...]
    fault_rate: float
    output_file: str
    expected: dict[str, Any]
    entities: frozenset[str]
    task_words: frozenset[str]
    task_tokens: int


def label(world: WeatherWorld, name: str, admin1: str, country: str) -> str:
    """"Name, CC", or "Name, Region, CC" when several places share the plain name."""
    cid = world.find(name, admin1, country)
    shared = cid is not None and len(world.index.get(world.cities[cid]["ascii_name"].lower(), [])) > 1
    return f"{name}, {admin1}, {country}" if shared else f"{name}, {country}"


def task_params(places: list[tuple[str, str, str]], start: str, end: str, variables: list[str],
                fault_rate: float, output_file: str) -> dict[str, Any]:
    return {"places": [list(p) for p in places], "start_date": start, "end_date": end,
            "variables": list(variables), "fault_rate": fault_rate, "output_file": output_file}


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
        rows = []
        for k, d in enumerate(dates):
            row: dict[str, Any] = {"date": d}
            for var in params["variables"]:
                row[FIELDS[var]] = c["daily"][var][first + k]
            rows.append(row)
        daily = c["daily"]
        cities[label(world, name, admin1, country)] = {
            "latitude": c["latitude"], "longitude": c["longitude"],
            "units": {UNIT_KEYS[v]: METRIC[UNIT_KEYS[v]] for v in params["variables"]},
            "daily": rows,
            "summary": summarise(dates, daily["temperature_2m_max"][first:first + len(dates)],
                                 daily["precipitation_sum"][first:first + len(dates)]),
        }
    out: dict[str, Any] = {"cities": cities}
    if len(cities) > 1:
        out["wettest_city"] = max(cities, key=lambda k: (cities[k]["summary"]["total_precipitation"],
                                                         -list(cities).index(k)))
    return out


def task_statement(world: WeatherWorld, params: dict[str, Any], variant: int) -> str:
    """The task text the agent (and the reflector) reads; `variant` varies the wording."""
    names = [label(world, *p) for p in params["places"]]
    wind = "wind_speed_10m_max" in params["variables"]
    opener = [
        "Report the daily weather forecast for some places from the local forecast API.",
        "Using the geocoding and forecast tools, prepare a daily weather report.",
        "Build a weather forecast summary from the offline meteo service.",
    ][variant % 3]
    fields = "date, temperature_max, temperature_min, precipitation" + (", wind_speed_max" if wind else "")
    units = "temperature °C, precipitation mm" + (", wind_speed km/h" if wind else "")
    lines = [
        opener,
        "Tools: geocode(name) returns matching places {id, name, admin1, country, latitude, longitude, population}; "
        "get_forecast(latitude, longitude, start_date, end_date) returns daily values with daily_units, "
        "next_start_date and a summary block; write_file(path, content); claim_done().",
        "Places: " + "; ".join(names) + ".",
        f"Dates: {params['start_date']} to {params['end_date']} (inclusive).",
        "For each place, under \"cities\" keyed by the place as written above, give latitude, longitude, "
        f"units ({units}), one \"daily\" row per date ({fields}) with null where a value is missing, and a "
        "\"summary\" with mean_temperature_max, total_precipitation and hottest_day over these dates.",
    ]
    if len(names) > 1:
        lines.append("Also report wettest_city: the place with the most precipitation over these dates.")
    lines.append(finish_instruction(params["output_file"]))
    return "\n".join(lines)


def parse_task(world: WeatherWorld, case: Case) -> WeatherTask:
    scale, level = scale_level(case, "weather")
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
    expected = expected_of(case, lambda: ground_truth(world, params))
    wanted = "temperature precipitation daily" + (" wind" if "wind_speed_10m_max" in variables else "")
    return WeatherTask(
        scale=scale, level=level, places=tuple(places), dates=tuple(_dates(world, start, end)),
        variables=variables, fault_rate=float(params.get("fault_rate", 0.0)),
        output_file=str(params.get("output_file", "forecast.json")), expected=expected,
        entities=frozenset(" ".join(tokens(p.name)) for p in places), task_words=words(wanted),
        task_tokens=len(case.input) // 4,
    )


def entity_names(world: WeatherWorld) -> frozenset[str]:
    """Place names (accent-folded, lower case): an item naming one applies only to its tasks."""
    return frozenset(" ".join(tokens(c["name"])) for c in world.cities.values())
