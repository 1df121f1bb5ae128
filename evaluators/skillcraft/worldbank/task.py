"""The worldbank family's task: its parser, the ground truth and the rubric.

A case's `metadata["task"]` holds the parameters (countries by their World Bank names,
indicator codes, a year range, an optional "top countries in a year" question, fault rate,
output file); `expected` is the artifact a flawless agent writes: per indicator its unit and, per
country, the iso3 code, the first and last year of the range that have a value (missing values
skipped), those values in the requested unit, the change and the percent change; the country
with the largest percent change; and the top countries (no aggregates) when asked
(docs/skillcraft_sim.md §3.4). The rubric, per indicator and country: country (critical: the series
is the asked-for country's), years (critical: the first and last year of the range that have a
value), values (critical: start and end values in the requested unit), change (critical: change
and percent change); per indicator unit and largest_percent_change; top (critical: the top
countries, no aggregates) and its values when asked (§5).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from evaluators.skillcraft.concepts import fold, tokens, words
from evaluators.skillcraft.family import Check, Task, absent, best, common, number, part, reading_task, same
from evaluators.skillcraft.worldbank.world import UNITS, WorldBankWorld
from gepa_lab import Case


@dataclass(frozen=True)
class Top:
    indicator: str
    year: int
    n: int


@dataclass(frozen=True)
class WorldBankTask(Task):
    countries: tuple[str, ...]  # World Bank names, as the task writes them
    indicators: tuple[str, ...]
    start_year: int
    end_year: int
    top: Top | None
    world: WorldBankWorld = field(repr=False, compare=False)  # the rubric checks values against the data


def scaled(indicator: str, value: float | None) -> float | None:
    """A raw value in the unit the task asks for."""
    if value is None:
        return None
    _, divisor, decimals, _ = UNITS[indicator]
    return round(value / divisor, decimals)


def change(indicator: str, s: float | None, e: float | None) -> dict[str, float | None]:
    """change and percent_change from a start and an end value (None where they cannot be computed)."""
    if s is None or e is None:
        return {"change": None, "percent_change": None}
    return {"change": round(e - s, UNITS[indicator][2]), "percent_change": round(100.0 * (e - s) / s, 2) if s else None}


def series_entry(indicator: str, iso3: str, points: Sequence[tuple[int | None, float | None]],
                 scale: bool = True) -> dict[str, Any]:
    """start / end / change of (year, raw value) points already chosen as (start, end); values in the
    task's unit (`scale`) or raw."""
    (sy, sv), (ey, ev) = points[0], points[-1]
    s, e = (scaled(indicator, v) if scale else v for v in (sv, ev))
    return {"iso3": iso3, "start_year": sy, "start_value": s, "end_year": ey, "end_value": e, **change(indicator, s, e)}


def percent_changes(countries: dict[str, dict[str, Any]]) -> dict[str, Any]:
    """Each country's percent change: the largest is their `best`."""
    return {name: entry.get("percent_change") for name, entry in countries.items()}


def top_entries(world: WorldBankWorld, indicator: str, rows: list[tuple[str, float | None]], n: int,
                scale: bool = True) -> list[dict[str, Any]]:
    """The n highest (iso3, raw value) rows, highest first (nulls left out; name breaks ties), their
    values in the task's unit (`scale`) or raw."""
    valued = [(iso3, v) for iso3, v in rows if v is not None]
    valued.sort(key=lambda x: (-x[1], world.entries[x[0]]["name"]))
    return [{"iso3": iso3, "name": world.entries[iso3]["name"], "value": scaled(indicator, v) if scale else v}
            for iso3, v in valued[:n]]


def ground_truth(world: WorldBankWorld, params: dict[str, Any]) -> dict[str, Any]:
    """The artifact a flawless agent writes (stored as the case's `expected`)."""
    start, end = int(params["start_year"]), int(params["end_year"])
    out: dict[str, Any] = {"indicators": {}}
    for indicator in params["indicators"]:
        countries: dict[str, Any] = {}
        for name in params["countries"]:
            iso3 = world.by_name[fold(name)]
            valued = [(y, v) for y in range(start, end + 1) if (v := world.value(iso3, indicator, y)) is not None]
            countries[name] = series_entry(indicator, iso3, valued)
        block: dict[str, Any] = {"unit": UNITS[indicator][0], "countries": countries}
        if len(countries) > 1:
            block["largest_percent_change"] = best(percent_changes(countries))
        out["indicators"][indicator] = block
    if top := params.get("top"):
        rows = [(iso3, world.value(iso3, top["indicator"], int(top["year"]))) for iso3 in world.countries()]
        out["top"] = {"indicator": top["indicator"], "year": int(top["year"]),
                      "countries": top_entries(world, top["indicator"], rows, int(top["n"]))}
    return out


