"""The weather family's shipped seed skill and the hand-written reference skill (calibration only:
it instructs every behaviour and stays short)."""

from __future__ import annotations

from typing import Any

SEED_SKILL: dict[str, Any] = {
    "kind": "skill",
    "name": "weather-forecast-reporter",
    "description": "Looks up places and writes their daily weather forecast as a JSON file.",
    "when_to_use": "Use for weather tasks that ask for a forecast or rain for a city.",
    "steps": [
        "Read the task and note the places and the dates it asks for.",
        "Call geocode for each place and take its latitude and longitude.",
        "Call get_forecast with those coordinates and record the daily values for the dates.",
        "Write the JSON to the requested output file with write_file, then call claim_done.",
    ],
    "pitfalls": ["If a call returns rate_limited, wait and retry it."],
}

# Hand-written "good" skill: instructs every behaviour, stays short. Used only for calibration.
REFERENCE_SKILL: dict[str, Any] = {
    "kind": "skill",
    "name": "weather-forecast-reporter",
    "description": "Builds daily weather forecast JSON from the geocoding and forecast APIs: temperature, "
                   "rain and wind per place in metric units, with summaries over the requested dates.",
    "when_to_use": "Use for weather and forecast tasks that ask for daily temperature, precipitation or wind "
                   "for one or more places over a date range.",
    "steps": [
        "Geocode each place by its plain ASCII spelling without accents; never repeat a query that found nothing.",
        "Names are ambiguous: pick the candidate whose region and country match the task, not simply the first.",
        "A forecast call covers at most 7 days: follow next_start_date window by window until the whole range is covered.",
        "Convert units to metric: fahrenheit to celsius, inches to mm, mph to km/h.",
        "Keep days with null values in the daily list; never drop a day with a gap.",
        "Compute each summary yourself from the requested days; ignore the horizon summary block.",
        "Only call get_forecast for the places the task asks for.",
        "Write the JSON to the requested output file with write_file, validate it against the task, then call claim_done.",
    ],
    "pitfalls": ["If a call returns rate_limited, wait and retry it instead of skipping it."],
}
