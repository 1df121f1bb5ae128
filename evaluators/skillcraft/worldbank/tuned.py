"""The tuned reflector's worldbank vocabulary (`reflector=tuned`): diagnoses keyed to the worldbank
grader's exact messages and remedies worded for the worldbank behaviours' concepts.

Co-designed with the simulator on purpose — it is the upper reference, not evidence (docs/
skillcraft_sim.md §8). Some remedies are vague and do nothing, a few are over-general rules that
hurt other cases, and over-specific edits copy numbers or names out of `expected`.
"""

from __future__ import annotations

import json
import random
import re
from typing import Any

from evaluators.skillcraft.reflectors.vocabulary import Diagnosis, TunedVocabulary
from evaluators.skillcraft.reflectors.vocabulary import pattern as _re

DIAGNOSES: tuple[Diagnosis, ...] = (
    Diagnosis("artifact", "no output file was written", _re(r"missing artifact|no artifact"), 3.0,
              ("write_file", "write the", "save")),
    Diagnosis("loop", "the agent re-sent an invalid country code",
              _re(r"get_indicator \{[^}]*\} ×(?:[4-9]|\d\d)|tool-call limit"), 3.0, ("code", "iso3", "guess")),
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
    Diagnosis("retry", "rate-limited calls were skipped instead of retried", _re(r"[1-9]\d* not retried"), 1.5,
              ("retry", "rate_limited", "rate limit")),
    Diagnosis("largest", "the largest change was wrong", _re(r"largest_percent_change is"), 0.5, ("largest",)),
    Diagnosis("waste", "whole series were fetched", _re(r"get_indicator quer\(ies\) fetched years"), 0.7,
              ("date", "only")),
)

STEPS: dict[str, tuple[str, ...]] = {
    "artifact": (
        "Always write the final JSON to the requested output file with write_file before claim_done.",
        "Save the result to the exact file name the task gives, using write_file.",
        "Finish by producing the output the task asks for.",
    ),
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
    "retry": (
        "If a call returns rate_limited, wait and retry it (up to 3 times) instead of skipping it.",
        "Retry transient errors; never skip a failed page.",
        "Handle tool errors carefully.",
    ),
    "largest": ("Pick largest_percent_change from the computed percent changes.",),
    "waste": (
        "Request only the task's years with the date filter (start:end).",
        "Use a date filter; do not fetch whole series.",
        "Keep the run short.",
    ),
    "validate": (
        "Before finishing, validate the JSON against the task: every country, indicator, year and unit.",
        "Re-read the output and check it against the task statement before calling claim_done.",
    ),
}

PITFALLS: dict[str, tuple[str, ...]] = {
    "artifact": ("Printing the JSON in the final message is not enough: write it with write_file.",),
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
    "retry": ("Skipping a rate_limited call silently drops a page: retry it.",),
    "largest": ("largest_percent_change must be the country with the largest percent change.",),
    "waste": ("Whole series need several pages; a date filter saves calls.",),
    "validate": ("Finishing without checking the output against the task lets small mistakes through.",),
}

OVERGENERAL: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("Do not retry failed calls; move on to keep the run short.", ("retry", "rate")),
    ("Do not paginate; the first page of each series is enough.", ("page",)),
    ("Skip rate_limited calls instead of waiting.", ("retry", "rate")),
)

BLOAT: tuple[str, ...] = (
    "Before every tool call, restate the whole task in your own words, enumerate all of its "
    "requirements one by one, re-derive the complete plan from scratch and explain in detail why "
    "this particular call is necessary, so that nothing is ever overlooked at any point of the run.",
    "Throughout the run, maintain a detailed running commentary of your reasoning, noting every "
    "assumption, every intermediate result, every alternative you considered and why you rejected "
    "it, and summarise all of this in full after each step so the reasoning is transparent.",
    "Be thorough, careful and methodical at all times: consider edge cases, think about what could "
    "go wrong with each action, reflect on the quality of your work so far, and keep the overall "
    "goal of producing an excellent, complete and correct indicator report firmly in mind.",
    "Remember that quality matters more than speed, that the user expects a professional result, "
    "and that every part of the task deserves the same level of attention, care and scrutiny "
    "regardless of how simple or routine it may appear at first glance.",
)

TASK_WORDS: tuple[tuple[str, str], ...] = (
    ("population", "population"),
    ("gdp", "GDP"),
    ("life expectancy", "life expectancy"),
    ("highest", "rankings of countries"),
)


def over_specific(rng: random.Random, records: list[dict[str, Any]]) -> str | None:
    """Copy a number (and the country it belongs to) out of a record's expected output."""
    found: list[tuple[str, dict[str, Any]]] = []
    for rec in records:
        try:
            expected = json.loads(str(rec.get("expected", "")))
            for block in (expected.get("indicators") or {}).values():
                found += list((block.get("countries") or {}).items())
        except (ValueError, TypeError, AttributeError):
            continue
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
