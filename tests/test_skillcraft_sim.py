"""SkillCraft-sim, recipe family: contracts, data, grading and the six required properties.
(Properties every family shares are in test_skillcraft_families.py.)"""

from __future__ import annotations

import json
import math
import statistics
from dataclasses import replace
from pathlib import Path

import pytest
from helpers_skillcraft import DATA, load, mean_score, per_case, skill

from evaluators.skillcraft import SkillCraftEvaluator, get_family
from evaluators.skillcraft.evaluator import DEFAULT_TOKEN_BUDGET
from evaluators.skillcraft.family import Check
from evaluators.skillcraft.grading import score_of
from evaluators.skillcraft.reflectors.vocabulary import load_vocabulary
from evaluators.skillcraft.rng import Draws
from gepa_lab import ConfigError
from gepa_lab.core.artifacts import artifact_from_dict
from gepa_lab.core.contracts import Case, split_digest

REPO = Path(__file__).resolve().parents[1]
RECIPE = get_family("recipe")
SEED_SKILL, REFERENCE_SKILL = RECIPE.seed_skill, RECIPE.reference_skill
BLOAT = load_vocabulary("recipe").bloat
OBJECTIVES = {"official_quality", "passed", "agent_tokens", "tool_calls", "skill_loaded", "latency_ms", "cost_usd"}
SEEDS = range(12)


@pytest.fixture(scope="module")
def ev() -> SkillCraftEvaluator:
    return SkillCraftEvaluator()


@pytest.fixture(scope="module")
def splits() -> dict[str, list[Case]]:
    return {s: load(s) for s in ("feedback", "validation", "holdout")}


SEED = skill(SEED_SKILL)
GOOD = skill(REFERENCE_SKILL)


# --- data ---------------------------------------------------------------------------------------

def test_dataset_shape_manifest_and_digests(splits):
    manifest = json.loads((DATA / "manifest.json").read_text())
    assert manifest["id"] == "skillcraft-sim/recipe" and manifest["version"]
    assert manifest["seed_artifact"] == "seed_skill.json"
    assert manifest["generator"] == "python -m evaluators.skillcraft.generate"
    scales = {"feedback": {"e1", "e2"}, "validation": {"e3", "m1"}, "holdout": {"m2", "h1"}}
    for name, cases in splits.items():
        entry = manifest["splits"][name]
        assert entry["file"] == f"{name}.jsonl" and entry["cases"] == len(cases) >= 20
        assert entry["sha256"] == split_digest(cases)
        assert {c.metadata["scale"] for c in cases} == scales[name]
        for scale in scales[name]:
            assert sum(c.metadata["scale"] == scale for c in cases) >= 10
    every = [c for cs in splits.values() for c in cs]
    assert len({c.id for c in every}) == len(every)
    critical = [c for c in every if c.critical]
    assert critical and all(c.metadata["scale"] in {"m2", "h1"} for c in critical)
    assert all(c.id.startswith(f"recipe/{c.metadata['scale']}/r") for c in every)
    seed = json.loads((DATA / "seed_skill.json").read_text())
    assert seed["kind"] == "skill" and artifact_from_dict(seed) == SEED
    assert not (REPO / "datasets" / "__init__.py").exists()
    assert sum(p.stat().st_size for p in DATA.iterdir()) < 1_000_000


def test_fixtures_have_hundreds_of_paginated_recipes_with_quirks(ev):
    w = ev.world
    assert len(w.recipes) >= 200
    units = {i["unit"] for r in w.recipes.values() for i in r["ingredients"]}
    assert {"g", "oz", "cup", "tbsp", None} <= units
    assert any(r["cuisine"] is None for r in w.recipes.values())
    quirks = list(w.quirks.values())
    assert any(q["overlap"] for q in quirks) and any(q["sentinel"] for q in quirks)
    assert any(q["hint_delta"] for q in quirks)
    assert max(len(p) for p in w.pages.values()) >= 4


# --- evaluator contract ---------------------------------------------------------------------

