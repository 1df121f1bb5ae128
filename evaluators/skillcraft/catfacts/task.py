"""The catfacts family's task: its parser, the ground truth and the rubric.

A case's `metadata["task"]` holds the parameters (a keyword and / or a length range, how many
facts, whether an average length is asked, fault rate, output file); `expected` is the artifact a
flawless agent writes: the first N distinct facts of the listing that pass the filter, as plain
untruncated text with their lengths, their count and (when asked) their average length
(docs/skillcraft_sim.md §3.5). The rubric: count (critical: as many facts as asked for), unique
(critical: no fact twice), filter (critical: every listed fact passes the filter), text (critical:
plain, whole texts — no HTML entities, no truncated fact), complete (the expected facts), lengths
(each length is its text's), and average_length when asked (§5).
"""

from __future__ import annotations

import html
import re
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

from evaluators.skillcraft.catfacts.world import CatFactsWorld
from evaluators.skillcraft.concepts import words
from evaluators.skillcraft.family import Check, Task, common, part, reading_task
from gepa_lab import Case

_WORD = re.compile(r"[A-Za-z]+")
_SPACE = re.compile(r"\s+")


@dataclass(frozen=True)
class Filter:
    keyword: str | None
    min_length: int | None
    max_length: int | None


@dataclass(frozen=True)
class CatFactsTask(Task):
    filter: Filter
    n: int
    average: bool


@lru_cache(maxsize=8192)
def same_key(text: str) -> str:
    """What makes two facts the same as written: case, spacing and end punctuation ignored."""
    return _SPACE.sub(" ", text).strip().rstrip(".!").strip().lower()


@lru_cache(maxsize=8192)
def normalise(text: str) -> str:
    """The key of a fact with its entities decoded."""
    return same_key(html.unescape(text))


@lru_cache(maxsize=8192)
def _words(text: str) -> frozenset[str]:
    return frozenset(w.lower() for w in _WORD.findall(text))


def mentions(text: str, keyword: str) -> bool:
    """The keyword as a whole word, any case, or its plural ("sleep", "Sleep", "sleeps"; not "asleep")."""
    return not _words(text).isdisjoint((keyword, keyword + "s"))


def passes(text: str, length: int, f: Filter, whole_words: bool = True) -> bool:
    """Does a fact pass the filter? (`whole_words=False`: the keyword as a case-sensitive substring.)"""
    return ((not f.keyword or (mentions(text, f.keyword) if whole_words else f.keyword in text))
            and (f.min_length is None or length >= f.min_length) and (f.max_length is None or length <= f.max_length))


def _filter(params: dict[str, Any]) -> Filter:
    keyword = params.get("keyword")
    return Filter(None if keyword is None else str(keyword),
                  *(None if params.get(k) is None else int(params[k]) for k in ("min_length", "max_length")))


def ground_truth(world: CatFactsWorld, params: dict[str, Any]) -> dict[str, Any]:
    """The artifact a flawless agent writes (stored as the case's `expected`)."""
    f, n = _filter(params), int(params["n"])
    unique: dict[str, str] = {}  # the first text of each distinct fact, in listing order
    for entry in world.facts:
        text = html.unescape(entry["fact"])
        unique.setdefault(normalise(text), text)
    facts = [{"fact": t, "length": len(t)} for t in unique.values() if passes(t, len(t), f)][:n]
    return {"facts": facts, **summary(facts, bool(params.get("average")))}


def summary(facts: list[dict[str, Any]], average: bool) -> dict[str, Any]:
    """The count of the facts and, when asked, their average length."""
    out: dict[str, Any] = {"count": len(facts)}
    if average:
        out["average_length"] = round(sum(x["length"] for x in facts) / len(facts), 1) if facts else None
    return out


