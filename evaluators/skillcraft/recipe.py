"""The recipe family ("recipe-cookbook-builder"): behaviours with cue phrases, the task model,
the task statement, the ground truth and the grading rubric, plus the shipped seed skill and a
hand-written reference skill used for calibration.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from evaluators.skillcraft.families import Behaviour, Check
from evaluators.skillcraft.tools import RecipeWorld
from gepa_lab.core.contracts import Case

SCALE_LEVELS = {"e1": 0, "e2": 1, "e3": 2, "m1": 3, "m2": 4, "h1": 5}
SECTIONS = {"category": "category_dishes", "cuisine": "cuisine_dishes", "ingredient": "ingredient_dishes"}
METRIC_UNITS = frozenset({"g", "ml", "pcs"})
REQUIRED_RECIPE_FIELDS = ("id", "name", "category", "cuisine", "ingredients")

B = Behaviour
BEHAVIOURS: tuple[Behaviour, ...] = (
    B("paginate_to_end", "follow next_page until the listing ends", 0.93, 0.03, 0.999, (
        "every page", "all pages", "each page", "all the pages", "paginat*", "next page", "next_page",
        "follow the cursor", "keep fetching pages", "do not stop after the first page",
        "don't stop after the first page", "not just the first page", "beyond the first page",
        "remaining pages", "page through", "fetch all results", "whole listing", "complete listing",
        "full listing", "until the last page", "later pages",
    ), ("first page is enough", "only the first page", "only read the first page", "one page is enough",
        "skip later pages", "stop after the first page")),
    B("stop_on_empty_page", "stop when a page comes back empty instead of re-requesting it", 0.55, 0.03, 0.997, (
        "empty page", "page is empty", "no items", "zero items", "empty items", "empty result",
        "items list is empty", "items is empty", "returns nothing", "same page twice", "same page again",
        "repeat the same call", "repeated call*", "repeating the same", "identical call*", "loop*",
        "sentinel", "points back", "points to itself", "stop paginating", "break out",
        "never request the same page",
    )),
    B("dedupe_by_id", "keep each dish id once", 0.6, 0.03, 0.997, (
        "dedup*", "de dup*", "duplicate*", "unique id*", "distinct id*", "each id once", "only once",
        "already seen", "already collected", "seen ids", "set of ids", "set of dish ids",
        "repeated dish*", "overlapping pages", "pages overlap", "overlap*",
    )),
    B("count_per_category", "compute counts from the distinct collected ids", 0.55, 0.03, 0.997, (
        "count the distinct", "count distinct", "count the unique", "count unique", "count from the",
        "count the collected", "count the ids", "number of distinct", "number of unique",
        "total_hint", "total hint", "hint is stale", "do not trust the total", "don't trust the total",
        "never trust the total", "recount", "compute the count", "computed count", "count yourself",
        "derive the count", "counts must match", "count must match", "length of the id list",
    ), ("use total_hint as the count", "use the total hint", "trust the total", "report total_hint",
        "report the total hint")),
    B("normalise_units", "convert quantities to g / ml / pcs", 0.35, 0.03, 0.996, (
        "metric", "normalis*", "normaliz*", "convert*", "gram*", "millilit*", "g or ml", "g ml",
        "oz to g", "cups to ml", "cup to ml", "unit conversion", "in g and ml", "g ml or pcs",
    )),
    B("fill_required_fields", "keep every required field, using placeholders for missing values", 0.4, 0.03, 0.996, (
        "required field*", "every field", "all fields", "missing field*", "missing value*", "null",
        "unknown", "to taste", "fill in", "do not omit", "don't omit", "never omit", "never drop",
        "do not drop", "mandatory field*", "missing cuisine", "placeholder*", "schema",
    )),
    B("retry_transient_errors", "retry rate-limited calls instead of skipping them", 0.55, 0.02, 0.997, (
        "retry", "retries", "retrying", "try again", "rate limit*", "rate_limited", "429",
        "back off", "backoff", "transient", "call it again", "re request", "never skip failed",
        "do not skip failed", "don't skip failed",
    ), ("do not retry", "don't retry", "never retry", "no retries", "skip failed", "skip errors",
        "skip any failed", "ignore errors", "ignore failed", "move on after an error",
        "skip rate limited", "skip rate_limited", "without retrying")),
    B("skip_unneeded_details", "fetch full recipes only where the task needs them", 0.6, 0.0, 0.97, (
        "only fetch details", "only fetch full", "only call get_recipe", "details only for",
        "only when details are", "do not fetch details for every", "don't fetch details for every",
        "avoid fetching every", "no need to open every", "unneeded", "unnecessary", "wasted call*",
        "avoid extra calls", "only the requested recipes", "only requested details", "fewer tool calls",
        "minimi* tool calls", "minimi* calls", "extra get_recipe", "every listed dish",
    )),
    B("fetch_required_details", "fetch the recipes whose details the task asks for", 0.985, 0.0, 0.999, (
        "get_recipe for each", "fetch full details", "fetch the details", "details for each requested",
        "open each requested recipe", "get_recipe", "do not fetch details for every",
        "don't fetch details for every", "only fetch details", "only call get_recipe",
        "unless the task asks", "only when the task asks",
    ), ("never call get_recipe", "never fetch details", "skip get_recipe", "skip recipe details",
        "list results are enough", "listing is enough", "listings are enough", "no need for details",
        "avoid get_recipe", "don't fetch details", "do not fetch details", "without fetching details",
        "do not call get_recipe", "don't call get_recipe")),
    B("validate_before_finishing", "check the artifact against the task before finishing", 0.3, 0.02, 0.95, (
        "validat*", "verify", "verifies", "double check", "check the artifact", "check the output",
        "check the json", "re read the", "reread", "before finishing", "before claim_done",
        "before calling claim_done", "sanity check", "cross check", "compare against the task",
        "review the file",
    )),
    B("write_artifact", "write the JSON to the required file with write_file", 0.97, 0.012, 0.999, (
        "write_file", "write the json", "write the result", "write the cookbook", "save the",
        "output file", "requested file", "required file", "artifact", "write it to", "persist",
    )),
)
BEHAVIOUR_NAMES = tuple(b.name for b in BEHAVIOURS)
TRIGGER_WORDS = ("recipe*", "cookbook*", "dish*", "meal*", "food", "cooking")


@dataclass(frozen=True)
class RecipeTask:
    scale: str
    level: int
    lists: tuple[tuple[str, str], ...]  # (by, value), by in SECTIONS
    details: tuple[tuple[str, str], ...]  # (category, cuisine): full recipes for the intersection
    fault_rate: float
    output_file: str
    expected: dict[str, Any]
    entities: frozenset[str]
    task_words: tuple[str, ...]
    task_tokens: int


def task_params(lists: list[tuple[str, str]], details: list[tuple[str, str]], fault_rate: float,
                output_file: str) -> dict[str, Any]:
    return {"lists": [list(x) for x in lists], "details": [list(x) for x in details],
            "fault_rate": fault_rate, "output_file": output_file}


def ground_truth(world: RecipeWorld, params: dict[str, Any]) -> dict[str, Any]:
    """The artifact a flawless agent writes (stored as the case's `expected`)."""
    out: dict[str, Any] = {}
    union: set[str] = set()
    for by, value in params["lists"]:
        ids = sorted(world.true_ids(by, value))
        union.update(ids)
        out.setdefault(SECTIONS[by], {})[value] = {"count": len(ids), "dish_ids": ids}
    if params["details"]:
        wanted: set[str] = set()
        for cat, cui in params["details"]:
            wanted |= set(world.true_ids("category", cat)) & set(world.true_ids("cuisine", cui))
        out["recipes"] = [recipe_entry(world, world.recipes[i]) for i in sorted(wanted)]
    out["total_unique_dishes"] = len(union)
    return out


def recipe_entry(world: RecipeWorld, rec: dict[str, Any], metric: bool = True,
                 fill: bool = True) -> dict[str, Any]:
    entry: dict[str, Any] = {"id": rec["id"], "name": rec["name"], "category": rec["category"]}
    if rec["cuisine"] is not None:
        entry["cuisine"] = rec["cuisine"]
    elif fill:
        entry["cuisine"] = "Unknown"
    lines = []
    for ing in rec["ingredients"]:
        if ing["quantity"] is None:
            if fill:
                lines.append({"name": ing["name"], "quantity": None, "unit": None})
            continue
        if metric:
            q, u = world.to_metric(ing["quantity"], ing["unit"])
        else:
            q, u = ing["quantity"], ing["unit"]
        lines.append({"name": ing["name"], "quantity": q, "unit": u})
    entry["ingredients"] = lines
    return entry


def task_statement(params: dict[str, Any], variant: int) -> str:
    """The task text the agent (and the reflector) reads; `variant` varies the wording."""
    wanted = []
    for by, value in params["lists"]:
        wanted.append({"category": f"the {value} category", "cuisine": f"{value} cuisine",
                       "ingredient": f"dishes that use {value}"}[by])
    opener = [
        "Build a recipe cookbook from the local recipe API.",
        "Using the recipe API tools, assemble a cookbook report.",
        "Prepare a cookbook summary from the offline recipe service.",
    ][variant % 3]
    lines = [
        opener,
        "Tools: search_recipes(by, value, page) returns one page of {id, name} items with next_page "
        "and total_hint; get_recipe(id) returns a full recipe; write_file(path, content); claim_done().",
        "Collect every dish in: " + "; ".join(wanted) + ". For each list report the distinct dish ids "
        "and their count under " + ", ".join(sorted({SECTIONS[b] for b, _ in params["lists"]})) + ".",
    ]
    if params["details"]:
        pairs = " and ".join(f"both {c} and {u}" for c, u in params["details"])
        lines.append(
            f"For the dishes that are {pairs}, add full recipes under \"recipes\" (id, name, category, "
            "cuisine, ingredients with name, quantity, unit), with quantities converted to g, ml or pcs; "
            "use \"Unknown\" for a missing cuisine and null quantity and unit for ingredients listed "
            "without an amount."
        )
    lines.append("Also report total_unique_dishes across all lists.")
    lines.append(f"Write the JSON to {params['output_file']} with write_file, check it, then call claim_done.")
    return "\n".join(lines)


def parse_task(world: RecipeWorld, case: Case) -> RecipeTask:
    meta = case.metadata
    scale = meta.get("scale", "")
    if scale not in SCALE_LEVELS:
        raise ValueError(f"case {case.id!r}: unknown recipe scale {scale!r}")
    try:
        params = json.loads(meta["task"])
        lists = tuple((str(b), str(v)) for b, v in params["lists"])
        details = tuple((str(c), str(u)) for c, u in params.get("details", []))
    except (KeyError, TypeError, ValueError) as exc:
        raise ValueError(f"case {case.id!r}: metadata 'task' is not a recipe task: {exc}") from exc
    for by, value in lists:
        if by not in SECTIONS or world.listing_key(by, value) is None:
            raise ValueError(f"case {case.id!r}: unknown recipe listing {by}:{value}")
    expected = json.loads(case.expected) if case.expected else ground_truth(world, params)
    words = []
    if any(b == "category" for b, _ in lists):
        words.append("categor*")
    if any(b == "cuisine" for b, _ in lists):
        words.append("cuisine*")
    if details or any(b == "ingredient" for b, _ in lists):
        words.append("ingredient*")
    if details:
        words.append("metric")
    entities = {v.lower() for _, v in lists} | {x.lower() for pair in details for x in pair}
    return RecipeTask(
        scale=scale, level=SCALE_LEVELS[scale], lists=lists, details=details,
        fault_rate=float(params.get("fault_rate", 0.0)),
        output_file=str(params.get("output_file", "cookbook.json")), expected=expected,
        entities=frozenset(entities), task_words=tuple(words), task_tokens=len(case.input) // 4,
    )


def entity_names(world: RecipeWorld) -> frozenset[str]:
    return frozenset(k.split(":", 1)[1].lower() for k in world.quirks)


def _fmt_ids(ids: list[str]) -> str:
    return ", ".join(ids[:4]) + (", …" if len(ids) > 4 else "")


def _grade_list(section: str, value: str, exp: dict[str, Any], got: Any) -> list[Check]:
    where = f"{section}.{value}"
    if not isinstance(got, dict):
        msg = f"{where}: missing from the artifact"
        return [Check(f"{where}.count", False, True, msg), Check(f"{where}.ids", False, False, "")]
    ids = [str(i) for i in got.get("dish_ids") or []]
    unique = set(ids)
    missing = [i for i in exp["dish_ids"] if i not in unique]
    extra = sorted(unique - set(exp["dish_ids"]))
    count = got.get("count")
    checks = []
    if count == exp["count"]:
        checks.append(Check(f"{where}.count", True, True))
    elif missing:
        checks.append(Check(f"{where}.count", False, True, f"{where}.count is {count}, expected "
                            f"{exp['count']}; {len(missing)} expected dish ids are missing from the list"))
    else:
        checks.append(Check(f"{where}.count", False, True, f"{where}.count is {count}, expected "
                            f"{exp['count']}; the dish id list is complete, so the count was not "
                            "computed from the collected ids"))
    ok = not missing and not extra
    msg = "" if ok else (f"{where}: {len(missing)} of {exp['count']} expected dish ids missing"
                         + (f" (e.g. {_fmt_ids(missing)})" if missing else "")
                         + (f"; unexpected ids {_fmt_ids(extra)}" if extra else ""))
    checks.append(Check(f"{where}.ids", ok, False, msg))
    dupes = sorted({i for i in ids if ids.count(i) > 1}) if len(ids) != len(unique) else []
    checks.append(Check(f"{where}.unique", not dupes, False,
                        f"{where}: duplicate dish ids listed ({_fmt_ids(dupes)})" if dupes else ""))
    return checks


def _grade_recipe(exp: dict[str, Any], got: dict[str, Any] | None) -> list[Check]:
    rid = exp["id"]
    where = f"recipes.{rid}"
    if got is None:
        msg = f"recipes: recipe {rid} ({exp['name']}) is missing"
        return [Check(f"{where}.present", False, True, msg), Check(f"{where}.fields", False, True, ""),
                Check(f"{where}.units", False, True, ""), Check(f"{where}.values", False, False, "")]
    checks = [Check(f"{where}.present", True, True)]
    absent = [f for f in REQUIRED_RECIPE_FIELDS if f not in got]
    lines = got.get("ingredients") if isinstance(got.get("ingredients"), list) else []
    short = len(exp["ingredients"]) - len(lines)
    problems = []
    if absent:
        problems.append("missing required field(s): " + ", ".join(absent))
    if short > 0:
        problems.append(f"{short} ingredient line(s) dropped (expected {len(exp['ingredients'])}, got {len(lines)})")
    checks.append(Check(f"{where}.fields", not problems, True, f"{where}: " + "; ".join(problems) if problems else ""))
    bad_units = sorted({str(x.get("unit")) for x in lines if isinstance(x, dict)
                        and x.get("unit") is not None and x.get("unit") not in METRIC_UNITS})
    checks.append(Check(f"{where}.units", not bad_units, True,
                        f"{where}: non-metric unit(s) {', '.join(bad_units)}; quantities must be in g, ml or pcs"
                        if bad_units else ""))
    got_q = {x.get("name"): x.get("quantity") for x in lines if isinstance(x, dict)}
    wrong = 0
    for line in exp["ingredients"]:
        q = got_q.get(line["name"], "absent")
        if q == "absent":
            continue  # already reported by the fields check
        if line["quantity"] is None:
            wrong += q is not None
        elif not isinstance(q, (int, float)) or abs(q - line["quantity"]) > 0.01 * line["quantity"] + 1e-9:
            wrong += 1
    if got.get("cuisine", exp["cuisine"]) != exp["cuisine"]:
        wrong += 1
    checks.append(Check(f"{where}.values", wrong == 0, False,
                        f"{where}: {wrong} value(s) differ from the metric ground truth" if wrong else ""))
    return checks


def grade(task: RecipeTask, artifact: dict[str, Any] | None) -> list[Check]:
    """Rubric checks of the written artifact against the ground truth."""
    if artifact is None:
        return [Check("artifact", False, True, f"no artifact: {task.output_file} was not written")]
    exp = task.expected
    checks: list[Check] = []
    for by, value in task.lists:
        section = SECTIONS[by]
        got = artifact.get(section)
        got_list = got.get(value) if isinstance(got, dict) else None
        checks += _grade_list(section, value, exp[section][value], got_list)
    if "recipes" in exp:
        got_recipes = {str(r.get("id")): r for r in artifact.get("recipes") or [] if isinstance(r, dict)}
        for rec in exp["recipes"]:
            checks += _grade_recipe(rec, got_recipes.get(rec["id"]))
    total = artifact.get("total_unique_dishes")
    checks.append(Check("total_unique_dishes", total == exp["total_unique_dishes"], False,
                        f"total_unique_dishes is {total}, expected {exp['total_unique_dishes']}"))
    return checks


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
