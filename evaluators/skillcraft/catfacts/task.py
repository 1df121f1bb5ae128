"""The catfacts family's task model: the task statement, its parser and the ground truth.

A case's `metadata["task"]` holds the parameters (a keyword and / or a length range, how many
facts, whether an average length is asked, fault rate, output file); `expected` is the artifact a
flawless agent writes: the first N distinct facts of the listing that pass the filter, as plain
untruncated text with their lengths, their count and (when asked) their average length
(docs/skillcraft_sim.md §3).
"""

from __future__ import annotations

import html
import re
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

from evaluators.skillcraft.catfacts.world import CatFactsWorld
from evaluators.skillcraft.concepts import words
from evaluators.skillcraft.family import expected_of, finish_instruction, reading_task, scale_level
from gepa_lab.core.contracts import Case

_WORD = re.compile(r"[A-Za-z]+")
_SPACE = re.compile(r"\s+")


@dataclass(frozen=True)
class Filter:
    keyword: str | None
    min_length: int | None
    max_length: int | None


@dataclass(frozen=True)
class CatFactsTask:
    scale: str
    level: int
    filter: Filter
    n: int
    average: bool
    fault_rate: float
    output_file: str
    expected: dict[str, Any]
    entities: frozenset[str]
    task_words: frozenset[str]
    task_tokens: int


@lru_cache(maxsize=8192)
def normalise(text: str) -> str:
    """What makes two facts the same: case, spacing and end punctuation ignored, entities decoded."""
    return _SPACE.sub(" ", html.unescape(text)).strip().rstrip(".!").strip().lower()


@lru_cache(maxsize=8192)
def _words(text: str) -> frozenset[str]:
    return frozenset(w.lower() for w in _WORD.findall(text))


def mentions(text: str, keyword: str) -> bool:
    """The keyword as a whole word, any case, or its plural ("sleep", "Sleep", "sleeps"; not "asleep")."""
    found = _words(text)
    return keyword in found or keyword + "s" in found


def passes(text: str, length: int, f: Filter) -> bool:
    if f.keyword and not mentions(text, f.keyword):
        return False
    if f.min_length is not None and length < f.min_length:
        return False
    return f.max_length is None or length <= f.max_length


def task_params(f: Filter, n: int, average: bool, fault_rate: float, output_file: str) -> dict[str, Any]:
    return {"keyword": f.keyword, "min_length": f.min_length, "max_length": f.max_length, "n": n,
            "average": average, "fault_rate": fault_rate, "output_file": output_file}


def _filter(params: dict[str, Any]) -> Filter:
    def opt(k: str) -> int | None:
        return None if params.get(k) is None else int(params[k])
    keyword = params.get("keyword")
    return Filter(None if keyword is None else str(keyword), opt("min_length"), opt("max_length"))


def ground_truth(world: CatFactsWorld, params: dict[str, Any]) -> dict[str, Any]:
    """The artifact a flawless agent writes (stored as the case's `expected`)."""
    f, n = _filter(params), int(params["n"])
    facts: list[dict[str, Any]] = []
    seen: set[str] = set()
    for entry in world.facts:
        text = html.unescape(entry["fact"])
        key = normalise(text)
        if key in seen:
            continue
        seen.add(key)
        if passes(text, len(text), f):
            facts.append({"fact": text, "length": len(text)})
            if len(facts) == n:
                break
    out: dict[str, Any] = {"facts": facts, "count": len(facts)}
    if params.get("average"):
        out["average_length"] = round(sum(x["length"] for x in facts) / len(facts), 1) if facts else None
    return out


def describe(f: Filter) -> str:
    parts = []
    if f.keyword:
        parts.append(f"mention the word \"{f.keyword}\" (a whole word in any case, or its plural)")
    if f.min_length is not None and f.max_length is not None:
        parts.append(f"are between {f.min_length} and {f.max_length} characters long")
    elif f.max_length is not None:
        parts.append(f"are at most {f.max_length} characters long")
    elif f.min_length is not None:
        parts.append(f"are at least {f.min_length} characters long")
    return " and ".join(parts)


def task_statement(params: dict[str, Any], variant: int) -> str:
    """The task text the agent (and the reflector) reads; `variant` varies the wording."""
    f = _filter(params)
    opener = [
        "Collect cat facts from the local cat-facts API.",
        "Using the cat-facts tools, put together a list of cat facts.",
        "Gather facts about cats from the offline cat-facts service.",
    ][variant % 3]
    lines = [
        opener,
        "Tools: get_facts(page) returns one page {current_page, last_page, next_page_url, data: [{id, fact, "
        "length}]}; get_fact(id) returns one fact {id, fact, length}; get_random_fact(max_length) returns one "
        "random fact {fact, length}; write_file(path, content); claim_done().",
        f"Find the first {params['n']} distinct facts, in listing order, that {describe(f)}. Facts are the same "
        "when their texts differ only in case, spacing or end punctuation; lengths count the characters of the "
        "plain text.",
        "Under \"facts\" give one {fact, length} object per fact, with the fact as plain text, and report \"count\""
        + (" and \"average_length\" (mean length, 1 decimal)." if params.get("average") else "."),
        finish_instruction(params["output_file"]),
    ]
    return "\n".join(lines)


def parse_task(world: CatFactsWorld, case: Case) -> CatFactsTask:
    scale, level = scale_level(case, "catfacts")
    with reading_task(case, "catfacts") as params:
        f, n = _filter(params), int(params["n"])
    if n < 1:
        raise ValueError(f"case {case.id!r}: a catfacts task asks for at least one fact, got n={n}")
    if f.keyword is None and f.min_length is None and f.max_length is None:
        raise ValueError(f"case {case.id!r}: a catfacts task needs a keyword or a length limit")
    if f.keyword is not None and f.keyword not in world.keywords:
        raise ValueError(f"case {case.id!r}: unknown catfacts keyword {f.keyword!r}")
    expected = expected_of(case, lambda: ground_truth(world, params))
    wanted = "fact facts distinct" + (" word" if f.keyword else "") + (
        " length characters" if f.max_length is not None or f.min_length is not None else "")
    return CatFactsTask(
        scale=scale, level=level, filter=f, n=n, average=bool(params.get("average")),
        fault_rate=float(params.get("fault_rate", 0.0)), output_file=str(params.get("output_file", "facts.json")),
        expected=expected, entities=frozenset({f.keyword} if f.keyword else ()), task_words=words(wanted),
        task_tokens=len(case.input) // 4,
    )


def entity_names(world: CatFactsWorld) -> frozenset[str]:
    """The filter keywords: an item naming one applies only to tasks about it."""
    return frozenset(world.keywords)
