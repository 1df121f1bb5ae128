"""Concept-level cues: how the simulated agent recognises guidance, in any wording.

Each behaviour has a **concept**: a few content words, stemmed. A skill item (one step or
pitfall) *addresses* the concept when its own stems cover it — any one key word, or any two
supporting words — whatever the surrounding wording, word order or inflection ("Deduplicate
the ids", "duplicates must go", "keep each id only once, pages overlap" all address dedupe).
A long item needs more supporting words (`threshold`), so filler that mentions many words in
passing does not count as guidance.

An item that addresses a concept instructs it, unless one of its clauses **contradicts** it:

- it prohibits one of the concept's *act* words ("do not retry", "never call get_recipe",
  "no retries", "without retrying") and restricts nothing after it — "do not fetch details for
  *every* dish" is a restriction, not a prohibition;
- or it starts with a bare command of one of the concept's *lapse* words ("Skip rate-limited
  calls", "Trust the total") — a gerund ("Skipping a page drops dishes") describes, it does not
  command, and a prohibited lapse ("never skip") instructs.

Descriptive negation ("the count was not computed") never contradicts: only imperative forms
do. Nothing here knows any family; families supply the words (docs/skillcraft_sim.md §4.3).
"""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

import yaml

_TOKEN = re.compile(r"[a-z0-9]+")
_CLAUSE = re.compile(r"[.;:!?\n]+|\s[-–—]\s")

# Word lists (words.yaml): stopwords, negators, filler after a negator, restrictors, lead-ins.
_WORDS = yaml.safe_load((Path(__file__).parent / "words.yaml").read_text(encoding="utf-8"))
STOPWORDS, NEGATORS, _FILLER, RESTRICTORS, _LEAD_INS = (
    frozenset(_WORDS[k].split()) for k in ("stopwords", "negators", "filler", "restrictors", "lead_ins"))


def _verb_ending(w: str) -> str:
    for suffix in ("ingly", "edly", "ing", "ed"):
        base = w[: -len(suffix)]
        if w.endswith(suffix) and len(base) >= 3 and any(c in "aeiouy" for c in base):
            if len(base) > 3 and base[-1] == base[-2] and base[-1] not in "lsz":
                return base[:-1]  # stopped -> stop
            return base + "e" if base.endswith(("at", "bl", "iz", "is")) else base  # paginat(ing) -> paginate
    return w


@lru_cache(maxsize=8192)
def stem(word: str) -> str:
    """A small Porter-style stemmer: one stem for paginate / paginating / pagination, retry /
    retries / retried, duplicate / duplicates, city / cities. Deterministic, no data files."""
    w = word.lower()
    if len(w) <= 3:
        return w
    if w.endswith("sses"):
        w = w[:-2]
    elif w.endswith(("ies", "ied")) and len(w) > 4:
        w = w[:-3] + "y"
    elif w.endswith("s") and not w.endswith(("ss", "us", "is")):
        w = w[:-1]
    w = _verb_ending(w)
    for suffix in ("isation", "ization", "ation", "ition", "ity", "ment", "ness", "ise", "ize", "ate",
                   "ion", "ive", "ly"):
        if w.endswith(suffix) and len(w) - len(suffix) >= 3:
            w = w[: -len(suffix)]
            break
    if len(w) > 3 and w.endswith("e"):
        w = w[:-1]
    if len(w) > 3 and w.endswith("y"):
        w = w[:-1] + "i"
    return w


_FOLD = str.maketrans({"ł": "l", "ø": "o", "ß": "ss", "đ": "d", "æ": "ae", "œ": "oe", "ı": "i", "þ": "th"})


def fold(text: str) -> str:
    """Lower case, accents removed ("Zürich" -> "zurich", "Łódź" -> "lodz")."""
    decomposed = unicodedata.normalize("NFKD", text.lower().translate(_FOLD))
    return "".join(c for c in decomposed if not unicodedata.combining(c))


def tokens(text: str) -> list[str]:
    """Lower-case, accent-folded word tokens; punctuation and underscores split words
    ("rate_limited" -> rate, limited)."""
    return _TOKEN.findall(fold(text).replace("don't", "dont").replace("don’t", "dont"))


def content_words(text: str) -> list[str]:
    """The stems of the content words of a text, in order (repeats kept)."""
    return [stem(t) for t in tokens(text) if t not in STOPWORDS and not t.isdigit()]


def words(text: str) -> frozenset[str]:
    """The stems of a word list (how concepts are written down)."""
    return frozenset(stem(t) for t in tokens(text))


# An item longer than this many content words needs one more supporting word per EXTRA_WORDS:
# a rambling paragraph does not address a concept just by mentioning its words in passing.
FREE_WORDS = 14
EXTRA_WORDS = 8


def threshold(n_content_words: int) -> int:
    return 2 + max(0, (n_content_words - FREE_WORDS) // EXTRA_WORDS)


@dataclass(frozen=True)
class Concept:
    """What a behaviour is about, as stemmed content words.

    `key`: any one of these addresses the concept; `support`: any two do (a key word and a
    supporting word do too). `acts`: prohibiting one contradicts the concept. `lapses`: the wrong
    action; a bare command of one contradicts it (matched on the unstemmed base form)."""

    key: frozenset[str]
    support: frozenset[str] = frozenset()
    acts: frozenset[str] = frozenset()
    lapses: frozenset[str] = frozenset()

    @classmethod
    def of(cls, key: str, support: str = "", acts: str = "", lapses: str = "") -> Concept:
        return cls(words(key), words(support), words(acts), frozenset(lapses.split()))

    def addressed_by(self, stems: frozenset[str], n_words: int = 0) -> bool:
        """Any key word or two supporting words (more in a long item, see `threshold`)."""
        return 2 * len(self.key & stems) + len(self.support & stems) >= threshold(n_words)


def _prohibited(clause: list[str]) -> list[tuple[str, int]]:
    """(stem of each word the clause prohibits, its position)."""
    found = []
    for i, tok in enumerate(clause):
        if not (tok in NEGATORS or (tok == "not" and i > 0 and clause[i - 1] == "do")):
            continue
        if (j := next((k for k in range(i + 1, len(clause)) if clause[k] not in _FILLER), None)) is not None:
            found.append((stem(clause[j]), j))
    return found


def contradicts(concept: Concept, text: str) -> bool:
    """Does some clause of `text` prohibit the concept's act or command its lapse?"""
    for clause in filter(None, map(tokens, _CLAUSE.split(text.lower()))):
        for word, pos in _prohibited(clause):
            if word in concept.acts and not any(t in RESTRICTORS for t in clause[pos + 1:]):
                return True
    for part in re.split(r"[.;:!?\n,]+|\s[-–—]\s", text.lower()):
        sub = tokens(part)
        k = next((k for k in range(len(sub) - 1) if sub[k] not in _LEAD_INS), len(sub) - 1)
        if sub and sub[k] in concept.lapses:
            return True
    return False
