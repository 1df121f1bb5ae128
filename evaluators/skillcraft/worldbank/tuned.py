"""The tuned reflector's worldbank vocabulary (`reflector=tuned`): diagnoses keyed to the worldbank
grader's exact messages and remedies worded for the worldbank behaviours' concepts; its
over-specific edits copy numbers or names out of `expected`. What every family's vocabulary shares,
and why results with it are an upper reference only: reflectors/vocabulary.py.
"""

from __future__ import annotations

import random
import re
from collections.abc import Iterator
from typing import Any

from evaluators.skillcraft.reflectors import vocabulary as shared
from evaluators.skillcraft.reflectors.vocabulary import Diagnosis, TunedVocabulary
from evaluators.skillcraft.reflectors.vocabulary import pattern as _re

DIAGNOSES: tuple[Diagnosis, ...] = (
    shared.ARTIFACT,
    shared.loop_diagnosis("the agent re-sent an invalid country code", "get_indicator",
                          ("code", "iso3", "guess")),
    Diagnosis("country", "a series belonged to another country", _re(r"the series is for country code"), 2.0,
              ("code", "iso3", "get_countries")),
    Diagnosis("order", "start and end were swapped", _re(r"wrong order"), 2.0, ("order", "sort", "newest")),
    Diagnosis("missing", "a null boundary value was kept", _re(r"nearest year with a value"), 2.0,
              ("missing", "null", "nearest")),
    Diagnosis("pages", "later pages were not read", _re(r"later pages of the series"), 1.5, ("page", "pages")),
    Diagnosis("units", "values were left in raw units", _re(r"values are in (?:persons|current US\$)"), 2.0,
              ("million", "billion", "unit")),
    Diagnosis("aggregates", "aggregates were ranked as countries", _re(r"lists aggregates"), 2.0,
              ("aggregate", "region")),
    shared.RETRY,
    Diagnosis("largest", "the largest change was wrong", _re(r"largest_percent_change is"), 0.5, ("largest",)),
    Diagnosis("waste", "whole series were fetched", _re(r"get_indicator quer\(ies\) fetched years"), 0.7,
              ("date", "only")),
)

STEPS: dict[str, tuple[str, ...]] = {
    "artifact": shared.ARTIFACT_STEPS,
    "loop": (
        "Look up every country's ISO3 code with get_countries before asking for data; never guess it.",
        "If get_indicator says a code is invalid, search the country instead of repeating the identical call.",
        "Be careful with country codes.",
    ),
    "country": (
        "Take each country's ISO3 code from get_countries (Austria is AUT, not AUS).",
        "Never build a code from the first letters of the name; look it up.",
        "Make sure you have the right country.",
    ),
    "order": (
        "Rows come newest first: sort them by year before picking the start and the end.",
        "The start is the earliest year, the end the latest; sort the rows chronologically.",
        "Check the years.",
    ),
    "missing": (
        "Skip missing values: when a boundary year is null, use the nearest year of the range that has a value.",
        "Use the earliest and latest years with a value; null years do not count.",
        "Handle gaps.",
    ),
    "pages": (
        "Read every page of a series until page equals pages.",
        "Follow the pages to the last one; page 1 holds only the newest years.",
        "Make sure no year is missing.",
    ),
    "units": (
        "Report population in millions and GDP in billions: divide the raw values.",
        "Convert persons to millions and US$ to billions before reporting.",
        "Use the units the task asks for.",
    ),
    "aggregates": (
        "When ranking countries, exclude aggregates (region Aggregates: World, income groups, regions).",
        "Leave World, regions and income groups out of a ranking of countries.",
        "Rank only real countries.",
    ),
    "retry": shared.retry_steps("page"),
    "largest": ("Pick largest_percent_change from the computed percent changes.",),
    "waste": (
        "Request only the task's years with the date filter (start:end).",
        "Use a date filter; do not fetch whole series.",
        "Keep the run short.",
    ),
    "validate": shared.validate_steps("every country, indicator, year and unit"),
}

PITFALLS: dict[str, tuple[str, ...]] = {
    "artifact": shared.ARTIFACT_PITFALLS,
    "loop": (
        "A guessed code (GER, SPA, JAP) is invalid; repeating the identical call returns the same error.",
        "Avoid getting stuck on a country code.",
    ),
    "country": (
        "Three-letter guesses can be another country's code: AUS is Australia, BEL is Belgium.",
        "Countries can be confused.",
    ),
    "order": ("The API lists the newest year first; taking the first row as the start swaps start and end.",),
    "missing": ("A null boundary value is not a value: the nearest year with data replaces it.",),
    "pages": ("Ten rows per page: stopping after page 1 drops the earliest years.",),
    "units": ("Raw values are persons and US$; unscaled values fail the unit check.",),
    "aggregates": ("The all-countries listing starts with aggregates that dwarf every country.",),
    "retry": (shared.retry_pitfall("a page"),),
    "largest": ("largest_percent_change must be the country with the largest percent change.",),
    "waste": ("Whole series need several pages; a date filter saves calls.",),
    "validate": shared.VALIDATE_PITFALLS,
}

OVERGENERAL: tuple[tuple[str, tuple[str, ...]], ...] = (
    shared.NO_RETRY_RULE,
    ("Do not paginate; the first page of each series is enough.", ("page",)),
    shared.SKIP_RATE_LIMITED_RULE,
)

BLOAT = shared.bloat("indicator report")

TASK_WORDS: tuple[tuple[str, str], ...] = (
    ("population", "population"),
    ("gdp", "GDP"),
    ("life expectancy", "life expectancy"),
    ("highest", "rankings of countries"),
)


def _countries(expected: Any) -> Iterator[tuple[str, dict[str, Any]]]:
    for block in (expected.get("indicators") or {}).values():
        yield from (block.get("countries") or {}).items()


def over_specific(rng: random.Random, records: list[dict[str, Any]]) -> str | None:
    """Copy a number (and the country it belongs to) out of a record's expected output."""
    found: list[tuple[str, dict[str, Any]]] = shared.expected_items(records, _countries)
    if not found:
        return None
    name, entry = rng.choice(found)
    return rng.choice((
        f"For {name}, the change is exactly {entry.get('change')}; report exactly that.",
        f"For {name}, use {entry.get('start_year')} as the start year.",
        f"For {name}, use the ISO3 code {entry.get('iso3')}.",
    ))


def names_in_inputs(raw_inputs: str) -> list[str]:
    lines = re.findall(r"Countries: ([^\n]+)\.", raw_inputs)
    return sorted({n.strip() for line in lines for n in line.split(";")})[:2]


VOCABULARY = TunedVocabulary(
    diagnoses=DIAGNOSES,
    steps=STEPS,
    pitfalls=PITFALLS,
    overgeneral=OVERGENERAL,
    bloat=BLOAT,
    task_words=TASK_WORDS,
    when_templates=(
        "Use for World Bank indicator tasks that report {p} changes for countries.",
        "Use whenever a task asks how {p} changed between years, from the World Bank indicators API.",
        "{c} Also use it for World Bank tasks involving {p}.",
    ),
    description_templates=(
        "Builds World Bank indicator change reports covering {p}.",
        "{c} Covers {p}.",
        "Collects World Bank development indicators ({p}) and writes a validated change report.",
    ),
    default_phrase="population, GDP and life expectancy",
    over_specific=over_specific,
    names_in_inputs=names_in_inputs,
    names_template=" Especially for {names}.",
)
