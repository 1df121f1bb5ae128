"""The tuned reflector's catfacts vocabulary (`reflector=tuned`): diagnoses keyed to the catfacts
grader's exact messages and remedies worded for the catfacts behaviours' concepts; its
over-specific edits copy numbers or texts out of `expected`. What every family's vocabulary shares,
and why results with it are an upper reference only: reflectors/vocabulary.py.
"""

from __future__ import annotations

import random
import re
from typing import Any

from evaluators.skillcraft.reflectors import vocabulary as shared
from evaluators.skillcraft.reflectors.vocabulary import Diagnosis, TunedVocabulary
from evaluators.skillcraft.reflectors.vocabulary import pattern as _re

DIAGNOSES: tuple[Diagnosis, ...] = (
    shared.ARTIFACT,
    shared.loop_diagnosis("the agent kept sampling the random-fact endpoint", "get_random_fact",
                          ("random", "listing")),
    Diagnosis("dupes", "the list repeated facts", _re(r"duplicate fact"), 2.0, ("duplicate", "once", "dedupe")),
    Diagnosis("keyword", "facts without the keyword were listed", _re(r"do not contain the keyword"), 2.0,
              ("keyword", "word")),
    Diagnosis("length", "too long or too short facts were listed", _re(r"characters in length"), 2.0,
              ("length", "measure")),
    Diagnosis("entities", "HTML entities were left in the text", _re(r"HTML entities"), 2.0,
              ("entities", "html", "decode")),
    Diagnosis("truncated", "truncated facts were listed", _re(r"are truncated"), 2.0, ("truncated", "full")),
    Diagnosis("lengths", "lengths were copied from the length field", _re(r"length value\(s\) differ"), 1.5,
              ("length", "measure")),
    Diagnosis("pages", "the listing was not read far enough", _re(r"not read far enough|facts asked for are missing"),
              1.5, ("page", "next_page_url")),
    shared.RETRY,
    Diagnosis("waste", "pages were read after enough facts were found", _re(r"get_facts call\(s\) fetched pages"),
              0.7, ("enough", "stop")),
)

STEPS: dict[str, tuple[str, ...]] = {
    "artifact": shared.ARTIFACT_STEPS,
    "loop": (
        "Walk the get_facts listing in order; do not sample get_random_fact.",
        "get_random_fact returns facts in no order and with repeats; use the listing instead.",
        "Use the right endpoint.",
    ),
    "dupes": (
        "Deduplicate: keep each fact once, ignoring case, spacing and end punctuation.",
        "Skip a fact whose text you already have, up to case and spacing.",
        "Avoid repeats.",
    ),
    "keyword": (
        "Match the keyword as a whole word in any case, not as a substring.",
        "A keyword matches whole words only: asleep does not mention sleep.",
        "Check the keyword.",
    ),
    "length": (
        "Measure each fact's length yourself from the plain text; never trust the length field.",
        "Compare the measured length of the text with the limit, not the length field.",
        "Respect the limits.",
    ),
    "entities": (
        "Decode HTML entities such as &#39; and &quot; into plain characters.",
        "Unescape the fact text before comparing or reporting it.",
        "Clean the text.",
    ),
    "truncated": (
        "If a listed fact is truncated (ends with …), fetch it with get_fact for the full text.",
        "Fetch the full text of every truncated fact with get_fact.",
        "Report complete facts.",
    ),
    "lengths": (
        "Report each length as the number of characters of the plain fact text.",
        "Measure lengths yourself; the length field can be stale.",
        "Check the lengths.",
    ),
    "pages": (
        "Follow next_page_url and keep reading pages until you have enough facts.",
        "Page 1 rarely has enough facts: keep paging.",
        "Collect enough facts.",
    ),
    "retry": shared.retry_steps("page"),
    "waste": (
        "Once you have enough facts, make no further calls.",
        "Stop paging as soon as the list is complete; extra pages are unneeded.",
        "Keep the run short.",
    ),
    "validate": shared.validate_steps("count, duplicates, filter, text and lengths"),
}

PITFALLS: dict[str, tuple[str, ...]] = {
    "artifact": shared.ARTIFACT_PITFALLS,
    "loop": ("Calling get_random_fact again and again returns repeats in no order: it is a loop.",),
    "dupes": ("The listing repeats facts, sometimes in another case or spacing; keep each once.",),
    "keyword": ("Substring matching finds asleep or breeders; the task wants whole words.",),
    "length": ("The length field can be stale or count HTML entities; measure the text.",),
    "entities": ("Facts can come HTML-escaped (&#39;, &quot;, &amp;); decode them.",),
    "truncated": ("The listing cuts facts after 200 characters; get_fact returns the whole fact.",),
    "lengths": ("A length copied from the length field can be wrong.",),
    "pages": ("Stopping after the first page leaves the list short.",),
    "retry": (shared.retry_pitfall("a page"),),
    "waste": ("Reading pages after the list is complete wastes tokens.",),
    "validate": shared.VALIDATE_PITFALLS,
}

OVERGENERAL: tuple[tuple[str, tuple[str, ...]], ...] = (
    shared.NO_RETRY_RULE,
    ("Do not paginate; the first page of the listing is enough.", ("page",)),
    ("Trust the length field to save time.", ("length",)),
)

BLOAT = shared.bloat("list of facts")

TASK_WORDS: tuple[tuple[str, str], ...] = (
    ("mention the word", "a keyword"),
    ("characters long", "a length limit"),
    ("distinct", "distinct facts"),
    ("average_length", "average lengths"),
)


def over_specific(rng: random.Random, records: list[dict[str, Any]]) -> str | None:
    """Copy a count or a fact out of a record's expected output."""
    found = [f for f in shared.expected_items(records, lambda expected: (expected,))
             if isinstance(f, dict) and f.get("facts")]
    if not found:
        return None
    exp = rng.choice(found)
    return rng.choice((
        f"Return exactly {exp.get('count')} facts.",
        f"The first fact is \"{exp['facts'][0]['fact']}\".",
        f"The average length is {exp.get('average_length')}.",
    ))


def names_in_inputs(raw_inputs: str) -> list[str]:
    return sorted(set(re.findall(r"mention the word \"(\w+)\"", raw_inputs)))[:2]


VOCABULARY = TunedVocabulary(
    diagnoses=DIAGNOSES,
    steps=STEPS,
    pitfalls=PITFALLS,
    overgeneral=OVERGENERAL,
    bloat=BLOAT,
    task_words=TASK_WORDS,
    when_templates=(
        "Use for cat facts tasks that filter facts by {p}.",
        "Use whenever a task asks for cat facts or trivia with {p}.",
        "{c} Also use it for cat facts tasks with {p}.",
    ),
    description_templates=(
        "Builds lists of cat facts and feline trivia from the cat-facts API, covering {p}.",
        "{c} Covers {p}.",
        "Collects cat facts with {p} and writes a validated JSON list.",
    ),
    default_phrase="keywords and length limits",
    over_specific=over_specific,
    names_in_inputs=names_in_inputs,
    names_template=" Especially for {names} facts.",
)
