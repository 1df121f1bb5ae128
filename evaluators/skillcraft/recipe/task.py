"""The recipe family's task model: the task statement, its parser and the ground truth.

A case's `metadata["task"]` holds the parameters (lists by category / cuisine / ingredient,
category × cuisine pairs needing full recipes, fault rate, output file); `expected` is the
artifact a flawless agent writes (docs/skillcraft_sim.md §3.3).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from evaluators.skillcraft.concepts import words
from evaluators.skillcraft.family import expected_of, finish_instruction, reading_task, scale_level
from evaluators.skillcraft.recipe.world import RecipeWorld
from gepa_lab.core.contracts import Case

SECTIONS = {"category": "category_dishes", "cuisine": "cuisine_dishes", "ingredient": "ingredient_dishes"}
METRIC_UNITS = frozenset({"g", "ml", "pcs"})
REQUIRED_RECIPE_FIELDS = ("id", "name", "category", "cuisine", "ingredients")


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
    task_words: frozenset[str]  # stems a relevant description names (categories, cuisines, ...)
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
    lines.append(finish_instruction(params["output_file"]))
    return "\n".join(lines)


def parse_task(world: RecipeWorld, case: Case) -> RecipeTask:
    scale, level = scale_level(case, "recipe")
    with reading_task(case, "recipe") as params:
        lists = tuple((str(b), str(v)) for b, v in params["lists"])
        details = tuple((str(c), str(u)) for c, u in params.get("details", []))
    for by, value in lists:
        if by not in SECTIONS or world.listing_key(by, value) is None:
            raise ValueError(f"case {case.id!r}: unknown recipe listing {by}:{value}")
    expected = expected_of(case, lambda: ground_truth(world, params))
    wanted = []
    if any(b == "category" for b, _ in lists):
        wanted.append("category")
    if any(b == "cuisine" for b, _ in lists):
        wanted.append("cuisine")
    if details or any(b == "ingredient" for b, _ in lists):
        wanted.append("ingredient")
    if details:
        wanted.append("metric")
    entities = {v.lower() for _, v in lists} | {x.lower() for pair in details for x in pair}
    return RecipeTask(
        scale=scale, level=level, lists=lists, details=details,
        fault_rate=float(params.get("fault_rate", 0.0)),
        output_file=str(params.get("output_file", "cookbook.json")), expected=expected,
        entities=frozenset(entities), task_words=words(" ".join(wanted)), task_tokens=len(case.input) // 4,
    )


def entity_names(world: RecipeWorld) -> frozenset[str]:
    return frozenset(k.split(":", 1)[1].lower() for k in world.quirks)
