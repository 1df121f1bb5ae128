"""The recipe family's shipped seed skill and the hand-written reference skill (calibration only:
it instructs every behaviour and stays short)."""

from __future__ import annotations

from typing import Any

SEED_SKILL: dict[str, Any] = {
    "kind": "skill",
    "name": "recipe-cookbook-builder",
    "description": "Collects dishes from the recipe API and writes a cookbook JSON file.",
    "when_to_use": "Use for recipe tasks that ask for the dishes of a category.",
    "steps": [
        "Read the task and note which lists it asks for.",
        "Call search_recipes for each list and follow next_page to collect every page.",
        "Record the dish ids and a count for each list.",
        "Write the JSON to the requested output file with write_file, then call claim_done.",
    ],
    "pitfalls": ["If a call returns rate_limited, wait and retry it."],
}

# Hand-written "good" skill: instructs every behaviour, stays short. Used only for calibration.
REFERENCE_SKILL: dict[str, Any] = {
    "kind": "skill",
    "name": "recipe-cookbook-builder",
    "description": "Builds recipe cookbook JSON from the paginated recipe API: dishes per category, "
                   "cuisine or ingredient, full recipes with metric ingredient quantities.",
    "when_to_use": "Use for recipe and cookbook tasks that list dishes by category, cuisine or "
                   "ingredient, or need full recipes with ingredients in metric units.",
    "steps": [
        "For each requested list call search_recipes and follow next_page through every page.",
        "Stop paginating as soon as a page returns no items; never request the same page twice.",
        "Deduplicate dish ids: pages overlap, keep each id once.",
        "Count the distinct ids you collected; do not trust total_hint.",
        "Call get_recipe only for the recipes the task asks for; do not fetch details for every dish.",
        "Convert quantities to metric (g, ml or pcs); keep every required field, using Unknown or null for missing values.",
        "Write the JSON to the requested output file with write_file, validate it against the task, then call claim_done.",
    ],
    "pitfalls": ["If a call returns rate_limited, wait and retry it instead of skipping it."],
}