def parse_task(world: WorldBankWorld, case: Case) -> WorldBankTask:
    with reading_task(case, "worldbank") as params:
        countries = tuple(str(c) for c in params["countries"])
        indicators = tuple(str(i) for i in params["indicators"])
        start, end = int(params["start_year"]), int(params["end_year"])
        raw_top = params.get("top")
        top = None if not raw_top else Top(str(raw_top["indicator"]), int(raw_top["year"]), int(raw_top["n"]))
    if not countries or not indicators:
        raise ValueError(f"case {case.id!r}: a worldbank task needs at least one country and one indicator")
    if unknown := [c for c in countries if fold(c) not in world.by_name or world.by_name[fold(c)] in world.aggregates]:
        raise ValueError(f"case {case.id!r}: unknown worldbank country {unknown[0]!r}")
    if bad := [i for i in indicators + ((top.indicator,) if top else ()) if i not in UNITS]:
        raise ValueError(f"case {case.id!r}: unknown worldbank indicator {bad[0]!r}")
    years = world.years
    if not years[0] <= start <= end <= years[-1] or (top and not years[0] <= top.year <= years[-1]):
        raise ValueError(f"case {case.id!r}: years {start}..{end} are outside the data {years[0]}..{years[-1]}")
    wanted = "indicator change country " + " ".join(UNITS[i][3] for i in indicators)
    return WorldBankTask(**common(case, params, "indicators.json", lambda: ground_truth(world, params),
                                  (ValueError, IndexError)),
                         countries=countries, indicators=indicators, start_year=start, end_year=end, top=top,
                         entities=frozenset(" ".join(tokens(c)) for c in countries), task_words=words(wanted), world=world)


def entity_names(world: WorldBankWorld) -> frozenset[str]:
    """Country names (accent-folded, lower case): an item naming one applies only to its tasks."""
    return frozenset(" ".join(tokens(c["name"])) for c in world.entries.values() if c["id"] not in world.aggregates)


def _close(got: Any, want: Any, rel: float = 5e-4, absolute: float = 2e-3) -> bool:
    if want is None or got is None:
        return got is None and want is None
    return number(got) and abs(got - want) <= rel * abs(want) + absolute


def _years_message(where: str, got: dict[str, Any], exp: dict[str, Any]) -> str:
    sy, ey = got.get("start_year"), got.get("end_year")
    if isinstance(sy, int) and isinstance(ey, int) and sy > ey:
        return f"{where}: start_year {sy} is later than end_year {ey}: the years were taken in the wrong order"
    for side in ("start", "end"):
        year, value = got.get(f"{side}_year"), got.get(f"{side}_value")
        if value is None and year is not None and year != exp[f"{side}_year"]:
            return (f"{where}: {side}_value is null for {year}: the value for {year} is missing, and the nearest "
                    f"year with a value ({exp[f'{side}_year']}) was not used")
    if isinstance(sy, int) and sy > exp["start_year"] and ey == exp["end_year"]:
        return (f"{where}: start_year is {sy}, expected {exp['start_year']}: the years {exp['start_year']}–{sy - 1} "
                "on later pages of the series were not read")
    return f"{where}: start_year / end_year are {sy} / {ey}, expected {exp['start_year']} / {exp['end_year']}"


