"""Turning a problem statement into guidance, in the reflector's own words, and keeping a list of
guidance short: near-duplicates merged, the whole skill within a character budget.

The rewrites are plain English grammar, not knowledge of any family: "X was not computed" →
"make sure X is computed"; "missing Y" → "make sure no Y is missing"; "A must B" stays a rule;
"duplicate Z" → "keep each Z once"; anything else → "avoid this: …".
"""

from __future__ import annotations

import random
import re

from evaluators.skillcraft.reflectors.text import capitalise, content, jaccard, sentence

_BE = {"was": "is", "were": "are", "is": "is", "are": "are"}
_LEAD = re.compile(r"^(?:so|and|but|because|then|thus|hence)\s+", re.IGNORECASE)
MAX_ITEM_CHARS = 220
DUPLICATE = 0.6  # items this similar (Jaccard of content words) say the same thing


def _subject(text: str) -> str:
    """The last clause before the verb: "the list is complete, so the count" -> "the count"."""
    part = re.split(r",\s*|:\s*", text)[-1]
    return _LEAD.sub("", part).strip()


def _rule(statement: str, previous: str) -> str | None:
    s = re.sub(r"\(s\)", "", statement).strip(" .")
    if ": " in s:  # "head: explanation" - try the explanation, then the head
        head, tail = s.split(": ", 1)
        return _rule(tail, head) or _rule(head, previous)
    low = s.lower()
    if m := re.match(r"^(?P<a>.+?)\s+must\s+(?P<b>.+)$", s):
        return f"{_subject(m.group('a'))} must {m.group('b')}"
    m = re.match(r"^(?P<subj>.+?)\s+(?P<be>was|were|is|are)\s+not\s+(?P<rest>.+)$", s)
    if m and _subject(m.group("subj")):
        rest = re.split(r",\s*so\b|,\s*which\b", m.group("rest"))[0]
        return f"make sure {_subject(m.group('subj'))} {_BE[m.group('be')]} {rest}"
    if m := re.search(r"\bnot\s+(?P<verb>\w+ed)\b", s):
        subject = _subject(re.sub(r"\(s\)", "", previous)) if previous else "such call"
        return f"make sure every {subject} is {m.group('verb')}"
    m = re.match(r"^(?:missing\s+(?P<a>.+)|(?P<b>.+?)\s+(?:(?:is|are|were|was)\s+)?missing)$", s, re.IGNORECASE)
    if m:  # "missing X" or "X (is) missing"; a "missing" inside a longer clause is left alone
        what = (m.group("a") or m.group("b")).strip(" :,")
        plural = what.split()[-1].endswith("s") and not what.endswith("ss")
        return f"make sure no {what} {'are' if plural else 'is'} missing"
    if m := re.search(r"\bduplicates?\s+(?P<what>[\w\s-]+?)(?:\s+\w+ed\b.*)?$", s, re.IGNORECASE):
        what = m.group("what").strip()
        return f"keep each {what} only once, no duplicate {what}"
    if m := re.match(r"^(?P<what>.+?)\s+(?P<verb>dropped|skipped|ignored|lost|omitted|truncated)$", s):
        return f"make sure no {m.group('what')} is {m.group('verb')}"
    if re.search(r"\bdid not (?:ask|need|request|require)", low):
        subject = re.split(r"\s+\w+ed\b", s)[0].strip()
        return f"do only what the task asks for: no {subject} beyond that"
    return None


def remedy(problem: str, fix: str = "") -> str:
    """The fix for a problem statement, in imperative form (`fix` when the finding has one)."""
    if fix:
        return fix
    parts = [p for p in problem.split("; ") if p]
    fixes = list(dict.fromkeys(found for i, part in enumerate(parts) if (found := _rule(part, parts[i - 1] if i else ""))))
    return "; ".join(fixes[:2]) if fixes else f"avoid this: {problem}"


def as_step(problem: str, rng: random.Random, fix: str = "") -> str:
    fixed = remedy(problem, fix)
    template = rng.choice(("{fix}", "{fix}", "Before writing the output, {fix}", "Always {fix}"))
    return _fit(sentence(fixed if fixed.startswith("avoid") else template.format(fix=fixed)))


def as_pitfall(problem: str, rng: random.Random, fix: str = "") -> str:
    first = problem.split("; ")[0]
    if len(first) > 90:
        first = first[:90].rsplit(" ", 1)[0]
    template = rng.choice(("{Fix} (past runs failed: {problem})", "Watch for this: {problem}. {Fix}",
                           "Past runs failed because {problem}: {fix}"))
    fixed = remedy(problem, fix)
    return _fit(sentence(template.format(problem=first, fix=fixed, Fix=capitalise(fixed))))


def checklist(problems: list[tuple[str, str]]) -> str:
    """One final-check step naming the problems seen (short remedies); (problem, fix) pairs."""
    fixes = [remedy(p, f).split(";")[0].split(" (")[0] for p, f in problems[:3]]
    return _fit(sentence("Before writing the output, check it against the task: " + "; ".join(fixes)))


def _fit(text: str) -> str:
    if len(text) <= MAX_ITEM_CHARS:
        return text
    cut = text[:MAX_ITEM_CHARS]
    cut = cut[: max(cut.rfind(";"), cut.rfind(","), cut.rfind(" "))]
    return cut.rstrip(" ,;:") + "."


def similar(a: str, b: str) -> float:
    return jaccard(content(a), content(b))


def insert(items: list[str], text: str, component: str) -> list[str]:
    """Add `text`; a near-duplicate is replaced instead. New steps go before the last step (the
    one that produces the output) when there are several."""
    best = max(range(len(items)), key=lambda i: similar(items[i], text), default=None)
    if best is not None and similar(items[best], text) >= DUPLICATE:
        return items[:best] + [text if len(text) >= len(items[best]) else items[best]] + items[best + 1:]
    if component == "steps" and len(items) >= 2:
        return items[:-1] + [text] + items[-1:]
    return items + [text]


def merge_duplicates(items: list[str]) -> list[str]:
    """Drop items that repeat an earlier one (keeping the longer wording in the earlier place)."""
    out: list[str] = []
    for text in items:
        j = next((k for k, kept in enumerate(out) if similar(kept, text) >= DUPLICATE), None)
        if j is None:
            out.append(text)
        elif len(text) > len(out[j]):
            out[j] = text
    return out


def shorten(text: str) -> str:
    """The first clause of an item (what is left when the explanation is cut)."""
    for sep in (" — ", "; ", ": ", ". "):
        head = text.split(sep)[0]
        if len(head) >= 30 and head != text:
            return head.rstrip(".") + "."
    return text


def within_budget(items: list[str], others: int, budget: int, keep: str | None = None) -> list[str] | None:
    """Shorten the longest items (never `keep`, the new one) until the skill fits `budget`
    characters, with `others` characters outside this list; None if it cannot fit."""
    out = list(items)
    while others + sum(map(len, out)) > budget:
        order = sorted((i for i, t in enumerate(out) if t != keep), key=lambda i: -len(out[i]))
        for i in order:
            short = shorten(out[i])
            if short != out[i]:
                out[i] = short
                break
        else:
            return None
    return out
