"""The worldbank family's case generator: how many countries (and how many whose code cannot be
guessed from the name), which indicators, how long a year range and whether a "top countries"
question each scale asks for (docs/skillcraft_sim.md §3). Called by
`python -m evaluators.skillcraft.generate`.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import partial
from typing import Any

from evaluators.skillcraft.casebook import ATTEMPTS, Casebook, claim, fixtures_text, no_case
from evaluators.skillcraft.family import DatasetFiles
from evaluators.skillcraft.worldbank.agent import guess_code
from evaluators.skillcraft.worldbank.fixtures import generate_worldbank_fixtures
from evaluators.skillcraft.worldbank.task import Top, ground_truth, task_params, task_statement
from evaluators.skillcraft.worldbank.world import WorldBankWorld
from gepa_lab.core.contracts import canonical_json

CASEBOOK = Casebook("worldbank")
OUTPUT_FILES = ("indicators.json", "wb_report.json", "indicator_changes.json", "development_report.json")
EASY_INDICATORS = ("SP.DYN.LE00.IN", "SP.POP.TOTL", "NY.GDP.PCAP.CD")
ALL_INDICATORS = ("SP.POP.TOTL", "NY.GDP.MKTP.CD", "NY.GDP.PCAP.CD", "SP.DYN.LE00.IN")
TOP_INDICATORS = ("SP.POP.TOTL", "NY.GDP.MKTP.CD")


@dataclass(frozen=True)
class ScaleSpec:
    countries: int
    indicators: tuple[int, int]  # (min, max) indicators asked for
    years: tuple[int, int]  # (min, max) length of the year range; > 10 years spans several pages
    invalid: float  # chance a country slot is one whose guessed code is not valid
    other: float  # chance it is one whose guessed code is another country's
    top: float  # chance the task also asks for the top countries of an all-countries listing
    fault_rate: float
    gap: float  # chance some series has no value in a boundary year of the range (else none has)


SCALES: dict[str, ScaleSpec] = {
    "e1": ScaleSpec(1, (1, 1), (4, 8), 0.0, 0.0, 0.0, 0.0, 0.2),
    "e2": ScaleSpec(2, (1, 1), (6, 11), 0.25, 0.08, 0.0, 0.0, 0.5),
    "e3": ScaleSpec(2, (1, 2), (8, 14), 0.25, 0.08, 0.0, 0.0, 0.5),
    "m1": ScaleSpec(3, (2, 2), (8, 15), 0.25, 0.08, 0.0, 0.01, 0.5),
    "m2": ScaleSpec(3, (2, 2), (9, 16), 0.25, 0.08, 0.6, 0.10, 0.5),
    "h1": ScaleSpec(4, (2, 2), (10, 18), 0.25, 0.08, 0.7, 0.15, 0.5),
}


def _pools(world: WorldBankWorld) -> dict[str, list[str]]:
    pools: dict[str, list[str]] = {"plain": [], "invalid": [], "other": []}
    for iso3 in world.countries():
        guess = guess_code(world.names[iso3])
        kind = "plain" if guess == iso3 else "other" if guess in world.codes else "invalid"
        pools[kind].append(world.names[iso3])
    return pools


def _shape(world: WorldBankWorld, names: list[str], indicators: list[str], start: int, end: int) -> tuple[bool, bool]:
    """(every series has at least two values in the range, some series lacks a boundary value)."""
    usable, gap = True, False
    for name in names:
        iso3 = next(k for k, v in world.names.items() if v == name)
        for ind in indicators:
            values = [world.value(iso3, ind, y) for y in range(start, end + 1)]
            usable &= sum(v is not None for v in values) >= 2
            gap |= values[0] is None or values[-1] is None
    return usable, gap


def _pick_task(world: WorldBankWorld, pools: dict[str, list[str]], scale: str, r: int,
               seen: set[str]) -> dict[str, Any]:
    spec = SCALES[scale]
    rng = CASEBOOK.rng(scale, r)
    first, last = world.years[0], world.years[-1]
    for _ in range(ATTEMPTS):
        names: list[str] = []
        while len(names) < spec.countries:
            roll = rng.random()
            pool = pools["invalid"] if roll < spec.invalid else pools["other"] if roll < spec.invalid + spec.other \
                else pools["plain"]
            name = rng.choice(pool)
            if name not in names:
                names.append(name)
        k = rng.randint(*spec.indicators)
        indicators = rng.sample(EASY_INDICATORS if scale == "e1" else ALL_INDICATORS, k)
        length = rng.randint(*spec.years)
        want_gap = rng.random() < spec.gap
        # A range ending in the latest year often meets a value not yet published.
        start = last - length + 1 if want_gap and rng.random() < 0.5 else rng.randint(first, last - length + 1)
        end = start + length - 1
        top = None
        if rng.random() < spec.top:
            top = Top(rng.choice(TOP_INDICATORS), rng.randint(2000, last - 1), 3 if scale == "m2" else 5)
        usable, gap = _shape(world, names, indicators, start, end)
        if not usable or gap != want_gap:
            continue
        params = task_params(names, indicators, start, end, top, spec.fault_rate, rng.choice(OUTPUT_FILES))
        if claim(seen, canonical_json([sorted(names), sorted(indicators)])):
            return params
    raise no_case(scale)  # pragma: no cover - generator bug


def build_dataset() -> DatasetFiles:
    fixtures = generate_worldbank_fixtures()
    text = fixtures_text(fixtures, ("countries",))
    world = WorldBankWorld.from_fixtures(fixtures)
    return DatasetFiles(
        fixtures_text=text,
        splits=CASEBOOK.splits(partial(_pick_task, world, _pools(world)), task_statement,
                               partial(ground_truth, world)),
        note="SkillCraft-sim: a simulated offline stand-in for the SkillCraft World Bank indicators family.",
    )
