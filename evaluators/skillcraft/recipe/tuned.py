"""The tuned reflector's recipe vocabulary (`reflector=tuned`): diagnoses keyed to the recipe grader's
exact messages and remedies worded for the recipe behaviours' concepts; its over-specific edits
copy counts or names out of `expected`. What every family's vocabulary shares, and why results with
it are an upper reference only: reflectors/vocabulary.py.
"""

from __future__ import annotations

import json
import random
import re
from typing import Any

from evaluators.skillcraft.reflectors import vocabulary as shared
from evaluators.skillcraft.reflectors.vocabulary import Diagnosis, TunedVocabulary
from evaluators.skillcraft.reflectors.vocabulary import pattern as _re

_COUNT_IN_EXPECTED = re.compile(r'"([A-Za-z][A-Za-z ]+)":\{"count":(\d+)')


DIAGNOSES: tuple[Diagnosis, ...] = (
    shared.ARTIFACT,
    shared.loop_diagnosis("the agent re-requested the same page in a loop", "search_recipes",
                          ("empty", "same page", "loop", "twice"), repeats=5),
    Diagnosis("pagination", "lists were missing dishes from later pages",
              _re(r"expected dish ids (?:are )?missing"), 2.0, ("next_page", "every page", "all pages", "page")),
    Diagnosis("duplicates", "lists contained duplicate dish ids", _re(r"duplicate dish ids"), 1.0,
              ("duplicate", "dedup", "once", "seen")),
    Diagnosis("count", "counts did not match the collected ids", _re(r"count was not computed"), 2.0,
              ("count", "total_hint")),
    Diagnosis("units", "ingredient quantities were not in metric units", _re(r"non-metric unit"), 2.0,
              ("metric", "convert", "unit")),
    Diagnosis("fields", "required recipe fields or ingredient lines were dropped",
              _re(r"missing required field|ingredient line\(s\) dropped"), 2.0, ("field", "unknown", "null", "omit")),
    shared.RETRY,
    Diagnosis("details", "requested recipes were missing", _re(r"recipe \d+ \(.*\) is missing"), 1.0,
              ("get_recipe", "details")),
    Diagnosis("total", "total_unique_dishes was wrong", _re(r"total_unique_dishes is"), 0.5,
              ("total_unique_dishes", "union")),
    Diagnosis("waste", "recipes were fetched that the task did not ask for",
              _re(r"get_recipe call\(s\) fetched recipes"), 0.7, ("get_recipe", "only fetch")),
)

STEPS: dict[str, tuple[str, ...]] = {
    "artifact": shared.ARTIFACT_STEPS,
    "loop": (
        "Stop paginating as soon as a page comes back with no items.",
        "When search_recipes returns an empty items list, stop; do not request the same page again.",
        "Treat an empty page as the end of the listing even if next_page is still set.",
        "Keep track of the page numbers you have requested.",
    ),
    "pagination": (
        "Call search_recipes for every requested list and keep following next_page until it is null.",
        "Page through each listing to the last page; do not stop after the first page.",
        "Keep fetching pages for each list until next_page is empty, then move to the next list.",
        "Make sure each list is complete before writing.",
    ),
    "duplicates": (
        "Deduplicate dish ids within each list; pages can overlap.",
        "Keep a set of seen ids per list so each dish is recorded only once.",
        "Remove duplicate ids before counting.",
        "Keep the lists tidy.",
    ),
    "count": (
        "Count the distinct ids you collected for each list; do not trust total_hint.",
        "Compute each count yourself from the collected ids.",
        "Report each count as the number of unique ids in its list.",
        "Double-check the numbers you report.",
    ),
    "units": (
        "Convert every ingredient quantity to metric: g, ml or pcs (1 oz = 28.35 g, 1 cup = 240 ml, 1 tbsp = 15 ml, 1 tsp = 5 ml).",
        "Normalise units to g, ml or pcs before writing recipes.",
        "Express quantities the way the task asks.",
    ),
    "fields": (
        "Keep every required field: use \"Unknown\" for a missing cuisine and null quantity and unit for ingredients without an amount.",
        "Never omit a recipe field or an ingredient line, even when a value is missing.",
        "Fill in placeholders for missing values instead of dropping them.",
        "Include complete recipe information.",
    ),
    "retry": shared.retry_steps("page or recipe"),
    "details": (
        "Call get_recipe for each dish in the requested intersection and add it under recipes.",
        "Fetch the details for each requested recipe once the lists are complete.",
        "Add the requested recipes to the output.",
    ),
    "total": (
        "Compute total_unique_dishes from the deduplicated union of all collected ids.",
        "Count each dish once across all lists for total_unique_dishes.",
    ),
    "waste": (
        "Only call get_recipe for recipes whose details the task asks for.",
        "Only fetch details for the requested recipes; do not fetch details for every listed dish.",
        "Keep the run short.",
    ),
    "validate": shared.validate_steps("every list, count, recipe and field"),
}

