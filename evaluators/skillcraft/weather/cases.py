"""The weather family's case generator: how many places, which kinds (plain, accented, sharing a
name), how many days and which variables each scale asks for (docs/skillcraft_sim.md §3.3).
Called by `python -m evaluators.skillcraft.generate`.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import partial
from typing import Any

from evaluators.skillcraft.casebook import ATTEMPTS, Casebook, claim, fixtures_text, no_case
from evaluators.skillcraft.family import DatasetFiles
from evaluators.skillcraft.weather.fixtures import VARIABLES, generate_weather_fixtures
from evaluators.skillcraft.weather.task import ground_truth, task_params, task_statement
from evaluators.skillcraft.weather.world import WeatherWorld
from gepa_lab.core.contracts import canonical_json

CASEBOOK = Casebook("weather")
OUTPUT_FILES = ("forecast.json", "weather_report.json", "daily_forecast.json", "weather.json")
BASE_VARIABLES = list(VARIABLES[:3])


@dataclass(frozen=True)
class ScaleSpec:
    places: int
    days: tuple[int, int]  # (min, max) days in the range; > 7 needs several forecast windows
    accented: float  # chance a place slot is an accented name
    shared: float  # chance a place slot is a name several places share
    fault_rate: float
    wind: bool


SCALES: dict[str, ScaleSpec] = {
    "e1": ScaleSpec(1, (3, 3), 0.0, 0.0, 0.0, False),
    "e2": ScaleSpec(2, (4, 5), 0.3, 0.3, 0.0, False),
    "e3": ScaleSpec(2, (6, 7), 0.3, 0.35, 0.0, False),
    "m1": ScaleSpec(3, (6, 7), 0.3, 0.35, 0.01, True),
    "m2": ScaleSpec(3, (10, 14), 0.3, 0.35, 0.10, True),
    "h1": ScaleSpec(4, (13, 16), 0.3, 0.35, 0.15, True),
}


def _pools(world: WeatherWorld) -> dict[str, list[tuple[str, str, str]]]:
    pools: dict[str, list[tuple[str, str, str]]] = {"accented": [], "shared_first": [], "shared_other": [],
                                                    "plain": []}
    for c in sorted(world.cities.values(), key=lambda c: c["id"]):
        key = (c["name"], c["admin1"], c["country"])
        ids = world.index[c["ascii_name"].lower()]
        if len(ids) > 1:
            pools["shared_first" if ids[0] == c["id"] else "shared_other"].append(key)
        elif not c["name"].isascii():
            pools["accented"].append(key)
        else:
            pools["plain"].append(key)
    return pools


def _pick_task(world: WeatherWorld, pools: dict[str, list[tuple[str, str, str]]], scale: str, r: int,
               seen: set[str]) -> dict[str, Any]:
    spec = SCALES[scale]
    rng = CASEBOOK.rng(scale, r)
    for _ in range(ATTEMPTS):
        places: list[tuple[str, str, str]] = []
        while len(places) < spec.places:
            roll = rng.random()
            if roll < spec.shared:
                # Usually a place that is not the geocoder's first hit: picking the first is wrong.
                pool = pools["shared_other"] if rng.random() < 0.7 else pools["shared_first"]
            elif roll < spec.shared + spec.accented:
                pool = pools["accented"]
            else:
                pool = pools["plain"]
            place = rng.choice(pool)
            if place[0] not in {p[0] for p in places}:
                places.append(place)
        days = rng.randint(*spec.days)
        first = rng.randrange(0, len(world.dates) - days + 1)
        variables = BASE_VARIABLES + (["wind_speed_10m_max"] if spec.wind else [])
        params = task_params(places, world.dates[first], world.dates[first + days - 1], variables,
                             spec.fault_rate, rng.choice(OUTPUT_FILES))
        if claim(seen, canonical_json(params["places"])):
            return params
    raise no_case(scale)  # pragma: no cover - generator bug


def build_dataset() -> DatasetFiles:
    fixtures = generate_weather_fixtures()
    text = fixtures_text(fixtures, ("cities",))
    world = WeatherWorld.from_fixtures(fixtures)
    return DatasetFiles(
        fixtures_text=text,
        splits=CASEBOOK.splits(partial(_pick_task, world, _pools(world)), partial(task_statement, world),
                               partial(ground_truth, world)),
        note="SkillCraft-sim: a simulated offline stand-in for the SkillCraft weather (Open-Meteo) family.",
    )
