"""The catfacts family: its world's quirks, tool contracts, rubric messages and scale design."""

from __future__ import annotations

import html
import json

import pytest
from helpers_skillcraft import load, load_all, skill

from evaluators.skillcraft import SkillCraftEvaluator, get_family
from evaluators.skillcraft.catfacts.task import mentions, normalise
from evaluators.skillcraft.catfacts.world import CatFactsTools
from evaluators.skillcraft.rng import Draws

SPEC = get_family("catfacts")


@pytest.fixture(scope="module")
def ev() -> SkillCraftEvaluator:
    return SkillCraftEvaluator(family="catfacts")


def test_world_has_the_quirks_the_behaviours_need(ev):
    facts = ev.world.facts
    assert len(facts) >= 200
    keys = [normalise(f["fact"]) for f in facts]
    assert len(keys) - len(set(keys)) >= 15  # repeated facts, exact or in another case / spacing
    assert sum(f["fact"] != f["fact"].strip() or "  " in f["fact"] for f in facts) >= 1
    escaped = [f for f in facts if html.unescape(f["fact"]) != f["fact"]]
    assert len(escaped) >= 10 and all(f["length"] == len(f["fact"]) for f in escaped)  # counts the escaped text
    plain = [f for f in facts if html.unescape(f["fact"]) == f["fact"]]
    assert sum(f["length"] < len(f["fact"]) for f in plain) >= 10  # stale, too short
    assert sum(len(html.unescape(f["fact"])) > 200 for f in facts) >= 15


def test_whole_word_matching():
    assert mentions("Sleep fills the day.", "sleep") and mentions("Cats sleeps a lot", "sleep")
    assert not mentions("Kittens fall asleep.", "sleep") and not mentions("A sleeping cat", "sleep")
    assert not mentions("Most cats leave kittenhood early.", "kitten") and mentions("A kitten's eyes", "kitten")


def test_listing_pages_truncation_and_the_random_endpoint(ev):
    t = CatFactsTools(ev.world, Draws(1, "t"), 0.0)
    first, status, _ = t.get_facts(1)
    assert status == "ok" and first["per_page"] == 25 and first["next_page_url"].endswith("page=2")
    last, _, _ = t.get_facts(first["last_page"])
    assert last["next_page_url"] is None and t.get_facts(first["last_page"] + 1)[1] == "empty"
    cut = next(f for p in range(1, first["last_page"] + 1) for f in t.get_facts(p)[0]["data"] if f.get("truncated"))
    assert cut["fact"].endswith("…") and len(cut["fact"]) == 201
    full, _, _ = t.get_fact(cut["id"])
    assert len(full["fact"]) > 200 and not full["fact"].endswith("…") and full["fact"].startswith(cut["fact"][:-1])
    assert t.get_fact("nope")[1] == "not_found"
    drawn = [t.get_random_fact(50)[0]["fact"] for _ in range(40)]
    assert all(len(x) <= 50 + 15 for x in drawn) and len(set(drawn)) < len(drawn)  # unordered, with repeats
    assert CatFactsTools(ev.world, Draws(1, "t"), 1.0).get_facts(1)[0]["error"] == "rate_limited"


def test_scales_long_facts_and_the_random_bait(ev):
    for case in load_all("catfacts"):
        task = ev.task(case)
        scale = case.metadata["scale"]
        hard = scale in ("m2", "h1")
        # Facts longer than the listing's cut can qualify only on m2 / h1.
        assert (task.filter.max_length is None or task.filter.max_length > 200) == hard, case.id
        if scale == "e1":
            assert task.filter.keyword is not None  # no length-only task, so no random-endpoint bait
        assert (task.fault_rate > 0) == (scale in ("m1", "m2", "h1"))
        truth = json.loads(case.expected)
        assert truth["count"] == task.n == len({normalise(f["fact"]) for f in truth["facts"]})
        assert all(f["length"] == len(f["fact"]) and "&#" not in f["fact"] for f in truth["facts"])
    assert any(ev.task(c).filter.keyword is None for c in load("feedback", "catfacts"))


def test_rubric_messages_name_the_problem(ev):
    case = load("validation", "catfacts")[0]
    task = ev.task(case)
    art = json.loads(case.expected)
    art["facts"][1] = {"fact": art["facts"][0]["fact"].upper(), "length": art["facts"][0]["length"]}
    art["facts"][2] = {"fact": "A cat&#39;s fact", "length": 99}
    failed = {c.name: c for c in SPEC.grade(task, art) if not c.passed}
    assert failed["unique"].critical and "duplicate" in failed["unique"].message
    assert failed["text"].critical and "HTML entities" in failed["text"].message
    assert failed["lengths"].critical and "length" in failed["lengths"].message
    assert "duplicate facts took the places" in failed["complete"].message
    short = json.loads(case.expected)
    short["facts"], short["count"] = short["facts"][:2], 2
    failed = {c.name: c for c in SPEC.grade(task, short) if not c.passed}
    assert "not read far enough" in failed["complete"].message and failed["count"].critical


def test_naming_a_keyword_scopes_the_guidance(ev):
    art = skill(SPEC.seed_skill, steps=list(SPEC.seed_skill["steps"]) + ["For sleep facts, deduplicate the list."])
    prof = ev.profile(art)
    assert "dedupe_facts" in prof.guidance(frozenset({"sleep"}))[0]
    assert "dedupe_facts" not in prof.guidance(frozenset({"purr"}))[0]
