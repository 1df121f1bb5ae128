"""The tuned reflector's vocabularies: per family, diagnoses keyed to its grader's messages and
remedies worded for its behaviours' concepts (vocabularies/<family>.yaml, with what they share in
vocabularies/shared.yaml), and the over-specific edits that copy counts, numbers or names out of
a record's `expected` (wordings in the family's file; code reads its family's expected output).

Co-designed with the simulator on purpose (docs/skillcraft_sim.md §8.2): results with it measure
an upper reference, not reflective search. Some remedies are vague and do nothing (the last
wording of each), a few are over-general rules that hurt other cases.
"""

from __future__ import annotations

import json
import random
import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any, TypeVar

import yaml

T = TypeVar("T")
HERE = Path(__file__).resolve().parent / "vocabularies"
SHARED_KEYS = ("artifact", "retry", "validate")  # steps / pitfalls a family may take from shared.yaml
Records = list[dict[str, Any]]
OverSpecific = Callable[[random.Random, Records], "str | None"]


@dataclass(frozen=True)
class Diagnosis:
    key: str
    summary: str  # rationale wording
    pattern: re.Pattern[str]
    weight: float  # how loudly a matching line argues for this fix
    related: tuple[str, ...]  # words that mark an existing step/pitfall about the same topic


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
    over_specific: OverSpecific
    # raw record inputs -> names an over-specific when_to_use / description could single out
    names_in_inputs: Callable[[str], list[str]]
    names_template: str  # " Especially for {names} dishes."
    final_step_word: str = "write"  # new steps go before the last step containing this word


def vocabulary_names() -> tuple[str, ...]:
    return tuple(sorted(p.stem for p in HERE.glob("*.yaml") if p.stem != "shared"))


@cache
def load_vocabulary(family: str) -> TunedVocabulary:
    """The family's vocabulary, or a ValueError naming the file and what is wrong in it."""
    path = HERE / f"{family}.yaml"
    try:
        return _vocabulary(family, yaml.safe_load(path.read_text(encoding="utf-8")),
                           yaml.safe_load((HERE / "shared.yaml").read_text(encoding="utf-8")))
    except (KeyError, TypeError, ValueError, IndexError, re.error) as exc:
        raise ValueError(f"{path}: not a tuned vocabulary ({type(exc).__name__}: {exc})") from exc


def _diagnosis(row: str | dict[str, Any], shared: dict[str, Any]) -> Diagnosis:
    if isinstance(row, str):  # a shared diagnosis by name
        row = {"key": row, **shared["diagnoses"][row]}
    elif row["key"] == "loop":  # the shared loop shape for this family's tool
        loop = {**shared["diagnoses"]["loop"], **row}
        row = {**loop, "pattern": loop["pattern"].format(tool=row["tool"], repeats=loop["repeats"])}
    return Diagnosis(str(row["key"]), str(row["summary"]), re.compile(str(row["pattern"]), re.IGNORECASE),
                     float(row["weight"]), tuple(map(str, row["related"])))


def _remedies(own: dict[str, list[str]], shared: dict[str, list[str]], fill: dict[str, str]) -> dict[str, tuple[str, ...]]:
    table = {k: [*own.get(k, ["<shared>"])] for k in SHARED_KEYS} | {k: v for k, v in own.items() if k not in SHARED_KEYS}
    out = {}
    for key, items in table.items():
        filled = [text.format(**fill) for text in shared.get(key, ())]
        out[key] = tuple(x for item in items for x in (filled if item == "<shared>" else [str(item)]))
    return out


def _vocabulary(family: str, data: dict[str, Any], shared: dict[str, Any]) -> TunedVocabulary:
    fill = {str(k): str(v) for k, v in data["fill"].items()}
    rules = shared["overgeneral"]
    overgeneral = tuple((str(r[0]), tuple(r[1])) for r in (rules[x] if isinstance(x, str) else x for x in data["overgeneral"]))
    return TunedVocabulary(
        diagnoses=tuple(_diagnosis(row, shared) for row in data["diagnoses"]),
        steps=_remedies(data["steps"], shared["steps"], fill),
        pitfalls=_remedies(data["pitfalls"], shared["pitfalls"], fill),
        overgeneral=overgeneral,
        bloat=tuple(text.format(**fill) for text in shared["bloat"]),
        task_words=tuple((str(w), str(label)) for w, label in data["task_words"]),
        when_templates=tuple(map(str, data["when_templates"])),
        description_templates=tuple(map(str, data["description_templates"])),
        default_phrase=str(data["default_phrase"]),
        over_specific=_chooser(*OVER_SPECIFIC[family], tuple(map(str, data["over_specific"]))),
        names_in_inputs=_names(**data["names"]),
        names_template=str(data["names_template"]),
    )