def test_one_finite_evaluation_per_case_in_order(ev, splits):
    cases = splits["holdout"][::-1]
    results = ev.evaluate(SEED, cases, 2**63 - 1)
    assert [r.case_id for r in results] == [c.id for c in cases]
    for r in results:
        assert 0.0 <= r.score <= 1.0 and math.isfinite(r.score)
        assert set(r.objectives) == OBJECTIVES
        assert all(math.isfinite(v) for v in r.objectives.values())
        trace = json.loads(r.trace)
        assert len(trace["tool_calls"]) <= 80 and trace["tool_calls_total"] == r.objectives["tool_calls"]
        assert r.objectives["cost_usd"] == pytest.approx(r.objectives["agent_tokens"] / 1000 * 0.002)
        if r.output:
            assert json.loads(r.output)  # the written artifact, as JSON text


def test_score_formula_matches_skillcraft():
    checks = [Check("a", True, True), Check("b", False, False), Check("c", True, False), Check("d", True, True)]
    score, q, passed = score_of(checks, True, 50_000, 200_000)
    assert passed and q == 0.75 and score == pytest.approx(0.80 + 0.19 * 0.75 + 0.01 * 0.75)
    score, q, passed = score_of([Check("a", False, True), Check("b", True, False)], True, 1, 10)
    assert not passed and score == pytest.approx(0.79 * 0.5)
    assert score_of(checks, False, 0, 10)[2] is False  # no artifact, no pass
    assert score_of([Check("a", True, True)], True, 10**9, 10)[0] == pytest.approx(0.99)


def test_scores_follow_the_formula_from_objectives(ev, splits):
    for r in ev.evaluate(SEED, splits["validation"], 5):
        q, tokens = r.objectives["official_quality"], r.objectives["agent_tokens"]
        eff = 1 - min(1.0, tokens / DEFAULT_TOKEN_BUDGET)
        want = min(1.0, 0.80 + 0.19 * q + 0.01 * eff) if r.objectives["passed"] else 0.79 * q
        assert r.score == pytest.approx(want)


def test_configuration_errors_raise_value_error(ev, splits):
    case = splits["feedback"][0]
    with pytest.raises(ValueError, match="unknown SkillCraft-sim family"):
        ev.evaluate(SEED, [replace(case, metadata={**case.metadata, "family": "nope"})], 1)
    with pytest.raises(ValueError, match="unknown recipe listing"):
        bad = json.dumps({"lists": [["category", "Unicorn"]], "details": []})
        ev.evaluate(SEED, [replace(case, metadata={**case.metadata, "task": bad})], 1)
    with pytest.raises(ValueError, match="scale"):
        ev.evaluate(SEED, [replace(case, metadata={**case.metadata, "scale": "x9"})], 1)
    with pytest.raises(ValueError, match="unknown SkillCraft-sim family 'nope'; known: .*recipe"):
        SkillCraftEvaluator(family="nope")
    with pytest.raises(ValueError):
        SkillCraftEvaluator(token_budget=0)
    with pytest.raises(ValueError, match="belongs to family 'weather'"):
        ev.evaluate(SEED, [replace(case, metadata={**case.metadata, "family": "weather"})], 1)
    with pytest.raises(ValueError, match="unknown SkillCraft-sim family"):
        SkillCraftEvaluator(family=["recipe"])  # type: ignore[arg-type]


@pytest.mark.parametrize("key, value", [("max_tool_calls", -5), ("max_tool_calls", 0), ("system_tokens", -1),
                                        ("turn_output_tokens", 2.5), ("turn_latency_ms", float("nan")),
                                        ("ms_per_1k_context_tokens", -0.1), ("unloaded_skill_tokens", True),
                                        ("turn_latency_ms", "fast")])
def test_nonsense_agent_settings_are_refused_when_the_evaluator_is_built(key, value):
    with pytest.raises(ConfigError, match=rf"^agent_config\.{key} must be (an integer|a finite number) >= [01], "
                                          rf"got .*; fix evaluator\.agent_config\.{key} or leave it out") as info:
        SkillCraftEvaluator(agent_config={key: value})
    assert "\n" not in str(info.value)
    assert SkillCraftEvaluator(agent_config={"max_tool_calls": 1, "system_tokens": 0,
                                             "turn_latency_ms": 0}).agent_config.max_tool_calls == 1


