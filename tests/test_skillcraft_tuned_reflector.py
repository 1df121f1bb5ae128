"""TunedReflector (`reflector=tuned`, formerly `heuristic`): the reflector co-designed with the
simulator — reply shape, determinism, diagnosis, imperfections and the closed loop, per family."""

from __future__ import annotations

import ast
import json
import subprocess
import sys
from pathlib import Path

import pytest
from helpers_skillcraft import DATA, load, skill

from evaluators.skillcraft import HeuristicReflector, SkillCraftEvaluator, TunedReflector, get_family
from gepa_lab import SearchConfig, optimize
from gepa_lab.core.artifacts import SkillSpec, artifact_from_dict
from gepa_lab.core.contracts import Case
from gepa_lab.core.errors import ReflectionRejected
from gepa_lab.data import load_dataset_dir
from gepa_lab.search.reflection import apply_reply, build_records

REPO = Path(__file__).resolve().parents[1]
COMPONENTS = ("steps", "pitfalls", "when_to_use", "description")
SEED_SKILL, WEATHER_SEED = get_family("recipe").seed_skill, get_family("weather").seed_skill
SEED = artifact_from_dict({k: v for k, v in SEED_SKILL.items() if k != "kind"})


@pytest.fixture(scope="module")
def ev() -> SkillCraftEvaluator:
    return SkillCraftEvaluator()


@pytest.fixture(scope="module")
def feedback() -> list[Case]:
    return load("feedback")


def record(feedback_text: str, score: float = 0.5, expected: str = "{}", input_text: str = "task") -> dict:
    return {"case_id": "case-1", "input": input_text, "expected": expected, "score": score,
            "output": "", "feedback": feedback_text, "trace": "{}"}


def batches(ev: SkillCraftEvaluator, cases: list[Case], n: int = 12) -> list[list[dict]]:
    out = []
    for i in range(n):
        batch = [cases[(3 * i + k) % len(cases)] for k in range(3)]
        out.append(build_records(batch, ev.evaluate(SEED, batch, i)))
    return out


def test_reply_has_all_fields_and_applies_cleanly(ev, feedback):
    refl = HeuristicReflector(seed=0)
    for records in batches(ev, feedback, 4):
        for component in COMPONENTS:
            reply = refl.reflect(SEED, component, records)
            assert set(reply) == {"name", "description", "when_to_use", "steps", "pitfalls", "rationale"}
            assert reply["name"] == SEED.name and isinstance(reply["rationale"], str) and reply["rationale"]
            for other in set(COMPONENTS) - {component}:
                assert reply[other] == SEED.to_dict()[other]  # only the selected component changes
            try:
                child, _ = apply_reply(SEED, component, reply)
            except ReflectionRejected as exc:
                assert "did not change" in str(exc)
            else:
                assert isinstance(child, SkillSpec) and child.name == SEED.name


def test_deterministic_for_same_inputs_and_varies_with_seed(ev, feedback):
    records = batches(ev, feedback, 1)[0]
    a = HeuristicReflector(seed=3).reflect(SEED, "steps", records)
    assert a == HeuristicReflector(seed=3).reflect(SEED, "steps", records)
    replies = {json.dumps(HeuristicReflector(seed=s).reflect(SEED, "steps", records)["steps"]) for s in range(12)}
    assert len(replies) >= 3


def test_reads_only_artifact_records_and_its_family_vocabulary():
    """No simulator internals (agent, skill reading, concepts, evaluator) and no family package:
    its knowledge is the family's tuned vocabulary (reflectors/vocabularies/<family>.yaml)."""
    src = (REPO / "evaluators" / "skillcraft" / "reflectors" / "tuned.py").read_text()
    mods = {n.module for n in ast.walk(ast.parse(src)) if isinstance(n, ast.ImportFrom)}
    forbidden = {"evaluators.skillcraft.agent", "evaluators.skillcraft.skill", "evaluators.skillcraft.concepts",
                 "evaluators.skillcraft.evaluator", "evaluators.skillcraft.tools"}
    assert not (mods & forbidden) and not any(m and ".recipe" in m or m and ".weather" in m for m in mods)
    code = ("import sys; from evaluators.skillcraft import TunedReflector as T; T(family='pokemon'); "
            "print(sorted(m for m in sys.modules if m.startswith('evaluators.skillcraft.')))")
    done = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, check=True)
    assert "evaluators.skillcraft.pokemon" not in done.stdout and "evaluators.skillcraft.agent" not in done.stdout
    # Works with nothing but a spec and plain records.
    reply = HeuristicReflector().reflect(SEED, "pitfalls", [record("- [critical] recipes.1: non-metric unit cup")])
    assert reply["pitfalls"]
    assert HeuristicReflector is TunedReflector
    with pytest.raises(ValueError, match="unknown SkillCraft-sim family"):
        TunedReflector(family="nope")


