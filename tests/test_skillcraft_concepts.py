"""Concept-level cues: the simulated agent responds to what an item is about, in any wording —
with the same adherence and length effects as before — and only imperative negation contradicts."""

from __future__ import annotations

import re
import statistics

import pytest
from helpers_skillcraft import load, skill

from evaluators.skillcraft import SkillCraftEvaluator, get_family
from evaluators.skillcraft.concepts import Concept, content_words, contradicts, stem
from evaluators.skillcraft.reflectors.vocabulary import load_vocabulary
from evaluators.skillcraft.skill import read_item

RECIPE = get_family("recipe")
BEHAVIOURS = {b.name: b for b in RECIPE.behaviours}
WEATHER = get_family("weather")


def _trigrams(text: str) -> set[tuple[str, ...]]:
    w = re.findall(r"[a-z0-9]+", text.lower())
    return {tuple(w[i:i + 3]) for i in range(len(w) - 2)}


def _known_texts() -> str:
    """Every guidance text the repo ships: seed and reference skills, the tuned vocabularies."""
    parts = []
    for spec in (RECIPE, WEATHER):
        for sk in (spec.seed_skill, spec.reference_skill):
            parts += list(sk["steps"]) + list(sk["pitfalls"])
        tuned = load_vocabulary(spec.name)
        for table in (tuned.steps, tuned.pitfalls):
            parts += [t for texts in table.values() for t in texts]
        parts += [r for r, _ in tuned.overgeneral]
    return "\n".join(parts)


def test_stemming_unifies_inflections():
    for group in (("paginate", "paginating", "pagination", "paginated"), ("retry", "retries", "retried", "retrying"),
                  ("duplicate", "duplicates", "duplicated"), ("city", "cities"), ("stop", "stopped", "stopping"),
                  ("normalise", "normalising", "normalized")):
        assert len({stem(w) for w in group}) == 1, group
    assert stem("page") != stem("paginate")


UNSEEN = [
    # (family, behaviour, a sentence in wording no shipped text uses)
    (RECIPE, "dedupe_by_id", "Overlapping listing pages can hand you one dish twice; leave every id unique."),
    (RECIPE, "count_per_category", "A hint field may lag behind reality, so tally the list yourself."),
    (WEATHER, "geocode_plain_name", "Spellings carrying diacritics come back empty from the place lookup; "
                                    "query the ASCII form."),
    (WEATHER, "keep_null_days", "Sensor gaps show up as null; such dates still belong among the rows."),
]


@pytest.mark.parametrize("spec, behaviour, sentence", UNSEEN, ids=[b for _, b, _ in UNSEEN])
def test_guidance_in_unseen_wording_still_moves_its_behaviour(spec, behaviour, sentence):
    assert not (_trigrams(sentence) & _trigrams(_known_texts())), "pick wording no shipped text uses"
    item = read_item(sentence, spec.behaviours, frozenset())
    assert behaviour in item.positive and not item.anti
    ev = SkillCraftEvaluator(family=spec.name)
    seed, child = skill(spec.seed_skill), skill(spec.seed_skill, steps=list(spec.seed_skill["steps"]) + [sentence])
    case = load("validation", spec.name)[0]
    for s in range(3):  # the same habit draw, a higher threshold
        parent_run = ev.run_episode(seed, case, s)
        child_run = ev.run_episode(child, case, s)
        assert parent_run[1].loaded == child_run[1].loaded
    cases = load("validation", spec.name) + load("holdout", spec.name)
    seeds = range(8)
    before = statistics.mean(r.score for k in seeds for r in ev.evaluate(seed, cases, k))
    after = statistics.mean(r.score for k in seeds for r in ev.evaluate(child, cases, k))
    assert after > before + 0.005


def test_unrelated_or_vague_wording_moves_nothing():
    for text in ("Be polite in your final message.", "Keep the lists tidy.", "Units matter.",
                 "Work carefully and think about the task before acting."):
        item = read_item(text, RECIPE.behaviours, frozenset())
        assert not item.positive and not item.anti, text


def test_long_filler_needs_more_than_a_passing_mention():
    filler = ("Throughout the run keep a running commentary of every assumption and every intermediate result, "
              "and explain in detail why each particular call is made, and restate the whole plan and all of "
              "its requirements from scratch before you continue with the next step of the work.")
    assert not read_item(filler, RECIPE.behaviours, frozenset()).positive
    assert "fetch_required_details" in read_item("Explain in detail why each call is made.", RECIPE.behaviours,
                                                  frozenset()).positive


def polarity(concept: Concept, text: str) -> int:
    """+1 the text instructs the concept, -1 it contradicts it, 0 it does not address it."""
    found = content_words(text)
    if not concept.addressed_by(frozenset(found), len(found)):
        return 0
    return -1 if contradicts(concept, text) else 1


@pytest.mark.parametrize("text, expected", [
    ("Do not retry failed calls; move on.", -1),
    ("Never retry a call.", -1),
    ("No retries: skip anything that fails.", -1),
    ("Skip rate_limited calls instead of waiting.", -1),
    ("If a call returns rate_limited, wait and retry it instead of skipping it.", 1),
    ("Skipping a rate-limited call drops data: retry it.", 1),  # a gerund describes, it does not command
    ("Rate-limited calls were not retried, so pages were lost.", 1),  # descriptive negation
    ("Never skip a failed call; try it again after a pause.", 1),  # a prohibited lapse instructs
    ("Don't retry more than three times.", 1),  # a restricted prohibition
    ("Keep the output short.", 0),
])
def test_only_imperative_negation_contradicts(text, expected):
    retry = BEHAVIOURS["retry_transient_errors"].concept
    assert polarity(retry, text) == expected


def test_restricted_prohibitions_are_not_contradictions():
    details = BEHAVIOURS["fetch_required_details"].concept
    assert contradicts(details, "Never call get_recipe.")
    assert not contradicts(details, "Do not fetch details for every dish.")
    assert not contradicts(details, "Avoid get_recipe calls that fetch recipes the task did not ask for.")


def test_concepts_are_family_data_not_code():
    c = Concept.of("widget widgets", "sort sorted price order")
    assert c.addressed_by(frozenset({stem("widgets")}))
    assert c.addressed_by(frozenset({stem("sorted"), stem("prices")}))
    assert not c.addressed_by(frozenset({stem("price")}))
