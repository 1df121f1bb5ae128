"""What a family hands the tuned reflector: diagnoses keyed to its grader's messages and remedies
worded for its behaviours' concepts. Co-designed with the simulator on purpose (docs/
skillcraft_sim.md §8): results with it measure an upper reference, not reflective search.
"""

from __future__ import annotations

import random
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any


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