def test_explicit_data_dir_and_price(splits, tmp_path):
    ev = SkillCraftEvaluator(family="recipe", data_dir=str(DATA), token_budget=50_000, usd_per_1k_tokens=0.01)
    r = ev.evaluate(SEED, splits["feedback"][:1], 3)[0]
    assert r.objectives["cost_usd"] == pytest.approx(r.objectives["agent_tokens"] * 0.01 / 1000)
    with pytest.raises(FileNotFoundError):
        SkillCraftEvaluator(data_dir=tmp_path)


# --- grading is genuine -----------------------------------------------------------------------

def test_grading_compares_artifact_with_ground_truth(ev, splits):
    case = next(c for c in splits["validation"] if "recipes" in json.loads(c.expected))
    task = ev.task(case)
    truth = json.loads(case.expected)
    assert all(c.passed for c in RECIPE.grade(task, truth))
    broken = json.loads(case.expected)
    section = next(iter(k for k in broken if k.endswith("_dishes")))
    name = next(iter(broken[section]))
    broken[section][name]["dish_ids"] += broken[section][name]["dish_ids"][:1]  # a duplicate
    broken["recipes"][0]["ingredients"][0]["unit"] = "cup"
    del broken["recipes"][0]["cuisine"]
    failed = {c.name: c for c in RECIPE.grade(task, broken) if not c.passed}
    assert f"{section}.{name}.unique" in failed and not failed[f"{section}.{name}.unique"].critical
    rid = broken["recipes"][0]["id"]
    assert failed[f"recipes.{rid}.units"].critical and failed[f"recipes.{rid}.fields"].critical
    assert RECIPE.grade(task, None)[0].critical


def test_feedback_and_trace_describe_failures(ev, splits):
    texts = [(r, c) for s in range(20) for c, r in zip(splits["holdout"], ev.evaluate(SEED, splits["holdout"], s), strict=True)]
    assert all("Efficiency:" in r.feedback and "tool calls" in r.feedback for r, _ in texts)
    missing = [r for r, _ in texts if not r.output]
    assert missing and all("Missing artifact:" in r.feedback for r in missing)
    assert all(r.objectives["passed"] == 0 for r in missing)
    looping = [r for r, _ in texts if "Repeated tool calls (exact):" in r.feedback]
    assert looping
    for r in looping:
        block = r.feedback.split("Repeated tool calls (exact):")[1].split("Missing artifact")[0]
        assert 1 <= sum(line.startswith("- ") for line in block.splitlines()) <= 8
    failed = [r for r, _ in texts if r.objectives["passed"] == 0 and r.output]
    assert failed and all("Failed checks:" in r.feedback for r in failed)
    assert any("non-metric unit" in r.feedback for r, _ in texts)
    assert any("not retried" in r.feedback for r, _ in texts)


# --- property 1: seeded noise --------------------------------------------------------------------

def test_same_inputs_give_identical_evaluations(splits):
    a, b = SkillCraftEvaluator(), SkillCraftEvaluator()
    cases = splits["holdout"]
    assert [r.to_dict() for r in a.evaluate(SEED, cases, 42)] == [r.to_dict() for r in b.evaluate(SEED, cases, 42)]
    assert [r.to_dict() for r in a.evaluate(SEED, cases, 42)] == [r.to_dict() for r in a.evaluate(SEED, cases, 42)]


def test_different_seeds_change_a_realistic_share_of_outcomes(ev, splits):
    cases = splits["validation"] + splits["holdout"]
    x = ev.evaluate(SEED, cases, 1)
    y = ev.evaluate(SEED, cases, 2)
    changed = sum(abs(p.score - q.score) > 0.05 for p, q in zip(x, y, strict=True)) / len(cases)
    assert 0.15 <= changed <= 0.9


# --- property 2: common random numbers ---------------------------------------------------------

