"""The simulated recipe agent: solves a RecipeTask by really calling the tools.

Each named behaviour is drawn right or wrong (AgentRun.right) and a wrong one changes what the
agent does: it stops after one page, re-requests an empty page in a loop, keeps duplicates,
reports the stale total_hint, leaves cups and ounces, drops fields, skips rate-limited calls,
fetches recipes nobody asked for, or never writes the file. Grading then finds the damage.
"""

from __future__ import annotations

from typing import Any

from evaluators.skillcraft.agent import AgentRun
from evaluators.skillcraft.recipe.task import SECTIONS, RecipeTask, recipe_entry
from evaluators.skillcraft.recipe.world import RecipeTools
from evaluators.skillcraft.skill import Cap

WASTED_DETAIL_LIMIT = 10
Listing = tuple[list[str], int | None, int | None]  # (raw ids, total_hint seen, copied item limit)


def _unique(ids: list[str]) -> list[str]:
    return list(dict.fromkeys(ids))


def _collect(run: AgentRun, tools: RecipeTools, by: str, value: str, caps: list[Cap]) -> Listing:
    """Walk one listing. Returns (raw ids, total_hint seen, copied item limit)."""
    key = f"{by}:{value}"
    exact = min((c.n for c in caps if c.unit == "items" and c.mode == "exactly"), default=None)
    at_most = min((c.n for c in caps if c.unit == "items" and c.mode == "at_most"), default=None)
    page_cap = min((c.n for c in caps if c.unit == "pages"), default=None)
    limit = exact if exact is not None else at_most
    paginate = exact is not None or run.right("paginate_to_end", key)
    ids: list[str] = []
    hint: int | None = None
    page, pages_read = 1, 0
    while True:
        res = run.ask(tools, f"{key}:{page}", "search_recipes", by=by, value=value, page=page)
        if res is None:
            break  # a skipped error loses the cursor, and with it the rest of the listing
        pages_read += 1
        hint = res["total_hint"] if hint is None else hint
        if not res["items"]:
            if not run.right("stop_on_empty_page", key):
                run.repeat_until_noticed(tools, key, "search_recipes", by=by, value=value, page=page)
            break
        ids.extend(item["id"] for item in res["items"])
        if (res["next_page"] is None or not paginate or (page_cap is not None and pages_read >= page_cap)
                or (limit is not None and len(set(ids)) >= limit)):
            break
        page = res["next_page"]
    if exact is not None and len(set(ids)) < exact:
        # Told to find more dishes than exist: it keeps re-querying, hoping for more.
        run.repeat_until_noticed(tools, key + ":exact", "search_recipes", by=by, value=value, page=page)
    return ids, hint, limit


def solve(run: AgentRun, tools: RecipeTools, task: RecipeTask) -> dict[str, Any]:
    collected = {(by, value): _collect(run, tools, by, value, run.profile.caps_for(value) if run.loaded else [])
                 for by, value in task.lists}
    return _assemble(run, task, collected, _details(run, tools, task, collected))


def _details(run: AgentRun, tools: RecipeTools, task: RecipeTask,
             collected: dict[tuple[str, str], Listing]) -> list[dict[str, Any]]:
    # The intersection is computed from what the agent collected: incomplete lists miss recipes.
    got = {listing: set(ids) for listing, (ids, _, _) in collected.items()}
    needed = set[str]().union(*(got.get(("category", cat), set()) & got.get(("cuisine", cui), set())
                                for cat, cui in task.details))
    if task.details and not run.right("fetch_required_details"):
        needed = set()
    if not run.right("skip_unneeded_details"):
        first = _unique(collected[task.lists[0]][0])
        for rid in [i for i in first if i not in needed][:WASTED_DETAIL_LIMIT]:
            run.ask(tools, f"get:{rid}", "get_recipe", id=rid)
            run.bump("wasted")
    metric, fill = run.right("normalise_units"), run.right("fill_required_fields")
    found = (run.ask(tools, f"get:{rid}", "get_recipe", id=rid) for rid in sorted(needed))
    return [recipe_entry(tools.world, rec, metric=metric, fill=fill) for rec in found if rec is not None]


def _assemble(run: AgentRun, task: RecipeTask, collected: dict[tuple[str, str], Listing],
              recipes: list[dict[str, Any]]) -> dict[str, Any]:
    dedupe, count_ok = run.right("dedupe_by_id"), run.right("count_per_category")
    draft: dict[str, Any] = {}
    union: set[str] = set()
    listed = 0
    for (by, value), (raw, hint, limit) in collected.items():
        ids = (_unique(raw) if dedupe or limit is not None else list(raw))[:limit]
        union.update(ids)
        listed += len(ids)
        count = len(set(ids)) if count_ok or hint is None or limit is not None else hint
        draft.setdefault(SECTIONS[by], {})[value] = {"count": count, "dish_ids": ids}
    if task.details:
        draft["recipes"] = recipes
    draft["total_unique_dishes"] = len(union) if dedupe else listed
    return draft


def validate(run: AgentRun, draft: dict[str, Any], task: RecipeTask) -> None:
    """A validating agent re-reads its draft and catches some defects (not missing data)."""
    dupes, counts = run.draws.below("fix:dupes", 0.7), run.draws.below("fix:counts", 0.5)
    union: set[str] = set()
    for section in SECTIONS.values():
        for entry in (draft.get(section) or {}).values():
            if dupes:
                entry["dish_ids"] = _unique(entry["dish_ids"])
            if counts:
                entry["count"] = len(set(entry["dish_ids"]))
            union.update(entry["dish_ids"])
    if dupes:
        draft["total_unique_dishes"] = len(union)
    if run.draws.below("fix:fields", 0.7):
        for rec in draft.get("recipes") or []:
            rec.setdefault("cuisine", "Unknown")

