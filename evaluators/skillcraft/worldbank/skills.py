"""The worldbank family's shipped seed skill and the hand-written reference skill (calibration
only: it instructs every behaviour and stays short)."""

from __future__ import annotations

from typing import Any

SEED_SKILL: dict[str, Any] = {
    "kind": "skill",
    "name": "worldbank-indicator-reporter",
    "description": "Looks up World Bank indicators for countries and writes how they changed as a JSON file.",
    "when_to_use": "Use for World Bank tasks that ask how an indicator changed for a country.",
    "steps": [
        "Read the task and note the countries, the indicators and the years it asks for.",
        "Call get_indicator for each country and indicator, with the task's years as the date filter.",
        "Compute the change and the percent change from the start year to the end year.",
        "Write the JSON to the requested output file with write_file, then call claim_done.",
    ],
    "pitfalls": ["If a call returns rate_limited, wait and retry it."],
}

# Hand-written "good" skill: instructs every behaviour, stays short. Used only for calibration.
REFERENCE_SKILL: dict[str, Any] = {
    "kind": "skill",
    "name": "worldbank-indicator-reporter",
    "description": "Builds World Bank indicator reports from the indicators API: population, GDP, GDP per "
                   "capita and life expectancy per country, their change between two years, and rankings.",
    "when_to_use": "Use for World Bank and development indicator tasks that compare countries' population, GDP "
                   "or life expectancy between years, or rank countries by an indicator.",
    "steps": [
        "Look up each country's ISO3 code with get_countries; never guess a code from the name.",
        "Request only the task's years with the date filter, and read every page until page equals pages.",
        "Rows come newest first: sort them by year before taking the start and the end.",
        "Skip missing values: if a boundary year is null, use the nearest year of the range that has a value.",
        "Report values in the unit the task asks for: persons in millions, US$ in billions.",
        "When ranking countries, exclude aggregates (World, regions, income groups).",
        "Write the JSON to the requested output file with write_file, validate it against the task, then call "
        "claim_done.",
    ],
    "pitfalls": ["If a call returns rate_limited, wait and retry it instead of skipping it."],
}
