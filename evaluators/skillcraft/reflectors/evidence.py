"""What went wrong, read from reflection records the way any reader would.

Two sources, neither tied to a family or to a grader's message format:

- **feedback text**: every line that states a problem (it contains a word such as missing, not,
  duplicate, error, instead, differ …), de-identified so it stays general; a line marked
  critical, or from a failing record, weighs more; metric lines (many numbers) are skipped;
- **trace JSON** (a list of tool calls with arguments and statuses): identical calls repeated
  many times (a loop), calls that failed with an error status and were never tried again, and
  paginated calls (an argument named page / cursor / offset) that only ever asked for the first.

Findings with near-identical wording are clustered; a cluster's weight grows with the records
it recurs in. See docs/skillcraft_sim.md §8.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from evaluators.skillcraft.reflectors.text import content, deidentify, is_problem, jaccard, statements

FAILING = 0.8  # a record scoring below this failed (SkillCraft scores put every pass at >= 0.8)
REPEAT = 4  # identical calls that count as a loop
PAGE_ARGS = ("page", "cursor", "offset", "page_token", "start")
OK_STATUSES = frozenset({"ok", "written", "empty", "success", "done", ""})
MERGE = 0.5  # findings this similar (Jaccard of content words) are one problem
_STATUS = re.compile(r"\d+(?:\.\d+)?%|:\s*(?:yes|no|true|false)\b", re.IGNORECASE)


@dataclass(frozen=True)
class Finding:
    """One problem statement from one record."""

    text: str  # de-identified, e.g. "the count was not computed from the collected ids"
    words: frozenset[str]  # its content stems
    weight: float
    fix: str = ""  # the remedy, when the reader knows it (trace patterns); else derived from text


@dataclass
class Problem:
    """A cluster of findings: one recurring failure."""

    text: str  # the representative wording (from the heaviest finding)
    words: frozenset[str]
    fix: str = ""
    weight: float = 0.0
    records: set[int] = field(default_factory=set)
    texts: Counter[str] = field(default_factory=Counter)


@dataclass(frozen=True)
class Evidence:
    problems: tuple[Problem, ...]  # heaviest first
    not_loaded: int  # failing records whose trace / feedback says the skill was not loaded
    token_heavy: int  # passing records that used a large share of their token budget
    inputs: tuple[str, ...]


def feedback_findings(feedback: str, failed: bool) -> list[Finding]:
    out = []
    for raw in feedback.splitlines():
        line = raw.strip()
        if not line or line.endswith(":") or _STATUS.search(line):
            continue  # blank, a heading, or a status / metrics line ("skill loaded: yes", "5% of …")
        critical = "critical" in line.lower()[:20]
        line = line.replace("[critical]", "").strip()
        found_parts = statements(deidentify(line))
        if not any(is_problem(s) for s in found_parts):
            continue
        # Problem statements, plus any rule the line states ("quantities must be in g, ml or pcs").
        parts = [s for s in found_parts if is_problem(s) or re.search(r"\b(?:must|should)\b", s)]
        problem = "; ".join(parts)
        if len(found := content(problem)) >= 2:
            out.append(Finding(problem, found, (2.0 if critical else 1.0) * (1.5 if failed else 1.0)))
    return out


def _calls(trace: str) -> list[dict[str, Any]]:
    try:
        data = json.loads(trace)
    except (TypeError, ValueError):
        return []
    calls = next((v for v in data.values() if isinstance(v, list) and v and isinstance(v[0], dict)
                  and "tool" in v[0]), []) if isinstance(data, dict) else []
    return [c for c in calls if isinstance(c, dict)]


def _args(call: dict[str, Any]) -> dict[str, Any]:
    return args if isinstance(args := call.get("args"), dict) else {}


def trace_findings(trace: str, failed: bool) -> list[Finding]:
    calls = _calls(trace)
    out: list[Finding] = []
    keys = [json.dumps([c.get("tool"), _args(c)], sort_keys=True) for c in calls]
    for key, n in Counter(keys).most_common(1):  # one loop finding per record
        if n < REPEAT:
            break
        tool = json.loads(key)[0]
        statuses = {c.get("status") for c, k in zip(calls, keys, strict=True) if k == key}
        how = "an empty result" if "empty" in statuses else "the same result"
        text = f"identical {tool} calls were repeated {n} times in a loop after {how}"
        fix = (f"if a {tool} call returns {how}, do not send the identical call again: change the request "
               "or stop and move on")
        out.append(Finding(text, content(text), 3.0 * (1.5 if failed else 1.0), fix))
    for i, c in enumerate(calls):
        status = str(c.get("status", ""))
        if status in OK_STATUSES or status == "not_found":
            continue
        if not any(d.get("tool") == c.get("tool") and _args(d) == _args(c) for d in calls[i + 1:]):
            text = f"a {c.get('tool')} call that returned {status} was not tried again, so its result was lost"
            fix = f"when a {c.get('tool')} call returns {status}, wait and call it again instead of moving on"
            out.append(Finding(text, content(text), 1.5 * (1.5 if failed else 1.0), fix))
            break
    groups: dict[str, set[Any]] = {}
    for c in calls:
        args = _args(c)
        if not (paged := [k for k in args if k in PAGE_ARGS]):
            continue
        rest = json.dumps([c.get("tool"), {k: v for k, v in args.items() if k not in PAGE_ARGS}], sort_keys=True)
        groups.setdefault(rest, set()).add(args[paged[0]])
    if failed and any(values <= {1, 0, "1", "0", None} for values in groups.values()) and len(groups) > 0:
        tool = json.loads(next(iter(groups)))[0]
        text = f"only the first page of {tool} results was read; later pages were never requested"
        fix = f"follow the pages of {tool} results to the last one, not just the first page"
        out.append(Finding(text, content(text), 1.0, fix))
    return out


def _loaded_flag(rec: dict[str, Any]) -> bool | None:
    """Did the agent load the skill? From a trace field or a feedback phrase, if either says."""
    try:
        data = json.loads(str(rec.get("trace", "")))
    except ValueError:
        data = None
    if isinstance(data, dict):
        for k, v in data.items():
            if "skill" in k.lower() and ("load" in k.lower() or "used" in k.lower()):
                return bool(v)
    low = str(rec.get("feedback", "")).lower()
    return False if "skill loaded: no" in low or "skill not loaded" in low else None


def gather(records: list[dict[str, Any]]) -> Evidence:
    """All findings of a minibatch, clustered into problems, heaviest first."""
    problems: list[Problem] = []
    not_loaded = heavy = 0
    for i, rec in enumerate(records):
        try:
            failed = float(rec.get("score", 1.0)) < FAILING
        except (TypeError, ValueError):
            failed = True
        not_loaded += failed and _loaded_flag(rec) is False
        share = re.search(r"(\d+)%\s+of\s+(?:the\s+)?[\w,\s-]{0,30}budget", str(rec.get("feedback", "")))
        heavy += bool(not failed and share and int(share.group(1)) >= 30)  # a "N% of the … budget" phrase
        for f in feedback_findings(str(rec.get("feedback", "")), failed) + trace_findings(str(rec.get("trace", "")), failed):
            home = next((p for p in problems if jaccard(p.words, f.words) >= MERGE), None)
            if home is None:
                home = Problem(f.text, f.words, f.fix)
                problems.append(home)
            home.weight += f.weight * (1.0 if i in home.records else 1.5 if home.records else 1.0)
            home.records.add(i)
            home.texts[f.text] += 1
    for p in problems:
        p.text = min(p.texts, key=lambda t: (-p.texts[t], len(t), t))
        p.words = content(p.text)
    return Evidence(tuple(sorted(problems, key=lambda p: (-p.weight, -len(p.records), p.text))), not_loaded, heavy,
                    tuple(str(r.get("input", "")) for r in records))
