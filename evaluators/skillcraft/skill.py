"""How the simulated agent *reads* a skill: concept cues, scope, count caps, adherence, loading.

This is the only place the skill text influences the simulation, and it only moves
probabilities (never random draws), which keeps parent/child comparisons paired.
See docs/skillcraft_sim.md §4.2-§4.4.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

from evaluators.skillcraft.concepts import content_words, contradicts, tokens
from evaluators.skillcraft.family import Behaviour

_CAP_WORDS = r"(exactly|only|at most|first|top|up to|no more than|just|limit(?:ed)? to)"
_PAGE_CAP = re.compile(r"\b(only|at most|first|up to|no more than|just|after)\s+(\d{1,3})\s+pages?\b")

# Adherence: a skill longer than this many characters starts to be followed less reliably.
ADHERENCE_FREE_CHARS = 1600
ADHERENCE_SPAN_CHARS = 4000
ADHERENCE_FLOOR = 0.35
ADHERENCE_FREE_ITEMS = 16


@dataclass(frozen=True)
class Cap:
    """A count copied into the skill: the agent collects at most / exactly `n` of `unit`."""

    mode: str  # "exactly" | "at_most"
    n: int
    unit: str  # "items" | "pages"
    scope: frozenset[str]


@dataclass(frozen=True)
class Item:
    """One step or pitfall as the agent understands it."""

    positive: frozenset[str]  # behaviours it instructs
    anti: frozenset[str]  # behaviours it contradicts
    scope: frozenset[str]  # entity names mentioned; empty = applies to every task
    caps: tuple[Cap, ...]


@dataclass(frozen=True)
class SkillProfile:
    name: str
    chars: int
    items: tuple[Item, ...]
    adherence: float
    skill_tokens: int
    trigger_stems: frozenset[str]  # content stems of description + when_to_use

    def guidance(self, entities: frozenset[str]) -> tuple[frozenset[str], frozenset[str]]:
        """Behaviours instructed (and contradicted) by the items that apply to this task."""
        # A step about "Dessert" does nothing for a Seafood task.
        applying = [item for item in self.items if not item.scope or item.scope & entities]
        return frozenset().union(*(i.positive for i in applying)), frozenset().union(*(i.anti for i in applying))

    def caps_for(self, value: str) -> list[Cap]:
        """Copied counts that apply to one listing (unscoped ones apply to every listing)."""
        low = value.lower()
        return [cap for item in self.items for cap in item.caps if not cap.scope or low in cap.scope]

    def load_probability(self, topic: frozenset[str], task_words: frozenset[str]) -> float:
        """P(the agent loads the skill) from how relevant description/when_to_use look."""
        general = len(topic & self.trigger_stems)
        specific = len(task_words & self.trigger_stems) / max(1, len(task_words))
        return min(0.985, 0.15 + 0.22 * min(general, 3) + 0.19 * specific)


@lru_cache(maxsize=16)
def _cap_pattern(nouns: tuple[str, ...]) -> re.Pattern[str] | None:
    if not nouns:
        return None
    alternatives = "|".join(re.escape(n) for n in sorted(nouns, key=len, reverse=True))
    return re.compile(rf"\b{_CAP_WORDS}\s+(\d{{1,4}})\s+(?:[a-z]+\s+){{0,2}}?({alternatives})\b")


def _caps(text: str, scope: frozenset[str], nouns: tuple[str, ...]) -> tuple[Cap, ...]:
    pattern = _cap_pattern(nouns)
    if pattern is None:
        return ()
    low = text.lower()
    caps = [Cap("exactly" if m.group(1) == "exactly" else "at_most", int(m.group(2)), "items", scope)
            for m in pattern.finditer(low)]
    caps += [Cap("at_most", int(m.group(2)), "pages", scope) for m in _PAGE_CAP.finditer(low)]
    return tuple(c for c in caps if c.n > 0)


def read_item(text: str, behaviours: tuple[Behaviour, ...], entities: frozenset[str],
              cap_nouns: tuple[str, ...] = ()) -> Item:
    """Which behaviours one step or pitfall instructs or contradicts (concept cues, §4.3)."""
    found = content_words(text)
    stems = frozenset(found)
    pos: set[str] = set()
    anti: set[str] = set()
    for b in behaviours:
        if b.concept.addressed_by(stems, len(found)):
            (anti if contradicts(b.concept, text) else pos).add(b.name)
    padded = " " + " ".join(tokens(text)) + " "
    scope = frozenset(e for e in entities if f" {e} " in padded)
    return Item(frozenset(pos), frozenset(anti), scope, _caps(text, scope, cap_nouns))


def analyse(skill: dict[str, Any], behaviours: tuple[Behaviour, ...], entities: frozenset[str],
            cap_nouns: tuple[str, ...] = ()) -> SkillProfile:
    """Build the profile of a skill dict (SkillSpec fields) for one family."""
    steps = [str(s) for s in skill.get("steps") or []]
    pitfalls = [str(p) for p in skill.get("pitfalls") or []]
    description = str(skill.get("description") or "")
    when = str(skill.get("when_to_use") or "")
    items = tuple(read_item(text, behaviours, entities, cap_nouns) for text in steps + pitfalls)
    chars = len(description) + len(when) + sum(map(len, steps)) + sum(map(len, pitfalls))
    by_length = max(ADHERENCE_FLOOR, 1.0 - max(0, chars - ADHERENCE_FREE_CHARS) / ADHERENCE_SPAN_CHARS)
    adherence = by_length * max(0.6, 1.0 - 0.03 * max(0, len(items) - ADHERENCE_FREE_ITEMS))
    return SkillProfile(name=str(skill.get("name") or ""), chars=chars, items=items, adherence=adherence,
                        skill_tokens=30 + chars // 4, trigger_stems=frozenset(content_words(description + " " + when)))
