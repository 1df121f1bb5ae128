"""The weather family's world and tools: an Open-Meteo-like geocoder and daily forecast endpoint
over the fixtures, with real contracts (the generic tools contract is evaluators/skillcraft/tools.py).

- `geocode(name)` -> `{results: [{id, name, admin1, country, latitude, longitude, population}]}`,
  exact (case-insensitive) match on the plain ASCII spelling, most populous first. A query with
  accented letters matches nothing (`results: []`, status `empty`): the index is ASCII only.
- `get_forecast(latitude, longitude, start_date, end_date)` -> `{latitude, longitude, daily_units,
  daily: {time, temperature_2m_max, temperature_2m_min, precipitation_sum, wind_speed_10m_max},
  next_start_date, summary}`: at most 7 days per call (`next_start_date` names the next window,
  null when the range is covered); values in the station's units (US stations: °F, inch, mph);
  nulls where the station has no data; `summary` always covers the station's whole 16-day
  horizon, whatever range was asked.
Every call may fail with `rate_limited` at the case's fault rate (seeded, paired).
"""

from __future__ import annotations

from datetime import date, timedelta
from typing import Any

from evaluators.skillcraft.family import tables
from evaluators.skillcraft.tools import Api, ToolReply, rate_limited

# variable -> the quantity its unit measures -> the unit, metric or (some stations) imperial (family.yaml)
UNIT_KEYS, METRIC, IMPERIAL = (tables("weather")[k] for k in ("unit_keys", "metric", "imperial"))


_TO_METRIC = {"°F": lambda v: round((v - 32) * 5 / 9, 1), "inch": lambda v: round(v * 25.4, 1),
              "mph": lambda v: round(v * 1.609344, 1)}
_TO_IMPERIAL = {"°F": lambda v: round(v * 9 / 5 + 32, 1), "inch": lambda v: round(v / 25.4, 3),
                "mph": lambda v: round(v / 1.609344, 1)}


def to_imperial(variable: str, value: float | None) -> float | None:
    return value if value is None else _TO_IMPERIAL[IMPERIAL[UNIT_KEYS[variable]]](value)


def to_metric(unit: str, value: float | None) -> float | None:
    return value if value is None or unit not in _TO_METRIC else _TO_METRIC[unit](value)


def summarise(dates: list[str], tmax: list[float | None], precip: list[float | None]) -> dict[str, Any]:
    """Mean of the daily maxima, total precipitation and the hottest day (nulls left out)."""
    days = [(d, t) for d, t in zip(dates, tmax, strict=True) if t is not None]
    rain = [p for p in precip if p is not None]
    hottest = max(days, key=lambda x: x[1], default=None)  # the earliest day wins a tie
    return {
        "mean_temperature_max": round(sum(t for _, t in days) / len(days), 1) if days else None,
        "total_precipitation": round(sum(rain), 1),
        "hottest_day": hottest[0] if hottest else None,
    }


class WeatherWorld:
    def __init__(self, data: dict[str, Any]) -> None:
        self.dates = list(data["dates"])
        self.window_days = int(data["window_days"])
        self.cities: dict[int, dict[str, Any]] = {int(c["id"]): c for c in data["cities"]}
        self.index: dict[str, list[int]] = {}  # lower-case ascii name -> city ids, most populous first
        for c in sorted(self.cities.values(), key=lambda c: (-c["population"], c["id"])):
            self.index.setdefault(c["ascii_name"].lower(), []).append(int(c["id"]))
        self.by_coords = {(c["latitude"], c["longitude"]): int(c["id"]) for c in self.cities.values()}
        self.horizon: dict[int, dict[str, Any]] = {}  # the (stale) summary block, in station units
        for cid, c in self.cities.items():
            s = summarise(self.dates, c["daily"]["temperature_2m_max"], c["daily"]["precipitation_sum"])
            if c["units"] == "imperial":
                s.update(mean_temperature_max=to_imperial("temperature_2m_max", s["mean_temperature_max"]),
                         total_precipitation=to_imperial("precipitation_sum", s["total_precipitation"]))
            self.horizon[cid] = {"period": f"{self.dates[0]}/{self.dates[-1]}", **s}

    def place(self, city_id: int) -> dict[str, Any]:
        c = self.cities[city_id]
        return {k: c[k] for k in ("id", "name", "admin1", "country", "latitude", "longitude", "population")}

    def find(self, name: str, admin1: str, country: str) -> int | None:
        """The city a task names (by its display name, region and country)."""
        return next((int(c["id"]) for c in self.cities.values()
                     if (c["name"], c["admin1"], c["country"]) == (name, admin1, country)), None)


class WeatherTools(Api[WeatherWorld]):
    """One agent run's view of the API (seeded faults + attempt counters)."""

    def geocode(self, name: str) -> ToolReply:
        if self.fault(f"geocode:{name}"):
            return rate_limited()
        ids = self.world.index.get(name.lower(), []) if name.isascii() else []
        results = [self.world.place(i) for i in ids[:10]]
        return {"results": results}, "ok" if results else "empty", 20 + 18 * len(results)

    def get_forecast(self, latitude: float, longitude: float, start_date: str, end_date: str) -> ToolReply:
        if self.fault(f"forecast:{latitude}:{longitude}:{start_date}:{end_date}"):
            return rate_limited()
        cid = self.world.by_coords.get((latitude, longitude))
        dates = self.world.dates
        if cid is None:
            return {"error": "no_station", "reason": "no forecast station at these coordinates"}, "error", 20
        if start_date not in dates or end_date not in dates or end_date < start_date:
            return {"error": "out_of_range", "reason": f"dates must lie within {dates[0]}..{dates[-1]}"}, "error", 20
        first = dates.index(start_date)
        last = min(dates.index(end_date), first + self.world.window_days - 1)
        city = self.world.cities[cid]
        imperial = city["units"] == "imperial"
        daily: dict[str, list[Any]] = {"time": dates[first:last + 1]}
        for var, values in city["daily"].items():
            chunk = values[first:last + 1]
            daily[var] = [to_imperial(var, v) for v in chunk] if imperial else list(chunk)
        nxt = (date.fromisoformat(dates[last]) + timedelta(days=1)).isoformat() if dates[last] < end_date else None
        result = {
            "latitude": latitude, "longitude": longitude,
            "daily_units": {v: (IMPERIAL if imperial else METRIC)[k] for v, k in UNIT_KEYS.items()},
            "daily": daily, "next_start_date": nxt, "summary": dict(self.world.horizon[cid]),
        }
        return result, "ok", 60 + 9 * len(daily["time"]) * 4


World, Tools = WeatherWorld, WeatherTools  # the family's hooks (family.HOOKS)