def test_draws_depend_only_on_seed_case_and_purpose():
    assert Draws(7, "c").u("load") == Draws(7, "c").u("load")
    assert Draws(7, "c").u("load") != Draws(8, "c").u("load")
    assert Draws(7, "c").u("load") != Draws(7, "d").u("load")


def test_neutral_wording_change_keeps_every_outcome(ev, splits):
    """Extra text with no cue moves no probability past a draw: pass/quality identical."""
    neutral = skill(SEED_SKILL, steps=SEED_SKILL["steps"] + ["Be polite in your final message."])
    cases = splits["validation"]
    for s in range(5):
        for p, c in zip(ev.evaluate(SEED, cases, s), ev.evaluate(neutral, cases, s), strict=True):
            assert p.objectives["passed"] == c.objectives["passed"]
            assert p.objectives["official_quality"] == c.objectives["official_quality"]
            if p.objectives["skill_loaded"]:
                assert c.objectives["agent_tokens"] >= p.objectives["agent_tokens"]


def test_paired_comparison_has_lower_variance_than_unpaired(ev, splits):
    child = skill(SEED_SKILL, pitfalls=SEED_SKILL["pitfalls"] + ["Pages overlap: deduplicate dish ids."])
    cases = splits["validation"]
    seeds = list(range(24))
    parent = {s: statistics.mean(r.score for r in ev.evaluate(SEED, cases, s)) for s in seeds}
    kid = {s: statistics.mean(r.score for r in ev.evaluate(child, cases, s)) for s in seeds}
    paired = [kid[s] - parent[s] for s in seeds]
    unpaired = [kid[s] - parent[seeds[(i + 1) % len(seeds)]] for i, s in enumerate(seeds)]
    assert statistics.mean(paired) > 0  # the edit helps on average
    assert statistics.variance(paired) < 0.5 * statistics.variance(unpaired)


# --- property 3: heterogeneous cases ------------------------------------------------------------

def test_no_single_edit_fixes_every_case(ev, splits):
    cases = splits["validation"] + splits["holdout"]
    base = per_case(ev, SEED, cases, range(8))
    improved: dict[str, set[str]] = {}
    for i, step in enumerate(REFERENCE_SKILL["steps"] + REFERENCE_SKILL["pitfalls"]):
        child = skill(SEED_SKILL, steps=SEED_SKILL["steps"] + [step])
        scores = per_case(ev, child, cases, range(8))
        improved[f"edit{i}"] = {cid for cid, v in scores.items() if v > base[cid] + 0.02}
    union = set().union(*improved.values())
    helpful = [s for s in improved.values() if s]
    assert len(helpful) >= 3
    assert all(s != union for s in improved.values())  # every edit leaves some case unimproved
    assert len({frozenset(s) for s in helpful}) == len(helpful)  # different edits, different cases


# --- property 4: overfitting ---------------------------------------------------------------------

def test_count_specific_wording_helps_only_matching_cases(ev, splits):
    # A one-list case whose listing has a stale total_hint: the copied count fixes its count.
    case = next(c for c in splits["feedback"] if c.metadata["scale"] == "e1"
                and ev.world.quirks[ev.world.listing_key(*ev.task(c).lists[0])]["hint_delta"])
    truth = json.loads(case.expected)
    section = next(k for k in truth if k.endswith("_dishes"))
    n = next(iter(truth[section].values()))["count"]
    child = skill(SEED_SKILL, steps=SEED_SKILL["steps"] + [f"Collect exactly {n} dishes per list."])
    assert mean_score(ev, child, [case]) > mean_score(ev, SEED, [case]) + 0.02
    others = [c for c in splits["validation"] + splits["holdout"]]
    assert mean_score(ev, child, others, range(6)) < mean_score(ev, SEED, others, range(6)) - 0.05


def test_easy_scale_simplification_does_not_carry_to_holdout(ev, splits):
    """Dropping the retry pitfall looks free on Feedback (no rate limits there) but hurts hard cases."""
    lean = skill(SEED_SKILL, pitfalls=[])
    fb = mean_score(ev, lean, splits["feedback"]) - mean_score(ev, SEED, splits["feedback"])
    ho = mean_score(ev, lean, splits["holdout"]) - mean_score(ev, SEED, splits["holdout"])
    assert fb >= 0 and ho < -0.01


