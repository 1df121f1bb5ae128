"""The weather family's case generator: how many places, which kinds (plain, accented, sharing a
name), how many days and which variables each scale asks for (docs/skillcraft_sim.md §3.3).
Called by `python -m evaluators.skillcraft.generate`.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from evaluators.skillcraft.family import CASES_PER_SCALE, CRITICAL_CASES, SPLIT_SCALES, DatasetFiles
from evaluators.skillcraft.rng import derived_rng
from evaluators.skillcraft.weather.fixtures import VARIABLES, generate_weather_fixtures
from evaluators.skillcraft.weather.task import ground_truth, task_params, task_statement
from evaluators.skillcraft.weather.world import WeatherWorld
from gepa_lab.core.contracts import canonical_json

VERSION = "sim-v1"
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
    rng = derived_rng("skillcraft-sim", "weather", VERSION, scale, r)
    for _ in range(10_000):
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
        key = canonical_json(params["places"])
        if key in seen:
            continue
        seen.add(key)
        return params
    raise RuntimeError(f"cannot build a {scale} case")  # pragma: no cover - generator bug


def build_cases(world: WeatherWorld) -> dict[str, list[dict[str, Any]]]:
    """10 cases per scale; ids weather/<scale>/wNN; w02, w05, w08 of m2 and h1 are critical."""
    pools = _pools(world)
    splits: dict[str, list[dict[str, Any]]] = {}
    for split, scales in SPLIT_SCALES.items():
        rows = []
        for scale in scales:
            seen: set[str] = set()
            for r in range(1, CASES_PER_SCALE + 1):
                params = _pick_task(world, pools, scale, r, seen)
                rows.append({
                    "id": f"weather/{scale}/w{r:02d}",
                    "input": task_statement(world, params, r),
                    "expected": canonical_json(ground_truth(world, params)),
                    "critical": r in CRITICAL_CASES.get(scale, ()),
                    "metadata": {"family": "weather", "scale": scale, "generator": VERSION,
                                 "task": canonical_json(params)},
                })
        splits[split] = rows
    return splits


def _fixtures_text(fixtures: dict[str, Any]) -> str:
    # One city per line: small diffs, still plain JSON.
    head = {k: v for k, v in fixtures.items() if k != "cities"}
    body = ",\n".join("  " + json.dumps(c, ensure_ascii=False, sort_keys=True) for c in fixtures["cities"])
    text = json.dumps(head, ensure_ascii=False, sort_keys=True, indent=1)
    return text[:-2] + ',\n "cities": [\n' + body + "\n ]\n}\n"


def build_dataset() -> DatasetFiles:
    fixtures = generate_weather_fixtures()
    return DatasetFiles(
        fixtures_text=_fixtures_text(fixtures),
        splits=build_cases(WeatherWorld.from_fixtures(fixtures)),
        note="SkillCraft-sim: a simulated offline stand-in for the SkillCraft weather (Open-Meteo) family.",
    )
