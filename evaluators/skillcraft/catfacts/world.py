"""The catfacts family's world and tools: a catfact.ninja-like API over the fixtures, with real
contracts (the generic tools contract is evaluators/skillcraft/tools.py).

- `get_facts(page)` -> `{current_page, last_page, per_page, total, next_page_url, data: [{id, fact,
  length}]}`: 25 entries per page, in listing order; `total` counts entries, repeats included;
  `fact` may be HTML-escaped (&#39;, &quot;, &amp;) and then `length` counts the escaped text; a
  few `length` values are stale; a fact longer than 200 characters is cut to 200 characters
  plus "…" and marked `truncated: true`. A page past the end has `data: []` (status `empty`).
- `get_fact(id)` -> `{id, fact, length}`: one fact, never truncated (`not_found` for an unknown id).
- `get_random_fact(max_length)` -> `{fact, length}`: a random fact whose `length` is at most
  `max_length` (0: any) — each call draws anew, in no order and with repeats.
Every call may fail with `rate_limited` at the case's fault rate (seeded, paired).
"""

from __future__ import annotations

import math
from typing import Any

from evaluators.skillcraft.family import memo
from evaluators.skillcraft.tools import Api, ToolReply, rate_limited

BASE_URL = "https://catfact.ninja/facts?page="


class CatFactsWorld:
    def __init__(self, data: dict[str, Any]) -> None:
        self.per_page = int(data["per_page"])
        self.truncate_at = int(data["truncate_at"])
        self.keywords = tuple(data["keywords"])
        self.facts: list[dict[str, Any]] = list(data["facts"])  # listing order, raw (as served by get_fact)
        self.by_id = {f["id"]: f for f in self.facts}
        self.random_pool: dict[int, list[dict[str, Any]]] = {}  # max_length -> facts get_random_fact may return
        n = max(1, math.ceil(len(self.facts) / self.per_page))
        self.pages: list[dict[str, Any]] = [{  # pre-built get_facts results
            "current_page": p, "last_page": n, "per_page": self.per_page, "total": len(self.facts),
            "next_page_url": f"{BASE_URL}{p + 1}" if p < n else None,
            "data": [self.listed(f) for f in self.facts[(p - 1) * self.per_page: p * self.per_page]],
        } for p in range(1, n + 1)]
        self.page_tokens = [30 + sum(8 + len(f["fact"]) // 4 for f in page["data"]) for page in self.pages]

    def listed(self, fact: dict[str, Any]) -> dict[str, Any]:
        """How the listing shows a fact: long ones cut at `truncate_at` characters."""
        if len(fact["fact"]) <= self.truncate_at:
            return dict(fact)
        return {**fact, "fact": fact["fact"][: self.truncate_at] + "…", "truncated": True}

    def pool(self, max_length: int) -> list[dict[str, Any]]:
        return memo(self.random_pool, max_length, lambda: [f for f in self.facts if not max_length
                                                           or f["length"] <= max_length])


class CatFactsTools(Api[CatFactsWorld]):
    """One agent run's view of the API (seeded faults, attempt counters, random draws)."""

    random_calls = 0  # get_random_fact draws anew on every call

    def get_facts(self, page: int = 1) -> ToolReply:
        if self.fault(f"facts:{page}"):
            return rate_limited()
        pages = self.world.pages
        if 1 <= page <= len(pages):
            return pages[page - 1], "ok", self.world.page_tokens[page - 1]
        return {**pages[-1], "current_page": page, "next_page_url": None, "data": []}, "empty", 30

    def get_fact(self, id: str) -> ToolReply:  # noqa: A002 (the tool's parameter name)
        if self.fault(f"fact:{id}"):
            return rate_limited()
        fact = self.world.by_id.get(id)
        if fact is None:
            return {"error": "not_found"}, "not_found", 15
        return dict(fact), "ok", 15 + len(fact["fact"]) // 4

    def get_random_fact(self, max_length: int = 0) -> ToolReply:
        if self.fault(f"random:{max_length}"):
            return rate_limited()
        k = self.random_calls
        self.random_calls += 1
        if not (pool := self.world.pool(max_length)):
            return {"error": "not_found", "message": "no fact is that short"}, "not_found", 15
        fact = pool[int(self.draws.u(f"random:{max_length}:{k}") * len(pool))]
        return {"fact": fact["fact"], "length": fact["length"]}, "ok", 15 + len(fact["fact"]) // 4


World, Tools = CatFactsWorld, CatFactsTools  # the family's hooks (family.HOOKS)
