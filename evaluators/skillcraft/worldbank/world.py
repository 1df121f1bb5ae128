"""The worldbank family's world and tools: a World-Bank-Indicators-like API over the fixtures, with
real contracts (the generic tools contract is evaluators/skillcraft/tools.py).

- `get_countries(query, region)` -> `{page, pages, per_page, total, countries: [{id, iso2Code, name,
  region: {id, value}, incomeLevel: {id, value}}]}`: a case-insensitive substring search over the
  names (accents folded); aggregates (World, High income, South Asia, ...) are listed too, with
  region "Aggregates", as the real country list mixes them in.
- `get_indicator(country, indicator, date, page)` -> `{page, pages, per_page, total, lastupdated,
  data: [{indicator: {id, value}, country: {id, value}, countryiso3code, date, value, unit,
  obs_status, decimal}]}`: `country` is an ISO3 or ISO2 code (or "all": every country and
  aggregate, aggregates first); `date` is "YYYY", "YYYY:YYYY" or "" (the whole 1995-2023 series).
  Rows come **newest first**, 10 per page (50 for "all"); `value` is null where nothing was
  published; values are in the indicator's raw unit (persons, current US$, years). An unknown
  code gives `{"error": "invalid_value", ...}` (status `error`), a page past the end `data: []`.
Every call may fail with `rate_limited` at the case's fault rate (seeded, paired).
"""

from __future__ import annotations

import math
from typing import Any

from evaluators.skillcraft.concepts import fold
from evaluators.skillcraft.family import memo, tables
from evaluators.skillcraft.tools import Api, ToolReply

ROW_TOKENS = 20
# indicator -> (unit a task asks for, divisor of the raw value, decimals, task words), from family.yaml; the
# raw unit is the fixtures' (WorldBankWorld.indicators)
UNITS: dict[str, tuple[str, float, int, str]] = {k: tuple(v) for k, v in tables("worldbank")["units"].items()}


def _invalid(parameter: str, value: str) -> ToolReply:
    return ({"error": "invalid_value", "message": "The provided parameter value is not valid",
             "parameter": parameter, "value": value}, "error", 30)


class WorldBankWorld:
    def __init__(self, data: dict[str, Any]) -> None:
        self.years = tuple(range(int(data["first_year"]), int(data["last_year"]) + 1))
        self.per_page, self.per_page_all = int(data["per_page"]), int(data["per_page_all"])
        self.lastupdated = str(data["lastupdated"])
        self.indicators: dict[str, dict[str, Any]] = dict(data["indicators"])
        # iso3 -> country or aggregate (with its series)
        self.entries: dict[str, dict[str, Any]] = {c["id"]: c for c in data["countries"]}
        # upper-case iso3 / iso2 -> iso3
        self.codes: dict[str, str] = {k.upper(): c["id"] for c in self.entries.values() for k in (c["id"], c["iso2Code"])}
        self.by_name = {fold(c["name"]): c["id"] for c in self.entries.values()}  # folded name -> iso3
        self.aggregates = frozenset(c["id"] for c in self.entries.values() if c["region"]["value"] == "Aggregates")
        # what get_countries returns per entry, in name order, and the folded names in the same order
        self.listing = [{k: c[k] for k in ("id", "iso2Code", "name", "region", "incomeLevel")}
                        for c in sorted(self.entries.values(), key=lambda c: c["name"])]
        self.folded = [fold(c["name"]) for c in self.listing]
        self.names = {c["id"]: c["name"] for c in self.entries.values()}  # iso3 -> name
        # iso3 order of the "all" query: aggregates first, then by name
        self.all_order = [c["id"] for c in sorted(self.entries.values(),
                                                  key=lambda c: (c["id"] not in self.aggregates, c["name"]))]
        # Replies are pure functions of the arguments: built once, shared (never mutated).
        self.cache: dict[tuple[Any, ...], ToolReply] = {}

    def countries(self) -> list[str]:
        """iso3 codes of the real countries (no aggregates), in name order."""
        return [c["id"] for c in self.listing if c["id"] not in self.aggregates]

    def value(self, iso3: str, indicator: str, year: int) -> float | None:
        v: float | None = self.entries[iso3]["series"][indicator][year - self.years[0]]
        return v

    def row(self, iso3: str, indicator: str, year: int) -> dict[str, Any]:
        c = self.entries[iso3]
        return {"indicator": {"id": indicator, "value": self.indicators[indicator]["name"]},
                "country": {"id": c["iso2Code"], "value": c["name"]}, "countryiso3code": iso3,
                "date": str(year), "value": self.value(iso3, indicator, year), "unit": "", "obs_status": "",
                "decimal": self.indicators[indicator]["decimal"]}

    def parse_date(self, date: str) -> tuple[int, int] | None:
        """(first, last) year of a date filter, or None when it is malformed or out of range."""
        if not date:
            return self.years[0], self.years[-1]
        parts = date.split(":")
        if len(parts) > 2 or not all(p.isdigit() and len(p) == 4 for p in parts):
            return None
        first, last = int(parts[0]), int(parts[-1])
        return (first, last) if self.years[0] <= first <= last <= self.years[-1] else None


class WorldBankTools(Api[WorldBankWorld]):
    """One agent run's view of the API (seeded faults + attempt counters)."""

    def get_countries(self, query: str = "", region: str = "") -> ToolReply:
        return self.serve(f"countries:{query}:{region}", lambda: memo(
            self.world.cache, ("countries", query, region), lambda: self._countries(query, region)))

    def _countries(self, query: str, region: str) -> ToolReply:
        w, q = self.world, fold(query)
        found = [c for c, name in zip(w.listing, w.folded, strict=True)
                 if q in name and (not region or c["region"]["id"] == region.upper())]
        result = {"page": 1, "pages": 1, "per_page": 300, "total": len(found), "countries": found}
        return result, "ok" if found else "empty", 20 + 16 * len(found)

    def get_indicator(self, country: str, indicator: str, date: str = "", page: int = 1) -> ToolReply:
        return self.serve(f"indicator:{country}:{indicator}:{date}:{page}", lambda: memo(self.world.cache, (
            "indicator", country, indicator, date, page), lambda: self._indicator(country, indicator, date, page)))

    def _indicator(self, country: str, indicator: str, date: str, page: int) -> ToolReply:
        w = self.world
        code = str(country).upper()
        if code != "ALL" and code not in w.codes:
            return _invalid("country", country)
        if indicator not in w.indicators:
            return _invalid("indicator", indicator)
        span = w.parse_date(date)
        if span is None:
            return _invalid("date", date)
        years = range(span[1], span[0] - 1, -1)  # newest first
        keys = [(iso3, y) for y in years for iso3 in (w.all_order if code == "ALL" else [w.codes[code]])]
        size = w.per_page_all if code == "ALL" else w.per_page
        pages = max(1, math.ceil(len(keys) / size))
        chunk = keys[(page - 1) * size: page * size] if page >= 1 else []
        result = {"page": page, "pages": pages, "per_page": size, "total": len(keys), "lastupdated": w.lastupdated,
                  "data": [w.row(iso3, indicator, y) for iso3, y in chunk]}
        return result, "ok" if chunk else "empty", 30 + ROW_TOKENS * len(chunk)


World, Tools = WorldBankWorld, WorldBankTools  # the family's hooks (family.HOOKS)
