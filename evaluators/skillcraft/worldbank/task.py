"""The worldbank family's task model: the task statement, its parser and the ground truth.

A case's `metadata["task"]` holds the parameters (countries by their World Bank names,
indicator codes, a year range, an optional "top countries in a year" question, fault rate,
output file); `expected` is the artifact a flawless agent writes: per indicator its unit and, per
country, the iso3 code, the first and last year of the range that have a value (missing values
skipped), those values in the requested unit, the change and the percent change; the country
with the largest percent change; and the top countries (no aggregates) when asked
(docs/skillcraft_sim.md §3).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from evaluators.skillcraft.concepts import fold, tokens, words
from evaluators.skillcraft.family import expected_of, finish_instruction, reading_task, scale_level
from evaluators.skillcraft.worldbank.world import WorldBankWorld
from gepa_lab.core.contracts import Case

# indicator -> (unit the task asks for, divisor of the raw value, decimals, short name, task words)
UNITS: dict[str, tuple[str, float, int, str, str]] = {
    "SP.POP.TOTL": ("millions", 1e6, 3, "population", "population"),
    "NY.GDP.MKTP.CD": ("billions of US$", 1e9, 3, "GDP in current US$", "gdp"),
    "NY.GDP.PCAP.CD": ("US$", 1.0, 2, "GDP per capita in current US$", "gdp capita"),
    "SP.DYN.LE00.IN": ("years", 1.0, 3, "life expectancy at birth", "life expectancy"),
}


@dataclass(frozen=True)
class Top:
    indicator: str
    year: int
    n: int


@dataclass(frozen=True)
class WorldBankTask:
    scale: str
    level: int
    countries: tuple[str, ...]  # World Bank names, as the task writes them
    codes: tuple[str, ...]  # their iso3 codes (ground truth; the agent must find them)
    indicators: tuple[str, ...]
    start_year: int
    end_year: int
    top: Top | None
    fault_rate: float
    output_file: str
    expected: dict[str, Any]
    entities: frozenset[str]
    task_words: frozenset[str]
    task_tokens: int
    names: Mapping[str, str]  # iso3 -> name of every country and aggregate (for rubric messages)
    aggregates: frozenset[str]
    world: WorldBankWorld = field(repr=False, compare=False)  # the rubric checks values against the data


def scaled(indicator: str, value: float | None) -> float | None:
    """A raw value in the unit the task asks for."""
    if value is None:
        return None
    _, divisor, decimals, _, _ = UNITS[indicator]
    return round(value / divisor, decimals)


def series_entry(indicator: str, iso3: str, points: Sequence[tuple[int, float | None]]) -> dict[str, Any]:
    """start / end / change of (year, raw value) points already chosen as (start, end)."""
    (sy, sv), (ey, ev) = points[0], points[-1]
    s, e = scaled(indicator, sv), scaled(indicator, ev)
    decimals = UNITS[indicator][2]
    change = round(e - s, decimals) if s is not None and e is not None else None
    pct = round(100.0 * (e - s) / s, 2) if s is not None and e is not None and s != 0 else None
    return {"iso3": iso3, "start_year": sy, "start_value": s, "end_year": ey, "end_value": e,
            "change": change, "percent_change": pct}


def largest(countries: dict[str, dict[str, Any]]) -> str | None:
    """The country with the largest percent change (the first listed wins a tie)."""
    best: tuple[float, str] | None = None
    for name, entry in countries.items():
        pct = entry.get("percent_change")
        if isinstance(pct, (int, float)) and (best is None or pct > best[0]):
            best = (pct, name)
    return best[1] if best else None


def top_entries(world: WorldBankWorld, indicator: str, rows: list[tuple[str, float | None]], n: int) -> list[dict[str, Any]]:
    """The n highest (iso3, raw value) rows, highest first (nulls left out; name breaks ties)."""
    valued = [(iso3, v) for iso3, v in rows if v is not None]
    valued.sort(key=lambda x: (-x[1], world.entries[x[0]]["name"]))
    return [{"iso3": iso3, "name": world.entries[iso3]["name"], "value": scaled(indicator, v)}
            for iso3, v in valued[:n]]


def task_params(countries: list[str], indicators: list[str], start: int, end: int, top: Top | None,
                fault_rate: float, output_file: str) -> dict[str, Any]:
    return {"countries": list(countries), "indicators": list(indicators), "start_year": start, "end_year": end,
            "top": None if top is None else {"indicator": top.indicator, "year": top.year, "n": top.n},
            "fault_rate": fault_rate, "output_file": output_file}


def ground_truth(world: WorldBankWorld, params: dict[str, Any]) -> dict[str, Any]:
    """The artifact a flawless agent writes (stored as the case's `expected`)."""
    start, end = int(params["start_year"]), int(params["end_year"])
    out: dict[str, Any] = {"indicators": {}}
    for indicator in params["indicators"]:
        countries: dict[str, Any] = {}
        for name in params["countries"]:
            iso3 = world.by_name[fold(name)]
            points = [(y, world.value(iso3, indicator, y)) for y in range(start, end + 1)]
            valued = [(y, v) for y, v in points if v is not None]
            countries[name] = series_entry(indicator, iso3, valued)
        block: dict[str, Any] = {"unit": UNITS[indicator][0], "countries": countries}
        if len(countries) > 1:
            block["largest_percent_change"] = largest(countries)
        out["indicators"][indicator] = block
    top = params.get("top")
    if top:
        rows = [(iso3, world.value(iso3, top["indicator"], int(top["year"]))) for iso3 in world.countries()]
        out["top"] = {"indicator": top["indicator"], "year": int(top["year"]),
                      "countries": top_entries(world, top["indicator"], rows, int(top["n"]))}
    return out


def task_statement(params: dict[str, Any], variant: int) -> str:
    """The task text the agent (and the reflector) reads; `variant` varies the wording."""
    opener = [
        "Compute how development indicators changed, from the local World Bank indicators API.",
        "Using the World Bank API tools, prepare a report of indicator changes per country.",
        "Build an indicator change report from the offline World Bank data service.",
    ][variant % 3]
    inds = "; ".join(f"{code} ({UNITS[code][3]}, report in {UNITS[code][0]})" for code in params["indicators"])
    lines = [
        opener,
        "Tools: get_countries(query, region) returns {countries: [{id, iso2Code, name, region, incomeLevel}]}; "
        "get_indicator(country, indicator, date, page) returns one page {page, pages, per_page, total, data: "
        "[{country, countryiso3code, date, value}]}, country being an ISO3 code; write_file(path, content); "
        "claim_done().",
        "Countries: " + "; ".join(params["countries"]) + ".",
        f"Indicators: {inds}.",
        f"Years: {params['start_year']} to {params['end_year']}. Skip missing values: use the earliest and the "
        "latest year of this range that have a value.",
        "Under \"indicators\" keyed by indicator code, give \"unit\" and, under \"countries\" keyed by the country "
        "as written above, its iso3 code, start_year, start_value, end_year, end_value, change (end minus start) "
        "and percent_change (relative to the start value, in %, 2 decimals).",
    ]
    if len(params["countries"]) > 1:
        lines.append("For each indicator also report largest_percent_change: the country with the largest "
                     "percent_change.")
    top = params.get("top")
    if top:
        lines.append(f"Also report \"top\": {{indicator, year, countries}} with the {top['n']} countries (countries "
                     f"only, not regions or income groups) with the highest {UNITS[top['indicator']][3]} in "
                     f"{top['year']}, highest first, each with iso3, name and value in {UNITS[top['indicator']][0]}.")
    lines.append(finish_instruction(params["output_file"]))
    return "\n".join(lines)


def parse_task(world: WorldBankWorld, case: Case) -> WorldBankTask:
    scale, level = scale_level(case, "worldbank")
    with reading_task(case, "worldbank") as params:
        countries = tuple(str(c) for c in params["countries"])
        indicators = tuple(str(i) for i in params["indicators"])
        start, end = int(params["start_year"]), int(params["end_year"])
        raw_top = params.get("top")
        top = None if not raw_top else Top(str(raw_top["indicator"]), int(raw_top["year"]), int(raw_top["n"]))
    if not countries or not indicators:
        raise ValueError(f"case {case.id!r}: a worldbank task needs at least one country and one indicator")
    unknown = [c for c in countries if fold(c) not in world.by_name or world.by_name[fold(c)] in world.aggregates]
    if unknown:
        raise ValueError(f"case {case.id!r}: unknown worldbank country {unknown[0]!r}")
    bad = [i for i in indicators + ((top.indicator,) if top else ()) if i not in UNITS]
    if bad:
        raise ValueError(f"case {case.id!r}: unknown worldbank indicator {bad[0]!r}")
    years = world.years
    if not years[0] <= start <= end <= years[-1] or (top and not years[0] <= top.year <= years[-1]):
        raise ValueError(f"case {case.id!r}: years {start}..{end} are outside the data {years[0]}..{years[-1]}")
    expected = expected_of(case, lambda: ground_truth(world, params), (ValueError, IndexError))
    wanted = "indicator change country " + " ".join(UNITS[i][4] for i in indicators)
    return WorldBankTask(
        scale=scale, level=level, countries=countries, codes=tuple(world.by_name[fold(c)] for c in countries),
        indicators=indicators, start_year=start, end_year=end, top=top,
        fault_rate=float(params.get("fault_rate", 0.0)), output_file=str(params.get("output_file", "indicators.json")),
        expected=expected, entities=frozenset(" ".join(tokens(c)) for c in countries), task_words=words(wanted),
        task_tokens=len(case.input) // 4, names=world.names, aggregates=world.aggregates, world=world,
    )


def entity_names(world: WorldBankWorld) -> frozenset[str]:
    """Country names (accent-folded, lower case): an item naming one applies only to its tasks."""
    return frozenset(" ".join(tokens(c["name"])) for c in world.entries.values() if c["id"] not in world.aggregates)