def parse_task(world: CatFactsWorld, case: Case) -> CatFactsTask:
    with reading_task(case, "catfacts") as params:
        f, n = _filter(params), int(params["n"])
    if n < 1:
        raise ValueError(f"case {case.id!r}: a catfacts task asks for at least one fact, got n={n}")
    if f.keyword is None and f.min_length is None and f.max_length is None:
        raise ValueError(f"case {case.id!r}: a catfacts task needs a keyword or a length limit")
    if f.keyword is not None and f.keyword not in world.keywords:
        raise ValueError(f"case {case.id!r}: unknown catfacts keyword {f.keyword!r}")
    wanted = "fact facts distinct" + (" word" if f.keyword else "") + (
        " length characters" if f.max_length is not None or f.min_length is not None else "")
    return CatFactsTask(**common(case, params, "facts.json", lambda: ground_truth(world, params)), filter=f, n=n,
                        average=bool(params.get("average")), entities=frozenset({f.keyword} if f.keyword else ()),
                        task_words=words(wanted))


def entity_names(world: CatFactsWorld) -> frozenset[str]:
    """The filter keywords: an item naming one applies only to tasks about it."""
    return frozenset(world.keywords)


_ENTITY = re.compile(r"&(?:#\d+|#x[0-9a-fA-F]+|[a-zA-Z]+);")


def grade(task: CatFactsTask, artifact: dict[str, Any]) -> list[Check]:
    """Rubric checks of the written artifact against the ground truth."""
    exp, f = task.expected, task.filter
    facts = [x for x in part(artifact, "facts", list) if isinstance(x, dict) and isinstance(x.get("fact"), str)]
    texts = [str(x["fact"]) for x in facts]
    count, want = artifact.get("count"), exp["count"]
    checks = [Check("count", count == want, True, "" if count == want else f"count is {count}, expected {want}"
                    + (f": {want - len(facts)} of the {want} facts asked for are missing" if len(facts) < want else ""))]

    keys = [normalise(t) for t in texts]
    dupes = len(keys) - len(set(keys))
    checks.append(Check("unique", dupes == 0, True, "" if not dupes else (
        f"the list has {dupes} duplicate fact(s) (the same text up to case, spacing or punctuation)")))

    plain = [html.unescape(t) for t in texts]
    failing = {  # what fails the filter -> how many listed facts
        f"longer than {f.max_length} characters in length": sum(
            f.max_length is not None and len(t) > f.max_length for t in plain),
        f"shorter than {f.min_length} characters in length": sum(
            f.min_length is not None and len(t) < f.min_length for t in plain),
        f"do not contain the keyword \"{f.keyword}\" as a whole word": sum(
            bool(f.keyword and not mentions(t, f.keyword)) for t in plain),
    }
    bad = [f"{n} {what}" for what, n in failing.items() if n]
    checks.append(Check("filter", not bad, True, "" if not bad else (
        f"{sum(failing.values())} listed fact(s) do not pass the filter: " + ", ".join(bad))))

    escaped = [m.group(0) for t in texts if (m := _ENTITY.search(t))]
    cut = sum(t.endswith("…") for t in texts)
    parts = [f"{len(escaped)} fact(s) contain HTML entities instead of the characters they stand for, "
             f"e.g. {escaped[0]}"] if escaped else []
    parts += [f"{cut} fact(s) are truncated: they end with … and the rest of the text is missing"] if cut else []
    checks.append(Check("text", not parts, True, "; ".join(parts)))

    have = set(keys)
    missing = [x["fact"] for x in exp["facts"] if normalise(x["fact"]) not in have]
    msg = ""
    if missing:
        k, n, eg = len(missing), len(exp["facts"]), missing[0] if len(missing[0]) <= 40 else missing[0][:37] + "..."
        msg = (f"duplicate facts took the places of {k} of the {n} expected facts" if dupes else
               f"the listing was not read far enough: {k} of the {n} expected facts are missing" if len(facts) < n
               else f"{k} of {n} expected facts missing") + f' (e.g. "{eg}")'
    checks.append(Check("complete", not missing, False, msg))

    wrong = sum(1 for x in facts if x.get("length") != len(str(x["fact"])))
    checks.append(Check("lengths", wrong == 0, True, "" if not wrong else (
        f"{wrong} length value(s) differ from the number of characters of the fact text")))

    if "average_length" in exp:
        got = artifact.get("average_length")
        ok = isinstance(got, (int, float)) and exp["average_length"] is not None and abs(got - exp["average_length"]) <= 0.05
        checks.append(Check("average_length", ok, False, f"average_length is {got}, expected {exp['average_length']}"))
    return checks