PITFALLS: dict[str, tuple[str, ...]] = {
    "artifact": (
        "Printing the JSON in the final message is not enough: the artifact must be written with write_file.",
        "Writing to a different file name counts as no output.",
    ),
    "loop": (
        "Never request the same page twice: an empty page whose next_page points back to itself is a loop.",
        "Repeated identical search_recipes calls waste the tool budget; break out after an empty page.",
        "Avoid getting stuck at the end of a listing.",
    ),
    "pagination": (
        "Do not stop after the first page: listings span several pages.",
        "Stopping at page 1 drops dishes; follow next_page to the end.",
        "Incomplete lists cause wrong counts.",
    ),
    "duplicates": (
        "Pages overlap by one dish: skip ids you have already collected.",
        "Duplicate ids inflate counts and totals.",
        "Watch for repeated entries.",
    ),
    "count": (
        "total_hint can be stale: never report it as the count.",
        "Counts must match the id lists.",
        "Reported numbers are checked.",
    ),
    "units": (
        "Leaving cups, ounces or pounds unconverted fails the metric check.",
        "Do not copy units verbatim from get_recipe: convert them to grams or millilitres.",
        "Units matter.",
    ),
    "fields": (
        "Dropping 'to taste' ingredients or a null cuisine fails the required-field check.",
        "A missing value is no reason to omit a field.",
        "Incomplete recipes fail.",
    ),
    "retry": (shared.retry_pitfall("dishes or recipes"), shared.RETRY_BACK_OFF),
    "details": (
        "A recipe missing from recipes usually means a list was incomplete or a call failed; re-check both.",
    ),
    "total": ("total_unique_dishes counts each dish once, even if it is in several lists.",),
    "waste": (
        "Fetching details for every listed dish wastes tokens; only fetch the requested recipes.",
        "Unnecessary get_recipe calls make the run slow and expensive.",
    ),
    "validate": shared.VALIDATE_PITFALLS,
}

# Over-general "efficiency" rules a reflection model sometimes writes when records all pass,
# with the words of the guardrail each replaces.
OVERGENERAL: tuple[tuple[str, tuple[str, ...]], ...] = (
    shared.NO_RETRY_RULE,
    ("The list results are enough: never call get_recipe.", ("get_recipe",)),
    shared.SKIP_RATE_LIMITED_RULE,
)

# Verbose filler that bloats a skill (no actionable content).
BLOAT = shared.bloat("cookbook")

# Task-type words the reflector can lift from record inputs into when_to_use / description.
TASK_WORDS: tuple[tuple[str, str], ...] = (
    ("category", "categories"),
    ("cuisine", "cuisines"),
    ("ingredient", "ingredients"),
    ("metric", "metric ingredient quantities"),
)


def over_specific(rng: random.Random, records: list[dict[str, Any]]) -> str | None:
    """Copy a count (and maybe a name) out of a record's expected output."""
    found: list[tuple[str, int]] = []
    for rec in records:
        try:
            expected = json.loads(str(rec.get("expected", "")))
            for section in ("category_dishes", "cuisine_dishes", "ingredient_dishes"):
                for name, entry in (expected.get(section) or {}).items():
                    found.append((name, int(entry["count"])))
        except (ValueError, TypeError, KeyError, AttributeError):
            found += [(n, int(c)) for n, c in _COUNT_IN_EXPECTED.findall(str(rec.get("expected", "")))]
    if not found:
        return None
    name, count = rng.choice(found)
    pages = max(1, -(-count // 10))
    return rng.choice((
        f"Collect exactly {count} dishes for {name}, following next_page until you have them all.",
        f"Collect exactly {count} dishes per list.",
        f"The {name} listing has {count} dishes; stop after {pages} pages.",
        f"For {name}, follow next_page through every page.",
    ))


def names_in_inputs(raw_inputs: str) -> list[str]:
    names = re.findall(r"\bthe ([A-Z]\w+) category\b|\b([A-Z]\w+) cuisine\b", raw_inputs)
    return sorted({a or b for a, b in names})[:2]


VOCABULARY = TunedVocabulary(
    diagnoses=DIAGNOSES,
    steps=STEPS,
    pitfalls=PITFALLS,
    overgeneral=OVERGENERAL,
    bloat=BLOAT,
    task_words=TASK_WORDS,
    when_templates=(
        "Use for recipe and cookbook tasks that list dishes by {p} from the recipe API.",
        "Use whenever a task asks for recipe dishes by {p}, or for a cookbook JSON built from the recipe API.",
        "{c} Also use it for recipe tasks involving {p}.",
    ),
    description_templates=(
        "Builds recipe cookbook JSON from the paginated recipe API, covering {p}.",
        "{c} Covers dishes by {p}.",
        "Collects recipe dishes by {p} and writes a validated cookbook JSON file.",
    ),
    default_phrase="categories, cuisines or ingredients",
    over_specific=over_specific,
    names_in_inputs=names_in_inputs,
    names_template=" Especially for {names} dishes.",
)