def test_long_skills_lose_adherence(ev, splits):
    bloated = skill(REFERENCE_SKILL, steps=REFERENCE_SKILL["steps"] + list(BLOAT) * 2)
    assert ev.profile(bloated).adherence < 0.8 <= ev.profile(GOOD).adherence
    cases = splits["validation"] + splits["holdout"]
    assert mean_score(ev, bloated, cases, range(6)) < mean_score(ev, GOOD, cases, range(6)) - 0.03


def test_name_specific_guidance_applies_only_to_that_listing(ev):
    prof = ev.profile(skill(SEED_SKILL, steps=SEED_SKILL["steps"] + ["For Dessert, stop when a page is empty."]))
    assert "stop_on_empty_page" in prof.guidance(frozenset({"dessert"}))[0]
    assert "stop_on_empty_page" not in prof.guidance(frozenset({"seafood"}))[0]


def test_concept_cues_respect_negation_and_paraphrase(ev):
    prof = ev.profile(skill(SEED_SKILL, steps=["Do not stop after the first page.", "DEDUPLICATE ids."],
                            pitfalls=["Do not retry failed calls; move on."]))
    pos, anti = prof.guidance(frozenset())
    assert {"paginate_to_end", "dedupe_by_id"} <= pos
    assert "retry_transient_errors" in anti and "paginate_to_end" not in anti


# --- calibration shape and property 5: cost -------------------------------------------------------

def test_seed_is_mediocre_and_reference_skill_is_good(ev, splits):
    seeds = range(8)
    seed_fb = mean_score(ev, SEED, splits["feedback"], seeds)
    seed_val = mean_score(ev, SEED, splits["validation"], seeds)
    seed_ho = mean_score(ev, SEED, splits["holdout"], seeds)
    assert seed_fb > seed_val > seed_ho
    assert 0.6 <= seed_val <= 0.8
    for split in ("validation", "holdout"):
        assert mean_score(ev, GOOD, splits[split], seeds) >= 0.95


def test_tokens_grow_with_skill_length_and_loops_multiply_them(ev, splits):
    cases = splits["validation"]
    # Longer but still under the adherence threshold: same behaviour, more tokens per turn.
    long = skill(SEED_SKILL, description=SEED_SKILL["description"] + " " + "x" * 1000)
    assert ev.profile(long).adherence == ev.profile(SEED).adherence == 1.0
    both = 0
    for p, c in zip(ev.evaluate(SEED, cases, 1), ev.evaluate(long, cases, 1), strict=True):
        assert c.objectives["tool_calls"] == p.objectives["tool_calls"]
        if p.objectives["skill_loaded"] and c.objectives["skill_loaded"]:
            both += 1
            assert c.objectives["agent_tokens"] > p.objectives["agent_tokens"]
            assert c.objectives["cost_usd"] > p.objectives["cost_usd"]
    assert both
    loops, plain = [], []
    for s in range(10):
        for r in ev.evaluate(SEED, splits["holdout"], s):
            (loops if "Repeated tool calls" in r.feedback and "search_recipes" in r.feedback.split("Repeated")[1]
             and r.objectives["tool_calls"] > 40 else plain).append(r.objectives["agent_tokens"])
    assert loops and statistics.median(loops) > 2 * statistics.median(plain)


def test_fingerprint_names_every_result_changing_setting():
    import os
    import subprocess
    import sys

    base = SkillCraftEvaluator().fingerprint()
    # Stable across processes (resume compares it): no salted set or dict ordering leaks in.
    code = "from evaluators.skillcraft import SkillCraftEvaluator as E; print(E().fingerprint())"
    for hashseed in ("1", "2"):
        done = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, check=True,
                              env={**os.environ, "PYTHONHASHSEED": hashseed})
        assert done.stdout.strip() == base
    assert SkillCraftEvaluator().fingerprint() == base
    assert SkillCraftEvaluator(token_budget=100_000).fingerprint() != base
    assert SkillCraftEvaluator(usd_per_1k_tokens=0.01).fingerprint() != base
