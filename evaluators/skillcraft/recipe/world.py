"""The recipe family's world and tools: plain functions over the fixtures with real API contracts
(the generic tools contract is evaluators/skillcraft/tools.py).

`search_recipes(by, value, page)` is paginated (10 per page) with per-listing quirks:
overlapping pages, an empty sentinel page whose `next_page` points at itself, and a stale
`total_hint`. `get_recipe(id)` returns ingredient lines in mixed units with missing values.
Every call may fail transiently with `rate_limited`, decided by a seeded draw keyed by
(tool, arguments, attempt) — not by call order — so paired runs see the same faults.
"""

from __future__ import annotations

import math
from typing import Any

from evaluators.skillcraft.tools import Api, ToolReply, or_not_found, rate_limited


def listing_members(recipes: list[dict[str, Any]]) -> dict[str, list[str]]:
    """listing key ("category:Dessert") -> member recipe ids in id order."""
    out: dict[str, list[str]] = {}
    for r in sorted(recipes, key=lambda r: r["id"]):
        out.setdefault(f"category:{r['category']}", []).append(r["id"])
        if r["cuisine"]:
            out.setdefault(f"cuisine:{r['cuisine']}", []).append(r["id"])
        for ing in {i["name"] for i in r["ingredients"]}:
            out.setdefault(f"ingredient:{ing}", []).append(r["id"])
    return out


class RecipeWorld:
    """Fixtures loaded once per evaluator; pages are pre-built (tools stay O(1))."""

    def __init__(self, data: dict[str, Any]) -> None:
        self.page_size = int(data["page_size"])
        self.recipes: dict[str, dict[str, Any]] = {r["id"]: r for r in data["recipes"]}
        self.members = listing_members(data["recipes"])  # "category:Dessert" -> ids
        self.quirks: dict[str, dict[str, Any]] = data["listings"]
        self.units = {u: (v["metric"], float(v["factor"])) for u, v in data["units"].items()}
        self.keys = {k.lower(): k for k in self.quirks}  # lower-case "by:value" -> canonical key
        self.pages = {key: self._build_pages(key) for key in self.quirks}

    def _build_pages(self, key: str) -> list[dict[str, Any]]:
        ids = self.members[key]
        q = self.quirks[key]
        n = max(1, math.ceil(len(ids) / self.page_size))
        hint = len(ids) + int(q["hint_delta"])
        pages = []
        for p in range(1, n + 1):
            start = (p - 1) * self.page_size - (1 if q["overlap"] and p > 1 else 0)
            chunk = ids[start : p * self.page_size]
            nxt = p + 1 if p < n or q["sentinel"] else None
            pages.append({"page": p, "items": [{"id": i, "name": self.recipes[i]["name"]} for i in chunk],
                          "next_page": nxt, "total_hint": hint})
        if q["sentinel"]:  # the loop trap: empty, and the cursor points back at itself
            pages.append({"page": n + 1, "items": [], "next_page": n + 1, "total_hint": hint})
        return pages

    def listing_key(self, by: str, value: str) -> str | None:
        return self.keys.get(f"{by}:{value}".lower())

    def true_ids(self, by: str, value: str) -> list[str]:
        key = self.listing_key(by, value)
        return list(self.members[key]) if key else []

    def to_metric(self, quantity: float | None, unit: str | None) -> tuple[float | None, str | None]:
        if quantity is None or unit is None:
            return None, None
        metric, factor = self.units[unit]
        return round(quantity * factor, 1), metric


class RecipeTools(Api[RecipeWorld]):
    """One agent run's view of the API (seeded faults + attempt counters)."""

    def search_recipes(self, by: str, value: str, page: int) -> ToolReply:
        """(result, status, result_tokens)."""
        if self.fault(f"search:{by}:{value}:{page}"):
            return rate_limited()
        key = self.world.listing_key(by, value)
        pages = self.world.pages.get(key, []) if key else []
        result = pages[page - 1] if 1 <= page <= len(pages) else {"page": page, "items": [], "next_page": None,
                                                                   "total_hint": 0}
        return result, "ok" if result["items"] else "empty", 25 + 14 * len(result["items"])

    def get_recipe(self, id: str) -> ToolReply:  # noqa: A002 (the tool's parameter name)
        return self.serve(f"get:{id}", lambda: or_not_found(self.world.recipes.get(id),
                                                            lambda r: 40 + 16 * len(r["ingredients"])))


World, Tools = RecipeWorld, RecipeTools  # the family's hooks (family.HOOKS)
