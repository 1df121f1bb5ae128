"""How the simulated agent *reads* a skill: cue matching, scope, count caps, adherence, loading.

This is the only place the skill text influences the simulation, and it only moves
probabilities (never random draws), which keeps parent/child comparisons paired.
See docs/skillcraft_sim.md §4.2-§4.4.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

from evaluators.skillcraft.families import Behaviour

_NON_ALNUM = re.compile(r"[^a-z0-9]+")

# Over-specific counts ("collect exactly 17 dishes", "stop after 2 pages"): copied numbers that
# help only the cases they came from.
_ITEM_CAP = re.compile(
    r"\b(exactly|only|at most|first|top|up to|no more than|just|limit(?:ed)? to)\s+(\d{1,4})\s+"
    r"(?:[a-z]+\s+){0,2}?(dishes|dish ids|recipes|meals|results|items|ids|entries)\b"
)
_PAGE_CAP = re.compile(r"\b(only|at most|first|up to|no more than|just|after)\s+(\d{1,3})\s+pages?\b")

# Adherence: a skill longer than this many characters starts to be followed less reliably.
ADHERENCE_FREE_CHARS = 1600
ADHERENCE_SPAN_CHARS = 4000
ADHERENCE_FLOOR = 0.35
ADHERENCE_FREE_ITEMS = 16


def normalise(text: str) -> str:
    """Lower case, punctuation to spaces, padded so phrases match on word boundaries."""
    return " " + _NON_ALNUM.sub(" ", text.lower()).strip() + " "


def phrase_in(norm_text: str, phrase: str) -> bool:
    """`phrase` (or `stem*` prefix) occurs in text normalised by `normalise`."""
    if phrase.endswith("*"):
        return (" " + normalise(phrase[:-1]).strip()) in norm_text
    return normalise(phrase) in norm_text


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

    positive: frozenset[str]
    anti: frozenset[str]
    scope: frozenset[str]  # entity names mentioned; empty = applies to every task
    caps: tuple[Cap, ...]


@dataclass(frozen=True)
class SkillProfile:
    name: str
    chars: int
    items: tuple[Item, ...]
    adherence: float
    skill_tokens: int
    trigger_text: str  # normalised description + when_to_use

    def guidance(self, entities: frozenset[str]) -> tuple[frozenset[str], frozenset[str]]:
        """Behaviours instructed (and contradicted) by the items that apply to this task."""
        pos: set[str] = set()
        anti: set[str] = set()
        for item in self.items:
            if item.scope and not (item.scope & entities):
                continue  # a step about "Dessert" does nothing for a Seafood task
            pos |= item.positive
            anti |= item.anti
        return frozenset(pos), frozenset(anti)

    def caps_for(self, value: str) -> list[Cap]:
        """Copied counts that apply to one listing (unscoped ones apply to every listing)."""
        low = value.lower()
        return [cap for item in self.items for cap in item.caps if not cap.scope or low in cap.scope]

    def load_probability(self, trigger_words: Iterable[str], task_words: Iterable[str]) -> float:
        """P(the agent loads the skill) from how relevant description/when_to_use look."""
        general = sum(1 for w in trigger_words if phrase_in(self.trigger_text, w))
        words = list(task_words)
        specific = sum(1 for w in words if phrase_in(self.trigger_text, w)) / max(1, len(words))
        return min(0.985, 0.15 + 0.22 * min(general, 3) + 0.19 * specific)


_Pattern = tuple[str, bool]  # (normalised phrase without padding, is_prefix)


@lru_cache(maxsize=16)
def _compiled(behaviours: tuple[Behaviour, ...]) -> tuple[tuple[str, tuple[_Pattern, ...], tuple[_Pattern, ...]], ...]:
    def comp(cues: tuple[str, ...]) -> tuple[_Pattern, ...]:
        return tuple((normalise(c[:-1] if c.endswith("*") else c).strip(), c.endswith("*")) for c in cues)

    return tuple((b.name, comp(b.cues), comp(b.anti_cues)) for b in behaviours)


def _longest(norm: str, patterns: tuple[_Pattern, ...]) -> int:
    best = 0
    for phrase, prefix in patterns:
        if len(phrase) > best and ((" " + phrase) if prefix else (" " + phrase + " ")) in norm:
            best = len(phrase)
    return best


def _caps(text: str, scope: frozenset[str]) -> tuple[Cap, ...]:
    low = text.lower()
    caps = []
    for m in _ITEM_CAP.finditer(low):
        caps.append(Cap("exactly" if m.group(1) == "exactly" else "at_most", int(m.group(2)), "items", scope))
    for m in _PAGE_CAP.finditer(low):
        caps.append(Cap("at_most", int(m.group(2)), "pages", scope))
    return tuple(c for c in caps if c.n > 0)


def analyse(
    skill: dict[str, Any],
    behaviours: tuple[Behaviour, ...],
    entities: frozenset[str],
) -> SkillProfile:
    """Build the profile of a skill dict (SkillSpec fields) for one family."""
    steps = [str(s) for s in skill.get("steps") or []]
    pitfalls = [str(p) for p in skill.get("pitfalls") or []]
    description = str(skill.get("description") or "")
    when = str(skill.get("when_to_use") or "")
    table = _compiled(behaviours)
    items = []
    for text in steps + pitfalls:
        norm = normalise(text)
        pos: set[str] = set()
        anti: set[str] = set()
        for name, cues, anti_cues in table:
            # The longest matching phrase decides: "do not stop after the first page" (positive)
            # beats "stop after the first page" (anti), "do not retry" (anti) beats "retry".
            p = _longest(norm, cues)
            a = _longest(norm, anti_cues)
            if p and p >= a:
                pos.add(name)
            elif a:
                anti.add(name)
        scope = frozenset(e for e in entities if (" " + e + " ") in norm)
        items.append(Item(frozenset(pos), frozenset(anti), scope, _caps(text, scope)))
    chars = len(description) + len(when) + sum(map(len, steps)) + sum(map(len, pitfalls))
    adherence = 1.0
    if chars > ADHERENCE_FREE_CHARS:
        adherence = max(ADHERENCE_FLOOR, 1.0 - (chars - ADHERENCE_FREE_CHARS) / ADHERENCE_SPAN_CHARS)
    extra_items = len(items) - ADHERENCE_FREE_ITEMS
    if extra_items > 0:
        adherence *= max(0.6, 1.0 - 0.03 * extra_items)
    return SkillProfile(
        name=str(skill.get("name") or ""),
        chars=chars,
        items=tuple(items),
        adherence=adherence,
        skill_tokens=30 + chars // 4,
        trigger_text=normalise(description + " " + when),
    )