def _names(pattern: str, split: str = "", head: str = "") -> Callable[[str], list[str]]:
    """Names matched by `pattern` in the record inputs (the first non-empty group), each match
    split at `split` and cut at `head`: the first two, sorted."""
    regex = re.compile(pattern)

    def names_in_inputs(raw_inputs: str) -> list[str]:
        texts = [m if isinstance(m, str) else next((g for g in m if g), "") for m in regex.findall(raw_inputs)]
        return sorted({(p.split(head)[0] if head else p).strip() for t in texts
                       for p in (t.split(split) if split else [t])})[:2]

    return names_in_inputs


# -- over-specific edits: a count, a number or a name copied out of a record's expected output ---
def expected_items(records: Records, items: Callable[[Any], Iterable[T]]) -> list[T]:
    """What `items` finds in each record's `expected` (parsed JSON). A record whose expected is not
    JSON, or not of the shape `items` reads (a ValueError, TypeError or AttributeError), adds only
    what was found before the error."""
    found: list[T] = []
    for rec in records:
        try:
            for item in items(json.loads(str(rec.get("expected", "")))):
                found.append(item)
        except (ValueError, TypeError, AttributeError):
            continue
    return found


_COUNT_IN_EXPECTED = re.compile(r'"([A-Za-z][A-Za-z ]+)":\{"count":(\d+)')


def _chooser(find: Callable[[Records], list[T]], values: Callable[[T, list[T]], dict[str, Any]],
             wordings: tuple[str, ...]) -> OverSpecific:
    """An over-specific edit: one of the items `find` reads out of the records, in one of the
    `wordings` filled with its `values` (of that item and of all found); None when the records hold none."""
    def edit(rng: random.Random, records: Records) -> str | None:
        if not (found := find(records)):
            return None
        filled = values(rng.choice(found), found)
        return rng.choice(wordings).format(**filled)
    return edit


def _recipe_counts(records: Records) -> list[tuple[str, int]]:
    """(list name, count) of every list in the records' expected (a count pattern where they are not JSON)."""
    found: list[tuple[str, int]] = []
    for rec in records:
        try:
            expected = json.loads(str(rec.get("expected", "")))
            for section in ("category_dishes", "cuisine_dishes", "ingredient_dishes"):
                for name, entry in (expected.get(section) or {}).items():
                    found.append((name, int(entry["count"])))
        except (ValueError, TypeError, KeyError, AttributeError):
            found += [(n, int(c)) for n, c in _COUNT_IN_EXPECTED.findall(str(rec.get("expected", "")))]
    return found


# Per family: what finds the items of the records' expected, and what its over-specific wordings
# (`over_specific` in its vocabulary) are filled with, from one item (and all found).
OVER_SPECIFIC: dict[str, tuple[Callable[[Records], list[Any]], Callable[[Any, list[Any]], dict[str, Any]]]] = {
    "recipe": (_recipe_counts, lambda item, _: {"name": item[0], "count": item[1], "pages": max(1, -(-item[1] // 10))}),
    "weather": (lambda r: expected_items(r, lambda e: (e.get("cities") or {}).items()), lambda item, _: {
        "name": item[0].split(",")[0], "mean": (item[1].get("summary") or {}).get("mean_temperature_max"),
        "days": len(item[1].get("daily") or []), "latitude": item[1].get("latitude"),
        "longitude": item[1].get("longitude")}),
    "worldbank": (lambda r: expected_items(r, lambda e: (
        item for block in (e.get("indicators") or {}).values() for item in (block.get("countries") or {}).items())),
        lambda item, _: {"name": item[0], **{k: item[1].get(k) for k in ("change", "start_year", "iso3")}}),
    "catfacts": (lambda r: expected_items(r, lambda e: [e] if isinstance(e, dict) and e.get("facts") else []),
                 lambda exp, _: {"count": exp.get("count"), "first": exp["facts"][0]["fact"],
                                 "average": exp.get("average_length")}),
    "pokemon": (lambda r: expected_items(r, lambda e: [m for m in e.get("members") or [] if isinstance(m, dict)]),
                lambda m, found: {"species": m.get("species"), "total": m.get("base_stat_total"),
                                  "members": len(found), "pokemon": m.get("pokemon")}),
}
