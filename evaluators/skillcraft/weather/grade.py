"""The weather family's rubric: compares the written forecast JSON with the ground truth.

Per place: location (critical: the right place's coordinates), days (critical: every requested
date, no other), units (critical: °C / mm / km/h), values (daily values within tolerance, nulls
as null), summary (critical: mean max temperature, total precipitation, hottest day over the
requested dates); wettest_city when several places were asked for; no artifact is one failed
critical check (docs/skillcraft_sim.md §5).
"""

from __future__ import annotations

from typing import Any

from evaluators.skillcraft.family import Check
from evaluators.skillcraft.weather.task import METRIC, WeatherTask

COORD_TOLERANCE = 0.05
UNIT_WORDS = {"°F": "fahrenheit (°F)", "inch": "inches", "mph": "mph", "°C": "celsius (°C)", "mm": "millimetres",
              "km/h": "km/h"}


def _close(a: Any, b: Any) -> bool:
    if a is None or b is None:
        return a is None and b is None
    if not isinstance(a, (int, float)) or not isinstance(b, (int, float)):
        return False
    return abs(a - b) <= 0.15 + 0.01 * abs(b)


def _fmt_dates(dates: list[str]) -> str:
    return ", ".join(dates[:3]) + (", …" if len(dates) > 3 else "")


def _grade_place(where: str, exp: dict[str, Any], got: Any) -> list[Check]:
    if not isinstance(got, dict):
        return [Check(f"{where}.location", False, True, f"{where}: missing from the artifact"),
                Check(f"{where}.days", False, True, ""), Check(f"{where}.units", False, True, ""),
                Check(f"{where}.values", False, False, ""), Check(f"{where}.summary", False, True, "")]
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
        msg = f"{where}: {len(missing)} of {len(want)} requested days missing ({_fmt_dates(missing)})"
        gaps = {r["date"] for r in exp["daily"] if any(v is None for v in r.values())}
        if set(missing) <= gaps:
            msg += "; every missing day has null values in the forecast"
    elif extra:
        msg = f"{where}: days outside the requested range ({_fmt_dates([str(x) for x in extra])})"
    checks.append(Check(f"{where}.days", ok, True, msg))
    units: dict[str, Any] = got["units"] if isinstance(got.get("units"), dict) else {}
    wrong = {k: units.get(k) for k in exp["units"] if units.get(k) != METRIC[k]}
    checks.append(Check(f"{where}.units", not wrong, True, "" if not wrong else (
        f"{where}: " + ", ".join(f"{k} in {UNIT_WORDS.get(str(v), v)}" for k, v in wrong.items())
        + "; the task asks for " + ", ".join(UNIT_WORDS[METRIC[k]] for k in wrong))))
    differ = 0
    for r in exp["daily"]:
        g = rows.get(r["date"])
        if g is None or g == r:  # missing (the days check reports it) or exactly right
            continue
        differ += sum(not _close(g.get(k), v) for k, v in r.items() if k != "date")
    checks.append(Check(f"{where}.values", differ == 0, False,
                        f"{where}: {differ} daily value(s) differ from the ground truth" if differ else ""))
    summary: dict[str, Any] = got["summary"] if isinstance(got.get("summary"), dict) else {}
    bad = [k for k, v in exp["summary"].items()
           if not (summary.get(k) == v if k == "hottest_day" else _close(summary.get(k), v))]
    checks.append(Check(f"{where}.summary", not bad, True, "" if not bad else (
        f"{where}.summary: " + "; ".join(f"{k} is {summary.get(k)}, expected {exp['summary'][k]}" for k in bad)
        + ("; the summary was not computed from the requested days" if not missing and not wrong else ""))))
    return checks


def grade(task: WeatherTask, artifact: dict[str, Any] | None) -> list[Check]:
    """Rubric checks of the written artifact against the ground truth."""
    if artifact is None:
        return [Check("artifact", False, True, f"no artifact: {task.output_file} was not written")]
    exp = task.expected
    got_cities: dict[str, Any] = artifact["cities"] if isinstance(artifact.get("cities"), dict) else {}
    checks: list[Check] = []
    for place in task.places:
        checks += _grade_place(f'cities["{place.label}"]', exp["cities"][place.label], got_cities.get(place.label))
    if "wettest_city" in exp:
        got = artifact.get("wettest_city")
        checks.append(Check("wettest_city", got == exp["wettest_city"], False,
                            f"wettest_city is {got}, expected {exp['wettest_city']}"))
    return checks