def test_weather_vocabulary_diagnoses_weather_feedback():
    seed = skill(WEATHER_SEED)
    text = ('- [critical] cities["Springfield, Illinois, US"]: coordinates 37.21, -93.29 belong to a different '
            'place with the same name; the task asked for the one at 39.8, -89.64')
    added = []
    for s in range(20):
        reply = TunedReflector(seed=s, family="weather").reflect(seed, "steps", [record(text, score=0.4)])
        added += [x for x in reply["steps"] if x not in seed.steps]
    assert sum(any(w in x.lower() for w in ("country", "region", "candidate")) for x in added) >= 8


@pytest.mark.parametrize("text,words", [
    ("- [critical] recipes.52001: non-metric unit(s) cup, oz; quantities must be in g, ml or pcs", ("metric", "g, ml", "gram")),
    ("- cuisine_dishes.Thai: duplicate dish ids listed (52001)", ("dedup", "once", "duplicate", "already")),
    ("Repeated tool calls (exact):\n- search_recipes {\"by\":\"category\",\"page\":4,\"value\":\"Beef\"} ×37", ("empty", "same page", "loop", "no items")),
    ("- [critical] category_dishes.Beef.count is 32, expected 30; the dish id list is complete, so the count was not computed from the collected ids", ("count",)),
    ("Missing artifact: the agent returned the JSON in its final message instead of writing cookbook.json with write_file.", ("write",)),
])
def test_diagnoses_failures_from_feedback_text(text, words):
    hits = 0
    for seed in range(30):
        reply = HeuristicReflector(seed=seed).reflect(SEED, "steps", [record(text, score=0.4)])
        added = [s for s in reply["steps"] if s not in SEED.steps]
        hits += any(any(w in s.lower() for w in words) for s in added)
    assert hits >= 15  # most replies address the diagnosed failure


def test_imperfect_moves_happen(ev, feedback):
    """Unchanged replies, over-specific copies, bloat and over-general rules all occur."""
    records_list = batches(ev, feedback, 12)
    unchanged = specific = bloated = overgeneral = 0
    for seed in range(10):
        refl = HeuristicReflector(seed=seed)
        for records in records_list:
            for component in COMPONENTS:
                reply = refl.reflect(SEED, component, records)
                value = reply[component]
                if value == getattr(SEED, component):
                    unchanged += 1
                    continue
                text = " ".join(value) if isinstance(value, list) else value
                if "exactly" in text or "stop after" in text or "Especially for" in text:
                    specific += 1
                if len(text) > len(" ".join(getattr(SEED, component))) + 400:
                    bloated += 1
                if "never call get_recipe" in text or "not retry" in text or "instead of waiting" in text:
                    overgeneral += 1
    total = 10 * len(records_list) * len(COMPONENTS)
    assert 0.03 * total <= unchanged <= 0.5 * total
    assert specific >= 5 and bloated >= 5 and overgeneral >= 2


def test_over_specific_edits_copy_counts_from_expected():
    expected = json.dumps({"category_dishes": {"Lamb": {"count": 18, "dish_ids": []}}, "total_unique_dishes": 18})
    copied = 0
    for seed in range(60):
        reply = HeuristicReflector(seed=seed).reflect(SEED, "steps", [record("- x", expected=expected)])
        copied += any("18" in s or "Lamb" in s for s in reply["steps"])
    assert copied >= 3


def test_when_to_use_names_task_types_when_skill_was_not_loaded():
    text = "Official result: FAILED.\nEfficiency: 9,000 agent tokens (4% of the 200,000-token budget), 5 tool calls, claim_done: yes, skill loaded: no."
    rec = record(text, score=0.3, input_text="Collect every dish in: Thai cuisine; dishes that use garlic.")
    replies = [HeuristicReflector(seed=s).reflect(SEED, "when_to_use", [rec])["when_to_use"] for s in range(10)]
    changed = [r for r in replies if r != SEED.when_to_use]
    assert len(changed) >= 6
    assert sum("cuisine" in r.lower() for r in changed) >= len(changed) - 2


@pytest.mark.slow
def test_closed_loop_improves_validation_in_most_runs(ev):
    """The real engine (minibatch 3, paired seeds, strict improvement, Pareto pool) with this
    reflector finds a validation improvement for most random seeds."""
    dataset = load_dataset_dir(DATA)
    results = [optimize(SEED, dataset, ev, HeuristicReflector(seed=run), SearchConfig(random_seed=run))
               for run in range(5)]
    improved = [r for r in results if r.candidate_validation.score > r.baseline_validation.score]
    assert len(improved) >= 3
    assert all(r.candidate_count >= 2 for r in improved)
