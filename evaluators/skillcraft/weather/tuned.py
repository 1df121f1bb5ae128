"""The tuned reflector's weather vocabulary (`reflector=tuned`): diagnoses keyed to the weather
grader's exact messages and remedies worded for the weather behaviours' concepts; its over-specific
edits copy numbers or names out of `expected`. What every family's vocabulary shares, and why
results with it are an upper reference only: reflectors/vocabulary.py.
"""

from __future__ import annotations

import random
import re
from typing import Any

from evaluators.skillcraft.reflectors import vocabulary as shared
from evaluators.skillcraft.reflectors.vocabulary import Diagnosis, TunedVocabulary
from evaluators.skillcraft.reflectors.vocabulary import pattern as _re

DIAGNOSES: tuple[Diagnosis, ...] = (
    shared.ARTIFACT,
    shared.loop_diagnosis("the agent re-sent a geocode query that found nothing", "geocode",
                          ("accent", "ascii", "spelling", "repeat")),
    Diagnosis("place", "the wrong place with a shared name was picked",
              _re(r"belong to a different place with the same name"), 2.0,
              ("country", "region", "candidate", "ambiguous")),
    Diagnosis("gaps", "days with null values were dropped", _re(r"every missing day has null values"), 2.0,
              ("null", "gap", "drop")),
    Diagnosis("units", "values were left in imperial units", _re(r"in fahrenheit|in inches|in mph"), 2.0,
              ("metric", "convert", "celsius", "unit")),
    Diagnosis("summary", "summaries were copied instead of computed",
              _re(r"summary was not computed"), 2.0, ("summary", "compute")),
    Diagnosis("days", "requested days were missing", _re(r"requested days missing(?!.*null values)"), 1.0,
              ("day", "date", "window")),
    shared.RETRY,
    Diagnosis("wettest", "the wettest place was wrong", _re(r"wettest_city is"), 0.5, ("wettest",)),
    Diagnosis("waste", "forecasts were fetched for places the task did not ask for",
              _re(r"get_forecast call\(s\) fetched places"), 0.7, ("only", "get_forecast")),
)

STEPS: dict[str, tuple[str, ...]] = {
    "artifact": shared.ARTIFACT_STEPS,
    "loop": (
        "Geocode accented names by their plain ASCII spelling (Zurich, not Zürich).",
        "If geocode finds nothing, strip the accents and search again; never repeat the identical query.",
        "Try a different spelling when a place cannot be found.",
        "Be careful with unusual place names.",
    ),
    "place": (
        "Names are ambiguous: choose the geocode candidate whose region and country match the task.",
        "Do not take the first geocoding result blindly; match the country and state.",
        "Make sure you have the right place.",
    ),
    "gaps": (
        "Keep every requested day in the daily list; write null for missing values instead of dropping the day.",
        "Days with gaps stay in the output with null values.",
        "Report every day.",
    ),
    "units": (
        "Convert to metric units: fahrenheit to celsius, inches to mm, mph to km/h.",
        "Check daily_units and convert imperial values to celsius, mm and km/h.",
        "Use the units the task asks for.",
    ),
    "summary": (
        "Compute each summary from the requested days yourself; do not copy the horizon summary block.",
        "Recompute the mean, total and hottest day over the requested range.",
        "Double-check the summary numbers.",
    ),
    "days": (
        "Follow next_start_date window by window until every requested day is covered.",
        "Long ranges need several forecast calls, one per 7-day window.",
        "Make sure no day is missing.",
    ),
    "retry": shared.retry_steps("geocode or forecast call"),
    "wettest": ("Pick wettest_city from the computed total precipitation of each place.",),
    "waste": (
        "Only call get_forecast for the places the task asks for.",
        "Fetch forecasts only for the matched candidate, not for every geocoding result.",
        "Keep the run short.",
    ),
    "validate": shared.validate_steps("every place, day, unit and summary"),
}

