"""The recipe family's task: its parser, the ground truth and the rubric.

A case's `metadata["task"]` holds the parameters (lists by category / cuisine / ingredient,
category × cuisine pairs needing full recipes, fault rate, output file); `expected` is the
artifact a flawless agent writes (docs/skillcraft_sim.md §3.2). The rubric: per list count
(critical), ids, unique; per requested recipe present, fields, units (critical) and values;
total_unique_dishes (§5).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from evaluators.skillcraft.concepts import words
from evaluators.skillcraft.family import Check, Task, absent, common, first, part, reading_task, same
from evaluators.skillcraft.recipe.world import RecipeWorld
from gepa_lab import Case

SECTIONS = {"category": "category_dishes", "cuisine": "cuisine_dishes", "ingredient": "ingredient_dishes"}
METRIC_UNITS = frozenset({"g", "ml", "pcs"})
REQUIRED_RECIPE_FIELDS = ("id", "name", "category", "cuisine", "ingredients")


@dataclass(frozen=True)
class RecipeTask(Task):
    lists: tuple[tuple[str, str], ...]  # (by, value), by in SECTIONS
    details: tuple[tuple[str, str], ...]  # (category, cuisine): full recipes for the intersection


def ground_truth(world: RecipeWorld, params: dict[str, Any]) -> dict[str, Any]:
    """The artifact a flawless agent writes (stored as the case's `expected`)."""
    out: dict[str, Any] = {}
    union: set[str] = set()
    for by, value in params["lists"]:
        ids = sorted(world.true_ids(by, value))
        union.update(ids)
        out.setdefault(SECTIONS[by], {})[value] = {"count": len(ids), "dish_ids": ids}
    if params["details"]:
        wanted = set[str]().union(*(set(world.true_ids("category", cat)) & set(world.true_ids("cuisine", cui))
                                    for cat, cui in params["details"]))
        out["recipes"] = [recipe_entry(world, world.recipes[i]) for i in sorted(wanted)]
    out["total_unique_dishes"] = len(union)
    return out


def recipe_entry(world: RecipeWorld, rec: dict[str, Any], metric: bool = True,
                 fill: bool = True) -> dict[str, Any]:
    entry: dict[str, Any] = {"id": rec["id"], "name": rec["name"], "category": rec["category"]}
    if rec["cuisine"] is not None or fill:
        entry["cuisine"] = "Unknown" if rec["cuisine"] is None else rec["cuisine"]
    lines = []
    for ing in rec["ingredients"]:
        if ing["quantity"] is None:
            if fill:
                lines.append({"name": ing["name"], "quantity": None, "unit": None})
            continue
        q, u = world.to_metric(ing["quantity"], ing["unit"]) if metric else (ing["quantity"], ing["unit"])
        lines.append({"name": ing["name"], "quantity": q, "unit": u})
    entry["ingredients"] = lines
    return entry


def parse_task(world: RecipeWorld, case: Case) -> RecipeTask:
    with reading_task(case, "recipe") as params:
        lists = tuple((str(b), str(v)) for b, v in params["lists"])
        details = tuple((str(c), str(u)) for c, u in params.get("details", []))
    for by, value in lists:
        if by not in SECTIONS or world.listing_key(by, value) is None:
            raise ValueError(f"case {case.id!r}: unknown recipe listing {by}:{value}")
    kinds = {b for b, _ in lists} | ({"ingredient", "metric"} if details else set())
    wanted = [w for w in ("category", "cuisine", "ingredient", "metric") if w in kinds]
    entities = {v.lower() for _, v in lists} | {x.lower() for pair in details for x in pair}
    return RecipeTask(**common(case, params, "cookbook.json", lambda: ground_truth(world, params)), lists=lists,
                      details=details, entities=frozenset(entities), task_words=words(" ".join(wanted)))


def entity_names(world: RecipeWorld) -> frozenset[str]:
    return frozenset(k.split(":", 1)[1].lower() for k in world.quirks)


def _grade_list(section: str, value: str, exp: dict[str, Any], got: Any) -> list[Check]:
    where = f"{section}.{value}"
    if not isinstance(got, dict):
        return absent(where, "count! ids")
    ids = [str(i) for i in got.get("dish_ids") or []]
    unique = set(ids)
    missing = [i for i in exp["dish_ids"] if i not in unique]
    extra = sorted(unique - set(exp["dish_ids"]))
    count = got.get("count")
    why = (f"{len(missing)} expected dish ids are missing from the list" if missing
           else "the dish id list is complete, so the count was not computed from the collected ids")
    counted = count == exp["count"]
    checks = [Check(f"{where}.count", counted, True,
                    "" if counted else f"{where}.count is {count}, expected {exp['count']}; {why}")]
    ok = not missing and not extra
    msg = "" if ok else (f"{where}: {len(missing)} of {exp['count']} expected dish ids missing"
                         + (f" (e.g. {first(missing, 4)})" if missing else "")
                         + (f"; unexpected ids {first(extra, 4)}" if extra else ""))
    checks.append(Check(f"{where}.ids", ok, False, msg))
    dupes = sorted({i for i in ids if ids.count(i) > 1}) if len(ids) != len(unique) else []
    checks.append(Check(f"{where}.unique", not dupes, False,
                        f"{where}: duplicate dish ids listed ({first(dupes, 4)})" if dupes else ""))
    return checks


def _grade_recipe(exp: dict[str, Any], got: dict[str, Any] | None) -> list[Check]:
    rid = exp["id"]
    where = f"recipes.{rid}"
    if got is None:
        return absent(where, "present! fields! units! values", f"recipes: recipe {rid} ({exp['name']}) is missing")
    checks = [Check(f"{where}.present", True, True)]
    unset = [f for f in REQUIRED_RECIPE_FIELDS if f not in got]
    lines = part(got, "ingredients", list)
    short = len(exp["ingredients"]) - len(lines)
    problems = ["missing required field(s): " + ", ".join(unset)] if unset else []
    problems += [f"{short} ingredient line(s) dropped (expected {len(exp['ingredients'])}, got {len(lines)})"] * (short > 0)
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
    wrong += got.get("cuisine", exp["cuisine"]) != exp["cuisine"]
    checks.append(Check(f"{where}.values", wrong == 0, False,
                        f"{where}: {wrong} value(s) differ from the metric ground truth" if wrong else ""))
    return checks


def grade(task: RecipeTask, artifact: dict[str, Any]) -> list[Check]:
    """Rubric checks of the written artifact against the ground truth."""
    exp = task.expected
    checks: list[Check] = []
    for by, value in task.lists:
        section = SECTIONS[by]
        checks += _grade_list(section, value, exp[section][value], part(artifact, section, dict).get(value))
    if "recipes" in exp:
        got_recipes = {str(r.get("id")): r for r in artifact.get("recipes") or [] if isinstance(r, dict)}
        for rec in exp["recipes"]:
            checks += _grade_recipe(rec, got_recipes.get(rec["id"]))
    checks.append(same("total_unique_dishes", artifact.get("total_unique_dishes"), exp["total_unique_dishes"]))
    return checks
