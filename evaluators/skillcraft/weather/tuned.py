"""The tuned reflector's weather vocabulary (`reflector=tuned`): diagnoses keyed to the weather
grader's exact messages and remedies worded for the weather behaviours' concepts.

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
    Diagnosis("loop", "the agent re-sent a geocode query that found nothing",
              _re(r"geocode \{[^}]*\} ×(?:[4-9]|\d\d)|tool-call limit"), 3.0,
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
    Diagnosis("retry", "rate-limited calls were skipped instead of retried", _re(r"[1-9]\d* not retried"), 1.5,
              ("retry", "rate_limited", "rate limit")),
    Diagnosis("wettest", "the wettest place was wrong", _re(r"wettest_city is"), 0.5, ("wettest",)),
    Diagnosis("waste", "forecasts were fetched for places the task did not ask for",
              _re(r"get_forecast call\(s\) fetched places"), 0.7, ("only", "get_forecast")),
)

STEPS: dict[str, tuple[str, ...]] = {
    "artifact": (
        "Always write the final JSON to the requested output file with write_file before claim_done.",
        "Save the result to the exact file name the task gives, using write_file.",
        "Finish by producing the output the task asks for.",
    ),
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
    "retry": (
        "If a call returns rate_limited, wait and retry it (up to 3 times) instead of skipping it.",
        "Retry transient errors; never skip a failed geocode or forecast call.",
        "Handle tool errors carefully.",
    ),
    "wettest": ("Pick wettest_city from the computed total precipitation of each place.",),
    "waste": (
        "Only call get_forecast for the places the task asks for.",
        "Fetch forecasts only for the matched candidate, not for every geocoding result.",
        "Keep the run short.",
    ),
    "validate": (
        "Before finishing, validate the JSON against the task: every place, day, unit and summary.",
        "Re-read the output and check it against the task statement before calling claim_done.",
    ),
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
    "retry": (
        "Skipping a rate_limited call silently drops a place or a window: retry it.",
        "Rate limits are transient: back off and call it again.",
    ),
    "wettest": ("wettest_city must be the place with the largest total precipitation.",),
    "waste": (
        "Fetching forecasts for every geocoding candidate wastes tokens; only fetch the matched place.",
        "Unnecessary get_forecast calls make the run slow and expensive.",
    ),
    "validate": ("Finishing without checking the output against the task lets small mistakes through.",),
}

OVERGENERAL: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("Do not retry failed calls; move on to keep the run short.", ("retry", "rate")),
    ("One get_forecast call per place is enough; never follow next_start_date.", ("next_start_date", "window")),
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
    "goal of producing an excellent, complete and correct weather report firmly in mind.",
    "Remember that quality matters more than speed, that the user expects a professional result, "
    "and that every part of the task deserves the same level of attention, care and scrutiny "
    "regardless of how simple or routine it may appear at first glance.",
)

TASK_WORDS: tuple[tuple[str, str], ...] = (
    ("temperature", "temperature"),
    ("precipitation", "precipitation"),
    ("wind", "wind"),
    ("daily", "daily forecasts"),
)


def over_specific(rng: random.Random, records: list[dict[str, Any]]) -> str | None:
    """Copy a number (and the place it belongs to) out of a record's expected output."""
    found: list[tuple[str, dict[str, Any]]] = []
    for rec in records:
        try:
            expected = json.loads(str(rec.get("expected", "")))
            for place, entry in (expected.get("cities") or {}).items():
                found.append((place, entry))
        except (ValueError, TypeError, AttributeError):
            continue
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
