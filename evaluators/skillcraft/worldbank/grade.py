"""The worldbank family's rubric: compares the written indicator report with the ground truth.

Per indicator and country: country (critical: the series is the asked-for country's), years
(critical: the first and last year of the range that have a value), values (critical: start and
end values in the requested unit), change (critical: change and percent change); per indicator
unit and largest_percent_change; top (critical: the top countries, no aggregates) and its values
when asked; no artifact is one failed critical check (docs/skillcraft_sim.md §5).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from evaluators.skillcraft.family import Check
from evaluators.skillcraft.worldbank.task import UNITS, WorldBankTask, scaled
from evaluators.skillcraft.worldbank.world import WorldBankWorld

RAW_UNITS = {"SP.POP.TOTL": "persons", "NY.GDP.MKTP.CD": "current US$"}


def _num(x: Any) -> bool:
    return isinstance(x, (int, float)) and not isinstance(x, bool)


def _close(got: Any, want: Any, rel: float = 5e-4, absolute: float = 2e-3) -> bool:
    if want is None or got is None:
        return got is None and want is None
    return _num(got) and abs(got - want) <= rel * abs(want) + absolute


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
        return False, f"{where}: values are in {RAW_UNITS[indicator]}, not in {UNITS[indicator][0]} as the task asks"
    side, year, value, truth = wrong[0]
    return False, f"{where}: {side}_value {value} is not the {year} value {truth}"


def _grade_country(indicator: str, name: str, exp: dict[str, Any], got: Any,
                   world_names: Mapping[str, str], world: WorldBankWorld) -> list[Check]:
    where = f'"{name}" {indicator}'
    if not isinstance(got, dict):
        return [Check(f"{where}.country", False, True, f"{where}: missing from the artifact"),
                Check(f"{where}.years", False, True, ""), Check(f"{where}.values", False, True, ""),
                Check(f"{where}.change", False, True, "")]
    checks = []
    code = got.get("iso3")
    ok = code == exp["iso3"]
    other = world_names.get(str(code), "no country")
    checks.append(Check(f"{where}.country", ok, True, "" if ok else (
        f"{where}: the series is for country code {code} ({other}), not for {name} ({exp['iso3']})")))
    years_ok = got.get("start_year") == exp["start_year"] and got.get("end_year") == exp["end_year"]
    checks.append(Check(f"{where}.years", years_ok, True, "" if years_ok else _years_message(where, got, exp)))
    # Values are judged against the data for the years the artifact claims (a wrong year is the years
    # check's business), in the unit the task asks for.
    values_ok, msg = _values(where, indicator, exp["iso3"], got, world)
    checks.append(Check(f"{where}.values", values_ok, True, msg))
    change_ok = _close(got.get("change"), exp["change"], 1e-3) and _close(got.get("percent_change"), exp["percent_change"],
                                                                          0.0, 0.02)
    msg = ""
    if not change_ok:
        msg = (f"{where}: change / percent_change are {got.get('change')} / {got.get('percent_change')}, expected "
               f"{exp['change']} / {exp['percent_change']}")
        if years_ok and values_ok:
            msg += "; they were not computed from the start and end values"
    checks.append(Check(f"{where}.change", change_ok, True, msg))
    return checks


def grade(task: WorldBankTask, artifact: dict[str, Any] | None) -> list[Check]:
    """Rubric checks of the written artifact against the ground truth."""
    if artifact is None:
        return [Check("artifact", False, True, f"no artifact: {task.output_file} was not written")]
    exp = task.expected
    got_inds = artifact.get("indicators") if isinstance(artifact.get("indicators"), dict) else {}
    assert isinstance(got_inds, dict)
    checks: list[Check] = []
    for indicator, block in exp["indicators"].items():
        got = got_inds.get(indicator) if isinstance(got_inds.get(indicator), dict) else {}
        assert isinstance(got, dict)
        got_countries = got.get("countries") if isinstance(got.get("countries"), dict) else {}
        assert isinstance(got_countries, dict)
        for name, entry in block["countries"].items():
            checks += _grade_country(indicator, name, entry, got_countries.get(name), task.names, task.world)
        unit = got.get("unit")
        checks.append(Check(f'indicators["{indicator}"].unit', unit == block["unit"], False,
                            f'indicators["{indicator}"].unit is {unit}, expected {block["unit"]}'))
        if "largest_percent_change" in block:
            g = got.get("largest_percent_change")
            checks.append(Check(f'indicators["{indicator}"].largest_percent_change', g == block["largest_percent_change"],
                                False, f'indicators["{indicator}"].largest_percent_change is {g}, expected '
                                f'{block["largest_percent_change"]}'))
    if "top" in exp:
        checks += _grade_top(exp["top"], artifact.get("top"), task.aggregates)
    return checks


def _grade_top(exp: dict[str, Any], got: Any, aggregate_codes: frozenset[str]) -> list[Check]:
    want = [c["iso3"] for c in exp["countries"]]
    rows = got.get("countries") if isinstance(got, dict) and isinstance(got.get("countries"), list) else []
    assert isinstance(rows, list)
    codes = [r.get("iso3") for r in rows if isinstance(r, dict)]
    ok = codes == want
    msg = ""
    if not ok:
        aggregates = [str(r.get("name") or r.get("iso3")) for r in rows
                      if isinstance(r, dict) and r.get("iso3") in aggregate_codes]
        missing = [c for c in want if c not in codes]
        if aggregates:
            msg = f"top: lists aggregates, not countries: {', '.join(aggregates[:3])}"
        elif missing:
            msg = f"top: {len(missing)} of {len(want)} expected countries missing ({', '.join(missing)})"
        else:
            msg = f"top: countries are {', '.join(map(str, codes))}, expected {', '.join(want)}"
    values = {r.get("iso3"): r.get("value") for r in rows if isinstance(r, dict)}
    values_ok = all(_close(values.get(c["iso3"]), c["value"]) for c in exp["countries"])
    return [Check("top.countries", ok, True, msg),
            Check("top.values", values_ok, False, "" if values_ok else "top: values differ from the ground truth")]