def _values(where: str, indicator: str, iso3: str, got: dict[str, Any], world: WorldBankWorld) -> tuple[bool, str]:
    """Are the reported values the data's values for the reported years, in the requested unit?"""
    wrong = []
    for side in ("start", "end"):
        year, value = got.get(f"{side}_year"), got.get(f"{side}_value")
        if not isinstance(year, int) or not world.years[0] <= year <= world.years[-1]:
            return False, f"{where}: no {side} year with a value was reported"
        truth = scaled(indicator, world.value(iso3, indicator, year))
        if not _close(value, truth):
            wrong.append((side, year, value, truth))
    if not wrong:
        return True, ""
    divisor = UNITS[indicator][1]
    if divisor > 1 and all(t is not None and isinstance(v, (int, float)) and _close(v / divisor, t, 2e-3)
                           for _, _, v, t in wrong):
        return False, f"{where}: values are in {world.indicators[indicator]['unit']}, not in {UNITS[indicator][0]} as the task asks"
    side, year, value, truth = wrong[0]
    return False, f"{where}: {side}_value {value} is not the {year} value {truth}"


def _grade_country(indicator: str, name: str, exp: dict[str, Any], got: Any,
                   world: WorldBankWorld) -> list[Check]:
    where = f'"{name}" {indicator}'
    if not isinstance(got, dict):
        return absent(where, "country! years! values! change!")
    code = got.get("iso3")
    checks = [Check(f"{where}.country", code == exp["iso3"], True, "" if code == exp["iso3"] else (
        f"{where}: the series is for country code {code} ({world.names.get(str(code), 'no country')}), not for "
        f"{name} ({exp['iso3']})"))]
    years_ok = got.get("start_year") == exp["start_year"] and got.get("end_year") == exp["end_year"]
    checks.append(Check(f"{where}.years", years_ok, True, "" if years_ok else _years_message(where, got, exp)))
    # Values are judged against the data for the years the artifact claims (a wrong year is the years
    # check's business), in the unit the task asks for.
    values_ok, msg = _values(where, indicator, exp["iso3"], got, world)
    checks.append(Check(f"{where}.values", values_ok, True, msg))
    change_ok = _close(got.get("change"), exp["change"], 1e-3) and _close(got.get("percent_change"), exp["percent_change"],
                                                                          0.0, 0.02)
    msg = "" if change_ok else (
        f"{where}: change / percent_change are {got.get('change')} / {got.get('percent_change')}, expected "
        f"{exp['change']} / {exp['percent_change']}" + ("; they were not computed from the start and end values"
                                                       if years_ok and values_ok else ""))
    checks.append(Check(f"{where}.change", change_ok, True, msg))
    return checks


def grade(task: WorldBankTask, artifact: dict[str, Any]) -> list[Check]:
    """Rubric checks of the written artifact against the ground truth."""
    exp, got_inds = task.expected, part(artifact, "indicators", dict)
    checks: list[Check] = []
    for indicator, block in exp["indicators"].items():
        got = part(got_inds, indicator, dict)
        got_countries = part(got, "countries", dict)
        for name, entry in block["countries"].items():
            checks += _grade_country(indicator, name, entry, got_countries.get(name), task.world)
        checks.append(same(f'indicators["{indicator}"].unit', got.get("unit"), block["unit"]))
        if "largest_percent_change" in block:
            checks.append(same(f'indicators["{indicator}"].largest_percent_change', got.get("largest_percent_change"),
                               block["largest_percent_change"]))
    if "top" in exp:
        checks += _grade_top(exp["top"], artifact.get("top"), task.world.aggregates)
    return checks


def _grade_top(exp: dict[str, Any], got: Any, aggregate_codes: frozenset[str]) -> list[Check]:
    want = [c["iso3"] for c in exp["countries"]]
    rows = [r for r in part(got, "countries", list) if isinstance(r, dict)]
    codes = [r.get("iso3") for r in rows]
    aggregates = [str(r.get("name") or r.get("iso3")) for r in rows if codes != want and r.get("iso3") in aggregate_codes]
    missing = [c for c in want if c not in codes]
    msg = ("" if codes == want else f"top: lists aggregates, not countries: {', '.join(aggregates[:3])}" if aggregates
           else f"top: {len(missing)} of {len(want)} expected countries missing ({', '.join(missing)})" if missing
           else f"top: countries are {', '.join(map(str, codes))}, expected {', '.join(want)}")
    values = {r.get("iso3"): r.get("value") for r in rows}
    values_ok = all(_close(values.get(c["iso3"]), c["value"]) for c in exp["countries"])
    return [Check("top.countries", codes == want, True, msg),
            Check("top.values", values_ok, False, "" if values_ok else "top: values differ from the ground truth")]

