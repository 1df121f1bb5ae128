"""The simulated weather agent: solves a WeatherTask by really calling the tools.

Each named behaviour is drawn right or wrong (AgentRun.right) and a wrong one changes what the
agent does: it re-sends an accented query that found nothing (the loop), takes the geocoder's
first hit for a shared name, leaves °F / inch / mph, drops days with a null value, copies the
endpoint's whole-horizon summary, reads only the first 7-day window of a long range, skips
rate-limited calls, fetches forecasts for places nobody asked for, or never writes the file.
Grading then finds the damage.
"""

from __future__ import annotations

from typing import Any

from evaluators.skillcraft.agent import AgentRun, misread
from evaluators.skillcraft.rng import Draws
from evaluators.skillcraft.weather.task import FIELDS, METRIC, UNIT_KEYS, Place, WeatherTask
from evaluators.skillcraft.weather.world import WeatherTools, summarise, to_metric

WASTED_FORECASTS = 2  # other candidates whose forecast a wasteful agent also fetches


def _locate(run: AgentRun, tools: WeatherTools, place: Place) -> tuple[dict[str, Any] | None, list[dict[str, Any]]]:
    """Geocode a place and pick a candidate. Returns (picked place or None, all candidates)."""
    key = place.label
    res = run.ask(tools, f"geo:{place.name}", "geocode", name=place.name)
    if res is None:
        return None, []  # a skipped rate limit: the place is lost
    if not res["results"] and not place.name.isascii():
        if not run.right("geocode_plain_name", key):
            run.repeat_until_noticed(tools, key, "geocode", name=place.name)
        plain = tools.world.cities[place.city_id]["ascii_name"]
        res = run.ask(tools, f"geo:{plain}", "geocode", name=plain)
    if res is None or not (candidates := res["results"]):
        return None, []
    if len(candidates) > 1 and not run.right("disambiguate_city", key):
        return candidates[0], candidates
    match = next((c for c in candidates if (c["admin1"], c["country"]) == (place.admin1, place.country)), None)
    return match or candidates[0], candidates


def _forecast(run: AgentRun, tools: WeatherTools, spot: dict[str, Any], task: WeatherTask,
              key: str) -> list[dict[str, Any]]:
    """The forecast windows the agent fetches for one place (each a raw response)."""
    lat, lon = spot["latitude"], spot["longitude"]
    start: str | None = task.dates[0]
    end = task.dates[-1]
    windows = []
    every = run.right("request_every_window", key)
    while start:
        res = run.ask(tools, f"fc:{key}:{start}", "get_forecast", latitude=lat, longitude=lon, start_date=start,
                      end_date=end)
        if res is None:
            break  # a skipped error loses this window and the cursor with it
        windows.append(res)
        start = res.get("next_start_date") if every else None
    return windows


def _entry(run: AgentRun, task: WeatherTask, spot: dict[str, Any], windows: list[dict[str, Any]],
           key: str) -> dict[str, Any]:
    units = windows[0]["daily_units"] if windows else {}
    convert, keep_nulls = run.right("convert_units", key), run.right("keep_null_days", key)
    rows = []
    for w in windows:
        daily = w["daily"]
        for i, d in enumerate(daily["time"]):
            row = {"date": d, **{FIELDS[v]: to_metric(units.get(v, ""), daily[v][i]) if convert else daily[v][i]
                                 for v in task.variables}}
            if not keep_nulls and any(row[FIELDS[v]] is None for v in task.variables):
                continue  # a day with a gap is dropped
            rows.append(row)
    unit_names = {UNIT_KEYS[v]: (METRIC[UNIT_KEYS[v]] if convert else units.get(v, METRIC[UNIT_KEYS[v]]))
                  for v in task.variables}
    if run.right("summarise_requested_days", key) or not windows:
        summary = summarise([r["date"] for r in rows], [r.get("temperature_max") for r in rows],
                            [r.get("precipitation") for r in rows])
    else:  # copies the endpoint's summary block (the whole 16-day horizon, station units)
        block = windows[0]["summary"]
        block_units = {"mean_temperature_max": units.get("temperature_2m_max", "°C"),
                       "total_precipitation": units.get("precipitation_sum", "mm")}
        summary = {k: to_metric(u, block[k]) if convert else block[k] for k, u in block_units.items()}
        summary["hottest_day"] = block["hottest_day"]
    return {"latitude": spot["latitude"], "longitude": spot["longitude"], "units": unit_names,
            "daily": rows, "summary": summary}


def solve(run: AgentRun, tools: WeatherTools, task: WeatherTask) -> dict[str, Any]:
    cities: dict[str, Any] = {}
    for place in task.places:
        spot, candidates = _locate(run, tools, place)
        if spot is None:
            continue
        if not run.right("skip_unneeded_calls", place.label):
            for other in [c for c in candidates if c is not spot][:WASTED_FORECASTS]:
                run.ask(tools, f"waste:{place.label}:{other['id']}", "get_forecast", latitude=other["latitude"],
                        longitude=other["longitude"], start_date=task.dates[0], end_date=task.dates[-1])
                run.bump("wasted")
        windows = _forecast(run, tools, spot, task, place.label)
        cities[place.label] = _entry(run, task, spot, windows, place.label)
    draft: dict[str, Any] = {"cities": cities}
    if len(task.places) > 1:
        draft["wettest_city"] = _wettest(cities, run.draws, fix=False)
    return draft


def _wettest(cities: dict[str, Any], draws: Draws, fix: bool) -> str | None:
    """The place with the most precipitation; an unvalidated agent sometimes reads it off wrongly."""
    totals = {k: v["summary"].get("total_precipitation") or 0.0 for k, v in cities.items()}
    return misread(totals, draws, "wettest:slip", fix)


def validate(run: AgentRun, draft: dict[str, Any], task: WeatherTask) -> None:
    """A validating agent re-reads its draft and fixes some defects (never missing data)."""
    resummarise, relabel = run.draws.below("fix:summary", 0.5), run.draws.below("fix:units", 0.4)
    for entry in draft["cities"].values():
        rows = entry["daily"]
        if relabel and any(u != METRIC[k] for k, u in entry["units"].items()):
            for row in rows:
                for var in task.variables:
                    unit = entry["units"].get(UNIT_KEYS[var], "")
                    row[FIELDS[var]] = to_metric(unit, row[FIELDS[var]])
            entry["units"] = {k: METRIC[k] for k in entry["units"]}
        if resummarise:
            entry["summary"] = summarise([r["date"] for r in rows], [r.get("temperature_max") for r in rows],
                                         [r.get("precipitation") for r in rows])
    if "wettest_city" in draft and run.draws.below("fix:wettest", 0.7):
        draft["wettest_city"] = _wettest(draft["cities"], run.draws, fix=True)