PITFALLS: dict[str, tuple[str, ...]] = {
    "artifact": (
        "Printing the JSON in the final message is not enough: the artifact must be written with write_file.",
        "Writing to a different file name counts as no output.",
    ),
    "loop": (
        "The geocoder only knows ASCII names: an accented query returns nothing, however often it is repeated.",
        "Repeating an identical geocode call that returned no results is a loop; change the spelling.",
        "Avoid getting stuck on a place name.",
    ),
    "place": (
        "Several places share a name (Springfield, Portland, Paris): the first candidate is often the wrong one.",
        "Ambiguous names need the country and region from the task.",
        "Places can be confused.",
    ),
    "gaps": (
        "Dropping a day because one value is null fails the days check; keep it with null.",
        "Missing values are null, not a reason to omit the day.",
        "Incomplete days fail.",
    ),
    "units": (
        "US stations report fahrenheit, inches and mph; unconverted values fail the metric units check.",
        "daily_units tells you the units; convert anything that is not celsius, mm or km/h.",
        "Units matter.",
    ),
    "summary": (
        "The summary block in a forecast response covers the whole horizon, not the requested days; recompute it.",
        "Copying the API summary gives wrong means and totals.",
        "Reported numbers are checked.",
    ),
    "days": (
        "A forecast call returns at most 7 days; stopping after the first window drops the rest of the range.",
        "Incomplete date ranges fail.",
    ),
    "retry": (shared.retry_pitfall("a place or a window"), shared.RETRY_BACK_OFF),
    "wettest": ("wettest_city must be the place with the largest total precipitation.",),
    "waste": (
        "Fetching forecasts for every geocoding candidate wastes tokens; only fetch the matched place.",
        "Unnecessary get_forecast calls make the run slow and expensive.",
    ),
    "validate": shared.VALIDATE_PITFALLS,
}

OVERGENERAL: tuple[tuple[str, tuple[str, ...]], ...] = (
    shared.NO_RETRY_RULE,
    ("One get_forecast call per place is enough; never follow next_start_date.", ("next_start_date", "window")),
    shared.SKIP_RATE_LIMITED_RULE,
)

BLOAT = shared.bloat("weather report")

TASK_WORDS: tuple[tuple[str, str], ...] = (
    ("temperature", "temperature"),
    ("precipitation", "precipitation"),
    ("wind", "wind"),
    ("daily", "daily forecasts"),
)


def over_specific(rng: random.Random, records: list[dict[str, Any]]) -> str | None:
    """Copy a number (and the place it belongs to) out of a record's expected output."""
    found: list[tuple[str, dict[str, Any]]] = shared.expected_items(
        records, lambda expected: (expected.get("cities") or {}).items())
    if not found:
        return None
    place, entry = rng.choice(found)
    name = place.split(",")[0]
    summary = entry.get("summary") or {}
    return rng.choice((
        f"For {name}, the mean maximum temperature is {summary.get('mean_temperature_max')}; report exactly that.",
        f"Report exactly {len(entry.get('daily') or [])} days per place.",
        f"For {name}, use latitude {entry.get('latitude')} and longitude {entry.get('longitude')}.",
        f"For {name}, convert units to celsius and mm.",
    ))


def names_in_inputs(raw_inputs: str) -> list[str]:
    places = re.findall(r"Places: ([^\n]+)\.", raw_inputs)
    names = sorted({p.split(",")[0].strip() for line in places for p in line.split(";")})
    return names[:2]


VOCABULARY = TunedVocabulary(
    diagnoses=DIAGNOSES,
    steps=STEPS,
    pitfalls=PITFALLS,
    overgeneral=OVERGENERAL,
    bloat=BLOAT,
    task_words=TASK_WORDS,
    when_templates=(
        "Use for weather and forecast tasks that report {p} for places from the forecast API.",
        "Use whenever a task asks for a weather forecast with {p}, or for a forecast JSON built from the meteo API.",
        "{c} Also use it for weather tasks involving {p}.",
    ),
    description_templates=(
        "Builds daily weather forecast JSON from the geocoding and forecast APIs, covering {p}.",
        "{c} Covers forecasts with {p}.",
        "Collects weather forecasts with {p} and writes a validated forecast JSON file.",
    ),
    default_phrase="temperature, rain and wind",
    over_specific=over_specific,
    names_in_inputs=names_in_inputs,
    names_template=" Especially for {names}.",
)
