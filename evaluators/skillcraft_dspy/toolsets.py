"""The SkillCraft-sim tools as functions a real LM agent calls (`dspy.Tool` reads their names,
docstrings and type hints), with every call recorded the way the simulator records its own.

The family's world and seeded faults are the simulator's (evaluators/skillcraft/<family>/): the
same rate-limited responses hit the real agent under the same seed, so a paired parent / child
comparison meets the same faults. `write_file` and `claim_done` are the generic tools; what the
agent writes is kept for grading.

A family needs one builder here (`TOOLSETS[name](world, task, draws) -> list of functions`);
the family registry has no tool-function interface yet.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from evaluators.skillcraft.family import ToolCall
from evaluators.skillcraft.rng import Draws
from evaluators.skillcraft.tools import ToolReply, claim_done, write_file


@dataclass
class Toolset:
    """One agent run's tools and what happened through them."""

    functions: list[Callable[..., Any]] = field(default_factory=list)
    calls: list[ToolCall] = field(default_factory=list)
    writes: list[tuple[str, str]] = field(default_factory=list)  # (path, content), in order
    claimed: bool = False
    context_tokens: int = 0  # what the results added to the agent's context (the simulator's measure)

    def record(self, tool: str, args: dict[str, Any], reply: ToolReply) -> dict[str, Any]:
        result, status, tokens = reply
        self.calls.append(ToolCall(tool, json.dumps(args, sort_keys=True, separators=(",", ":")), status))
        self.context_tokens += tokens
        return result

    def written(self, path: str) -> str | None:
        """The last content written to `path`, if any."""
        for where, content in reversed(self.writes):
            if where == path:
                return content
        return None


def generic_tools(toolset: Toolset) -> list[Callable[..., Any]]:
    def write_file(path: str, content: str) -> dict:
        """Write `content` (text, e.g. a JSON document) to the file `path`."""
        toolset.writes.append((str(path), str(content)))
        return toolset.record("write_file", {"path": str(path)}, _write(str(path), str(content)))

    def claim_done() -> dict:
        """Declare the task complete, after the output file is written and checked."""
        toolset.claimed = True
        return toolset.record("claim_done", {}, _claim())

    return [write_file, claim_done]


def _write(path: str, content: str) -> ToolReply:
    return write_file(path, content)


def _claim() -> ToolReply:
    return claim_done()


def recipe_tools(world: Any, task: Any, draws: Draws, toolset: Toolset) -> list[Callable[..., Any]]:
    from evaluators.skillcraft.recipe.world import RecipeTools

    api = RecipeTools(world, draws, float(getattr(task, "fault_rate", 0.0)))

    def search_recipes(by: str, value: str, page: int = 1) -> dict:
        """One page (10 items) of the dishes listed by `by` = "category", "cuisine" or
        "ingredient" with the given `value`. Returns {page, items: [{id, name}], next_page,
        total_hint}; next_page is null after the last page. May return {"error": "rate_limited",
        "retry_after_ms": 800}."""
        page = int(page)
        return toolset.record("search_recipes", {"by": by, "page": page, "value": value},
                              api.search_recipes(str(by), str(value), page))

    def get_recipe(id: str) -> dict:  # noqa: A002 (the API's own parameter name)
        """The full recipe with this id: {id, name, category, cuisine, ingredients: [{name,
        quantity, unit}]}. May return {"error": "rate_limited", "retry_after_ms": 800} or
        {"error": "not_found"}."""
        return toolset.record("get_recipe", {"id": str(id)}, api.get_recipe(str(id)))

    return [search_recipes, get_recipe]


def weather_tools(world: Any, task: Any, draws: Draws, toolset: Toolset) -> list[Callable[..., Any]]:
    from evaluators.skillcraft.weather.world import WeatherTools

    api = WeatherTools(world, draws, float(getattr(task, "fault_rate", 0.0)))

    def geocode(name: str) -> dict:
        """Places with this plain (ASCII) name, most populous first: {results: [{id, name, admin1,
        country, latitude, longitude, population}]}. May return {"error": "rate_limited",
        "retry_after_ms": 800}."""
        return toolset.record("geocode", {"name": name}, api.geocode(str(name)))

    def get_forecast(latitude: float, longitude: float, start_date: str, end_date: str) -> dict:
        """Daily forecast at a place's coordinates for start_date..end_date (ISO dates), at most 7
        days per call: {daily_units, daily: {time, temperature_2m_max, temperature_2m_min,
        precipitation_sum, wind_speed_10m_max}, next_start_date, summary}; next_start_date names
        the next window (null when the range is covered). May return {"error": "rate_limited",
        "retry_after_ms": 800} or another {"error": ...}."""
        args = {"end_date": end_date, "latitude": latitude, "longitude": longitude, "start_date": start_date}
        return toolset.record("get_forecast", args,
                              api.get_forecast(float(latitude), float(longitude), str(start_date), str(end_date)))

    return [geocode, get_forecast]


