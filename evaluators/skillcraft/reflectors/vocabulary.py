"""What a family hands the tuned reflector: diagnoses keyed to its grader's messages and remedies
worded for its behaviours' concepts. Co-designed with the simulator on purpose (docs/
skillcraft_sim.md §8): results with it measure an upper reference, not reflective search. Some
remedies are vague and do nothing (the last wording of each), a few are over-general rules that
hurt other cases, and over-specific edits copy counts, numbers or names out of `expected`.

What every family's vocabulary shares lives here too: the diagnoses and remedies of the shared
behaviours (a missing artifact, a skipped rate-limited call, no final validation), the loop
diagnosis's shape, the over-general rules about retrying, and the bloat paragraphs.
"""

from __future__ import annotations

import json
import random
import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any, TypeVar

T = TypeVar("T")


@dataclass(frozen=True)
class Diagnosis:
    key: str
    summary: str  # rationale wording
    pattern: re.Pattern[str]
    weight: float  # how loudly a matching line argues for this fix
    related: tuple[str, ...]  # words that mark an existing step/pitfall about the same topic


def pattern(text: str) -> re.Pattern[str]:
    return re.compile(text, re.IGNORECASE)


@dataclass(frozen=True)
class TunedVocabulary:
    diagnoses: tuple[Diagnosis, ...]
    steps: dict[str, tuple[str, ...]]  # diagnosis key (plus "waste", "validate") -> wordings; last = vague
    pitfalls: dict[str, tuple[str, ...]]
    # Over-general "efficiency" rules, each with the words of the guardrail it replaces.
    overgeneral: tuple[tuple[str, tuple[str, ...]], ...]
    bloat: tuple[str, ...]  # verbose filler without actionable content
    task_words: tuple[tuple[str, str], ...]  # (word in the task input, label for when_to_use)
    when_templates: tuple[str, ...]  # {p}: task types seen; {c}: the current text
    description_templates: tuple[str, ...]
    default_phrase: str  # when no task type is recognised
    # (rng, records) -> a step copying a count or a name from `expected`, or None.
    over_specific: Callable[[random.Random, list[dict[str, Any]]], str | None]
    # raw record inputs -> names an over-specific when_to_use / description could single out
    names_in_inputs: Callable[[str], list[str]]
    names_template: str  # " Especially for {names} dishes."
    final_step_word: str = "write"  # new steps go before the last step containing this word


# -- shared by every family's vocabulary (the behaviours family.shared_behaviours gives them) ------
ARTIFACT = Diagnosis("artifact", "no output file was written", pattern(r"missing artifact|no artifact"), 3.0,
                     ("write_file", "write the", "save"))
RETRY = Diagnosis("retry", "rate-limited calls were skipped instead of retried", pattern(r"[1-9]\d* not retried"),
                  1.5, ("retry", "rate_limited", "rate limit"))

ARTIFACT_STEPS: tuple[str, ...] = (
    "Always write the final JSON to the requested output file with write_file before claim_done.",
    "Save the result to the exact file name the task gives, using write_file.",
    "Finish by producing the output the task asks for.",
)
ARTIFACT_PITFALLS: tuple[str, ...] = (
    "Printing the JSON in the final message is not enough: write it with write_file.",
)
VALIDATE_PITFALLS: tuple[str, ...] = (
    "Finishing without checking the output against the task lets small mistakes through.",
)
RETRY_BACK_OFF = "Rate limits are transient: back off and call it again."

# Over-general "efficiency" rules about retrying, with the words of the guardrail each replaces.
NO_RETRY_RULE: tuple[str, tuple[str, ...]] = ("Do not retry failed calls; move on to keep the run short.",
                                              ("retry", "rate"))
SKIP_RATE_LIMITED_RULE: tuple[str, tuple[str, ...]] = ("Skip rate_limited calls instead of waiting.",
                                                       ("retry", "rate"))


def expected_items(records: list[dict[str, Any]], items: Callable[[Any], Iterable[T]]) -> list[T]:
    """What `items` finds in each record's `expected` (parsed JSON), for an over-specific edit to
    copy. A record whose expected is not JSON, or not of the shape `items` reads (a ValueError,
    TypeError or AttributeError), adds only what was found before the error."""
    found: list[T] = []
    for rec in records:
        try:
            for item in items(json.loads(str(rec.get("expected", "")))):
                found.append(item)
        except (ValueError, TypeError, AttributeError):
            continue
    return found


def loop_diagnosis(summary: str, tool: str, related: tuple[str, ...], repeats: int = 4) -> Diagnosis:
    """The loop: `tool` sent `repeats` (up to 9) or 10+ times identically, as the feedback's
    repeated-calls lines show it, or the tool-call limit."""
    return Diagnosis("loop", summary, pattern(rf"{tool} \{{[^}}]*\}} ×(?:[{repeats}-9]|\d\d)|tool-call limit"),
                     3.0, related)


def retry_steps(what: str) -> tuple[str, ...]:
    """Remedies for skipped rate-limited calls; `what`: the family's call ("page", "lookup")."""
    return (
        "If a call returns rate_limited, wait and retry it (up to 3 times) instead of skipping it.",
        f"Retry transient errors; never skip a failed {what}.",
        "Handle tool errors carefully.",
    )


def retry_pitfall(loses: str) -> str:
    """`loses`: what a skipped call drops ("a page", "a member")."""
    return f"Skipping a rate_limited call silently drops {loses}: retry it."


def validate_steps(checklist: str) -> tuple[str, ...]:
    """The final-validation remedies; `checklist`: what to check ("every place, day, unit and summary")."""
    return (
        f"Before finishing, validate the JSON against the task: {checklist}.",
        "Re-read the output and check it against the task statement before calling claim_done.",
    )


def bloat(product: str) -> tuple[str, ...]:
    """Verbose filler without actionable content; `product`: what the task builds ("cookbook")."""
    return (
        "Before every tool call, restate the whole task in your own words, enumerate all of its "
        "requirements one by one, re-derive the complete plan from scratch and explain in detail why "
        "this particular call is necessary, so that nothing is ever overlooked at any point of the run.",
        "Throughout the run, maintain a detailed running commentary of your reasoning, noting every "
        "assumption, every intermediate result, every alternative you considered and why you rejected "
        "it, and summarise all of this in full after each step so the reasoning is transparent.",
        "Be thorough, careful and methodical at all times: consider edge cases, think about what could "
        "go wrong with each action, reflect on the quality of your work so far, and keep the overall "
        f"goal of producing an excellent, complete and correct {product} firmly in mind.",
        "Remember that quality matters more than speed, that the user expects a professional result, "
        "and that every part of the task deserves the same level of attention, care and scrutiny "
        "regardless of how simple or routine it may appear at first glance.",
    )
