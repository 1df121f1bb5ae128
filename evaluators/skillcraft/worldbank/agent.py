"""The simulated worldbank agent: solves a WorldBankTask by really calling the tools.

Each named behaviour is drawn right or wrong (AgentRun.right) and a wrong one changes what the
agent does: it guesses a country's code from its name (an invalid guess is re-sent in a loop, a
valid one may be another country's), reads only the first page of a series, takes the API's
newest-first order as start-to-end, keeps a null boundary value instead of the nearest year with
data, leaves persons and US$ unscaled, counts aggregates as countries, skips rate-limited calls,
fetches the whole series instead of the requested years, or never writes the file. Grading then
finds the damage.
"""

from __future__ import annotations

from typing import Any

from evaluators.skillcraft.agent import AgentRun, misread
from evaluators.skillcraft.concepts import fold
from evaluators.skillcraft.worldbank.task import WorldBankTask, percent_changes, series_entry, top_entries
from evaluators.skillcraft.worldbank.world import UNITS, WorldBankTools, WorldBankWorld


def guess_code(name: str) -> str:
    """What an agent that does not look codes up sends: the first three letters of the name."""
    return "".join(c for c in fold(name).upper() if c.isalpha())[:3]


def _lookup(run: AgentRun, tools: WorldBankTools, name: str) -> str | None:
    res = run.ask(tools, f"cty:{name}", "get_countries", query=name, region="")
    if not res or not res["countries"]:
        return None  # a skipped rate limit: the country is lost
    exact = [c for c in res["countries"] if fold(c["name"]) == fold(name)]
    return str((exact or res["countries"])[0]["id"])


def _pages(run: AgentRun, tools: WorldBankTools, country: str, indicator: str, date: str,
           paginate: bool) -> tuple[list[dict[str, Any]], bool]:
    """Rows of one query, page by page. Returns (rows, invalid code)."""
    rows: list[dict[str, Any]] = []
    page = 1
    while True:
        res = run.ask(tools, f"ind:{country}:{indicator}:{date}:{page}", "get_indicator", country=country,
                      indicator=indicator, date=date, page=page)
        if res is None:
            return rows, run.calls[-1].status == "error"  # invalid, or a skipped rate limit
        rows += res["data"]
        if page >= res["pages"] or not paginate:
            return rows, False
        page += 1


def _entry(run: AgentRun, task: WorldBankTask, indicator: str, code: str, rows: list[dict[str, Any]],
           key: str) -> dict[str, Any]:
    in_range = [r for r in rows if task.start_year <= int(r["date"]) <= task.end_year]
    if run.right("order_years", key):
        in_range.sort(key=lambda r: int(r["date"]))  # else the API's order: newest first
    if run.right("skip_missing_values", key):
        in_range = [r for r in in_range if r["value"] is not None] or in_range
    # No year of the range (with a value): every field null.
    points: list[tuple[int | None, Any]] = [(int(r["date"]), r["value"]) for r in in_range] or [(None, None)]
    return series_entry(indicator, code, points, run.right("scale_units", indicator))


def _top(run: AgentRun, tools: WorldBankTools, world: WorldBankWorld, task: WorldBankTask) -> dict[str, Any]:
    top = task.top
    assert top is not None
    rows, _ = _pages(run, tools, "all", top.indicator, str(top.year), run.right("paginate_to_end", "top"))
    pairs = [(str(r["countryiso3code"]), r["value"]) for r in rows if r["value"] is not None]
    if run.right("exclude_aggregates", "top"):
        listing = run.ask(tools, "cty:*", "get_countries", query="", region="")
        if listing is not None:  # a skipped listing: it cannot tell aggregates apart
            aggregates = {c["id"] for c in listing["countries"] if c["region"]["value"] == "Aggregates"}
            pairs = [p for p in pairs if p[0] not in aggregates]
    return {"indicator": top.indicator, "year": top.year,
            "countries": top_entries(world, top.indicator, pairs, top.n, run.right("scale_units", top.indicator))}


def solve(run: AgentRun, tools: WorldBankTools, task: WorldBankTask) -> dict[str, Any]:
    blocks: dict[str, dict[str, Any]] = {i: {} for i in task.indicators}
    for name in task.countries:
        _country(run, tools, task, name, blocks)
    draft: dict[str, Any] = {"indicators": {}}
    for indicator, countries in blocks.items():
        raw = not run.right("scale_units", indicator) and UNITS[indicator][1] != 1  # persons, US$ left unscaled
        block: dict[str, Any] = {"unit": tools.world.indicators[indicator]["unit"] if raw else UNITS[indicator][0],
                                 "countries": countries}
        if len(task.countries) > 1:
            block["largest_percent_change"] = misread(percent_changes(countries), run.draws,
                                                      f"largest:slip:{indicator}", fix=False)
        draft["indicators"][indicator] = block
    if task.top is not None:
        draft["top"] = _top(run, tools, tools.world, task)
    return draft


def _country(run: AgentRun, tools: WorldBankTools, task: WorldBankTask, name: str,
             blocks: dict[str, dict[str, Any]]) -> None:
    """Every indicator of one country, into `blocks`."""
    guessed = not run.right("look_up_country_codes", name)
    code = guess_code(name) if guessed else _lookup(run, tools, name)
    for indicator in task.indicators:
        if code is None:
            return
        key = f"{name}:{indicator}"
        if not (date := f"{task.start_year}:{task.end_year}" if run.right("skip_unneeded_calls", key) else ""):
            run.bump("wasted")
        paginate = run.right("paginate_to_end", key)
        rows, invalid = _pages(run, tools, code, indicator, date, paginate)
        if invalid and guessed:
            # The loop: the same invalid code re-sent until noticed, then looked up.
            run.repeat_until_noticed(tools, name, "get_indicator", country=code, indicator=indicator, date=date, page=1)
            code = _lookup(run, tools, name)
            if code is None:
                return
            rows, invalid = _pages(run, tools, code, indicator, date, paginate)
        guessed = False
        if not invalid:
            blocks[indicator][name] = _entry(run, task, indicator, code, rows, key)


def validate(run: AgentRun, draft: dict[str, Any], task: WorldBankTask) -> None:
    """A validating agent re-reads its draft and fixes some defects (never missing data)."""
    reorder, rescale = run.draws.below("fix:order", 0.7), run.draws.below("fix:units", 0.6)
    for indicator, block in draft["indicators"].items():
        divisor = UNITS[indicator][1]
        raw = block["unit"] != UNITS[indicator][0]
        for entry in block["countries"].values():
            points = [(entry["start_year"], entry["start_value"]), (entry["end_year"], entry["end_value"])]
            if reorder and None not in (points[0][0], points[1][0]) and points[0][0] > points[1][0]:
                points.reverse()
            entry.update(series_entry(indicator, entry["iso3"], points, rescale and raw and divisor > 1))
        if rescale and raw:
            block["unit"] = UNITS[indicator][0]
        if "largest_percent_change" in block and run.draws.below(f"fix:largest:{indicator}", 0.7):
            block["largest_percent_change"] = misread(percent_changes(block["countries"]), run.draws,
                                                      f"largest:slip:{indicator}", fix=True)