def worldbank_tools(world: Any, task: Any, draws: Draws, toolset: Toolset) -> list[Callable[..., Any]]:
    from evaluators.skillcraft.worldbank.world import WorldBankTools

    api = WorldBankTools(world, draws, float(getattr(task, "fault_rate", 0.0)))

    def get_countries(query: str = "", region: str = "") -> dict:
        """Countries and aggregates whose name contains `query` (any case), optionally in one
        `region` (e.g. "SAS"): {countries: [{id (ISO3), iso2Code, name, region: {id, value},
        incomeLevel: {id, value}}]}; aggregates have region value "Aggregates". May return
        {"error": "rate_limited", "retry_after_ms": 800}."""
        return toolset.record("get_countries", {"query": str(query), "region": str(region)},
                              api.get_countries(str(query), str(region)))

    def get_indicator(country: str, indicator: str, date: str = "", page: int = 1) -> dict:
        """One page of an indicator series: `country` is an ISO3 or ISO2 code (or "all"),
        `indicator` a code such as SP.POP.TOTL, `date` "YYYY" or "YYYY:YYYY" ("" for every year).
        Returns {page, pages, per_page, total, data: [{country, countryiso3code, date, value}]},
        newest year first; value is null where nothing was published. May return {"error":
        "invalid_value", ...} or {"error": "rate_limited", "retry_after_ms": 800}."""
        page = int(page)
        args = {"country": str(country), "date": str(date), "indicator": str(indicator), "page": page}
        return toolset.record("get_indicator", args, api.get_indicator(str(country), str(indicator), str(date), page))

    return [get_countries, get_indicator]


def catfacts_tools(world: Any, task: Any, draws: Draws, toolset: Toolset) -> list[Callable[..., Any]]:
    from evaluators.skillcraft.catfacts.world import CatFactsTools

    api = CatFactsTools(world, draws, float(getattr(task, "fault_rate", 0.0)))

    def get_facts(page: int = 1) -> dict:
        """One page (25 entries) of the cat-facts listing, in order: {current_page, last_page,
        per_page, total, next_page_url, data: [{id, fact, length}]}; next_page_url is null on the
        last page; a fact longer than 200 characters is cut and marked truncated. May return
        {"error": "rate_limited", "retry_after_ms": 800}."""
        page = int(page)
        return toolset.record("get_facts", {"page": page}, api.get_facts(page))

    def get_fact(id: str) -> dict:  # noqa: A002 (the API's own parameter name)
        """One fact, never truncated: {id, fact, length}. May return {"error": "not_found"} or
        {"error": "rate_limited", "retry_after_ms": 800}."""
        return toolset.record("get_fact", {"id": str(id)}, api.get_fact(str(id)))

    def get_random_fact(max_length: int = 0) -> dict:
        """A random fact whose length is at most max_length (0: any): {fact, length}. May
        return {"error": "rate_limited", "retry_after_ms": 800}."""
        max_length = int(max_length)
        return toolset.record("get_random_fact", {"max_length": max_length}, api.get_random_fact(max_length))

    return [get_facts, get_fact, get_random_fact]


def pokemon_tools(world: Any, task: Any, draws: Draws, toolset: Toolset) -> list[Callable[..., Any]]:
    from evaluators.skillcraft.pokemon.world import PokemonTools

    api = PokemonTools(world, draws, float(getattr(task, "fault_rate", 0.0)))

    def get_pokemon(name: str) -> dict:
        """A Pokémon by name: {id, name, species, types: [{slot, type: {name}}], stats:
        [{base_stat, effort, stat: {name}}], past_stats?, height, weight}. May return {"error":
        "not_found"} or {"error": "rate_limited", "retry_after_ms": 800}."""
        return toolset.record("get_pokemon", {"name": str(name)}, api.get_pokemon(str(name)))

    def get_species(name: str) -> dict:
        """A species by name: {id, name, evolution_chain: {id}, evolves_from_species, varieties:
        [{is_default, pokemon: {name}}]}. May return {"error": "not_found"} or {"error":
        "rate_limited", "retry_after_ms": 800}."""
        return toolset.record("get_species", {"name": str(name)}, api.get_species(str(name)))

    def get_evolution_chain(id: int) -> dict:  # noqa: A002 (the API's own parameter name)
        """An evolution chain: {id, chain: {species: {name}, evolves_to: [...]}}, nested. May
        return {"error": "not_found"} or {"error": "rate_limited", "retry_after_ms": 800}."""
        return toolset.record("get_evolution_chain", {"id": int(id)}, api.get_evolution_chain(int(id)))

    def get_type(name: str) -> dict:
        """A type's damage relations: {name, damage_relations: {double_damage_to, half_damage_to,
        no_damage_to, double_damage_from, half_damage_from, no_damage_from}}, each a list of
        {name}. May return {"error": "not_found"} or {"error": "rate_limited", "retry_after_ms": 800}."""
        return toolset.record("get_type", {"name": str(name)}, api.get_type(str(name)))

    return [get_pokemon, get_species, get_evolution_chain, get_type]


TOOLSETS: dict[str, Callable[[Any, Any, Draws, Toolset], list[Callable[..., Any]]]] = {
    "recipe": recipe_tools,
    "weather": weather_tools,
    "worldbank": worldbank_tools,
    "catfacts": catfacts_tools,
    "pokemon": pokemon_tools,
}


def build_toolset(family: str, world: Any, task: Any, draws: Draws) -> Toolset:
    builder = TOOLSETS.get(family)
    if builder is None:
        raise ValueError(f"no dspy toolset for SkillCraft-sim family {family!r} (known: {', '.join(sorted(TOOLSETS))}); "
                         "add one in evaluators/skillcraft_dspy/toolsets.py")
    toolset = Toolset()
    toolset.functions = [*builder(world, task, draws, toolset), *generic_tools(toolset)]
    for fn in toolset.functions:  # the docstring is the tool's description: one clean paragraph
        fn.__doc__ = " ".join((fn.__doc__ or "").split())
    return toolset
