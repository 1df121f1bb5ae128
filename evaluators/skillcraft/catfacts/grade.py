"""The catfacts family's rubric: compares the written fact list with the ground truth.

count (critical: as many facts as asked for), unique (critical: no fact twice), filter (critical:
every listed fact passes the filter), text (critical: plain, whole texts — no HTML entities, no
truncated fact), complete (the expected facts), lengths (each length is its text's), and
average_length when asked; no artifact is one failed critical check (docs/skillcraft_sim.md §5).
"""

from __future__ import annotations

import html
import re
from typing import Any

from evaluators.skillcraft.catfacts.task import CatFactsTask, mentions, normalise
from evaluators.skillcraft.family import Check

_ENTITY = re.compile(r"&(?:#\d+|#x[0-9a-fA-F]+|[a-zA-Z]+);")


def _short(text: str) -> str:
    return text if len(text) <= 40 else text[:37] + "..."


def grade(task: CatFactsTask, artifact: dict[str, Any] | None) -> list[Check]:
    """Rubric checks of the written artifact against the ground truth."""
    if artifact is None:
        return [Check("artifact", False, True, f"no artifact: {task.output_file} was not written")]
    exp = task.expected
    raw = artifact.get("facts") if isinstance(artifact.get("facts"), list) else []
    assert isinstance(raw, list)
    facts = [x for x in raw if isinstance(x, dict) and isinstance(x.get("fact"), str)]
    texts = [str(x["fact"]) for x in facts]
    f = task.filter
    checks: list[Check] = []

    count = artifact.get("count")
    want = exp["count"]
    msg = "" if count == want else (
        f"count is {count}, expected {want}"
        + (f": {want - len(facts)} of the {want} facts asked for are missing" if len(facts) < want else ""))
    checks.append(Check("count", count == want, True, msg))

    keys = [normalise(t) for t in texts]
    dupes = len(keys) - len(set(keys))
    checks.append(Check("unique", dupes == 0, True, "" if not dupes else (
        f"the list has {dupes} duplicate fact(s) (the same text up to case, spacing or punctuation)")))

    too_long = too_short = no_word = 0
    for t in texts:
        plain = html.unescape(t)
        if f.max_length is not None and len(plain) > f.max_length:
            too_long += 1
        if f.min_length is not None and len(plain) < f.min_length:
            too_short += 1
        if f.keyword and not mentions(plain, f.keyword):
            no_word += 1
    bad = []
    if too_long:
        bad.append(f"{too_long} longer than {f.max_length} characters in length")
    if too_short:
        bad.append(f"{too_short} shorter than {f.min_length} characters in length")
    if no_word:
        bad.append(f"{no_word} do not contain the keyword \"{f.keyword}\" as a whole word")
    n_bad = too_long + too_short + no_word
    checks.append(Check("filter", not bad, True, "" if not bad else (
        f"{n_bad} listed fact(s) do not pass the filter: " + ", ".join(bad))))

    escaped = [t for t in texts if _ENTITY.search(t)]
    cut = [t for t in texts if t.endswith("…")]
    parts = []
    if escaped:
        example = _ENTITY.search(escaped[0]).group(0)  # type: ignore[union-attr]
        parts.append(f"{len(escaped)} fact(s) contain HTML entities instead of the characters they stand for, "
                     f"e.g. {example}")
    if cut:
        parts.append(f"{len(cut)} fact(s) are truncated: they end with … and the rest of the text is missing")
    checks.append(Check("text", not parts, True, "; ".join(parts)))

    have = set(keys)
    missing = [x["fact"] for x in exp["facts"] if normalise(x["fact"]) not in have]
    msg = ""
    if missing:
        k, n, eg = len(missing), len(exp["facts"]), _short(missing[0])
        if dupes:
            msg = f"duplicate facts took the places of {k} of the {n} expected facts (e.g. \"{eg}\")"
        elif len(facts) < n:
            msg = f"the listing was not read far enough: {k} of the {n} expected facts are missing (e.g. \"{eg}\")"
        else:
            msg = f"{k} of {n} expected facts missing (e.g. \"{eg}\")"
    checks.append(Check("complete", not missing, False, msg))

    wrong = sum(1 for x in facts if x.get("length") != len(str(x["fact"])))
    checks.append(Check("lengths", wrong == 0, True, "" if not wrong else (
        f"{wrong} length value(s) differ from the number of characters of the fact text")))

    if "average_length" in exp:
        got = artifact.get("average_length")
        ok = isinstance(got, (int, float)) and exp["average_length"] is not None and abs(got - exp["average_length"]) <= 0.05
        checks.append(Check("average_length", ok, False, f"average_length is {got}, expected {exp['average_length']}"))
    return checks
