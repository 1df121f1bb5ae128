"""The simulated catfacts agent: solves a CatFactsTask by really calling the tools.

Each named behaviour is drawn right or wrong (AgentRun.right) and a wrong one changes what the
agent does: it samples the random-fact endpoint over and over (the loop), stops after the first
page, keeps repeated facts, matches the keyword as a case-sensitive substring, trusts the stale
`length` field, leaves HTML entities in the text, writes the listing's truncated text, skips
rate-limited calls, reads pages it does not need, or never writes the file. Grading then finds
the damage.
"""

from __future__ import annotations

import html
from functools import lru_cache
from typing import Any

from evaluators.skillcraft.agent import AgentRun
from evaluators.skillcraft.catfacts.task import CatFactsTask, passes, same_key, summary
from evaluators.skillcraft.catfacts.world import CatFactsTools

WASTED_PAGES = 2  # pages a wasteful agent reads after it has enough


_plain = lru_cache(maxsize=8192)(html.unescape)  # facts repeat across pages and runs


def _read(run: AgentRun, tools: CatFactsTools, item: dict[str, Any], cut_matters: bool) -> tuple[str, int]:
    """A listed fact's text and length: the full text when it was cut and the agent fetches it."""
    if item.get("truncated") and cut_matters and run.right("fetch_full_text", item["id"]):
        full = run.ask(tools, f"fact:{item['id']}", "get_fact", id=item["id"])
        if full is not None:
            return full["fact"], full["length"]
    return item["fact"], item["length"]


def _read_on(run: AgentRun, tools: CatFactsTools, page: int) -> None:
    """A wasteful agent reads a few more pages after it has enough."""
    if not run.right("skip_unneeded_calls"):
        for extra in range(page + 1, page + 1 + WASTED_PAGES):
            run.ask(tools, f"page:{extra}", "get_facts", page=extra)
            run.bump("wasted")


def _collect(run: AgentRun, tools: CatFactsTools, task: CatFactsTask) -> list[dict[str, Any]]:
    f = task.filter
    dedupe, whole_words, measure, decode, paginate = map(run.right, (
        "dedupe_facts", "match_whole_words", "measure_length", "decode_entities", "paginate_until_enough"))
    # A cut fact can qualify only when the filter allows facts longer than the cut.
    cut_matters = f.max_length is None or f.max_length > tools.world.truncate_at
    out: list[dict[str, Any]] = []
    seen: set[str] = set()
    page = 1
    while len(out) < task.n:
        res = run.ask(tools, f"page:{page}", "get_facts", page=page)
        if res is None:
            break  # a skipped error loses the page, and with it the cursor
        for item in res["data"]:
            if len(out) >= task.n:
                break
            text, length = _read(run, tools, item, cut_matters)
            shown = _plain(text) if decode else text
            if dedupe:
                k = same_key(shown)  # entities are compared as written
                if k in seen:
                    continue
                seen.add(k)
            if measure:
                length = len(shown)
            if passes(shown, length, f, whole_words):
                out.append({"fact": shown, "length": length})
        if len(out) >= task.n:
            _read_on(run, tools, page)
            break
        if not paginate or res["next_page_url"] is None:
            break
        page += 1
    return out


def solve(run: AgentRun, tools: CatFactsTools, task: CatFactsTask) -> dict[str, Any]:
    f = task.filter
    if f.keyword is None and f.max_length is not None and not run.right("use_fact_listing"):
        # The loop: the random endpoint takes max_length, so it looks like the tool for the job;
        # the same call is sent again and again until the agent notices the facts come in no
        # order and with repeats, and turns to the listing.
        run.ask(tools, "random", "get_random_fact", max_length=f.max_length)
        run.repeat_until_noticed(tools, "random", "get_random_fact", max_length=f.max_length)
    facts = _collect(run, tools, task)
    return {"facts": facts, **summary(facts, task.average)}


def validate(run: AgentRun, draft: dict[str, Any], task: CatFactsTask) -> None:
    """A validating agent re-reads its draft and fixes some defects (never missing facts)."""
    facts = draft["facts"]
    if run.draws.below("fix:dupes", 0.7):
        kept: dict[str, dict[str, Any]] = {}
        for x in facts:
            kept.setdefault(same_key(x["fact"]), x)
        facts = list(kept.values())
    if run.draws.below("fix:entities", 0.5):
        facts = [{**x, "fact": _plain(x["fact"])} for x in facts]
    if run.draws.below("fix:lengths", 0.5):
        facts = [{**x, "length": len(x["fact"])} for x in facts]
    draft.update(facts=facts, **summary(facts, task.average))

