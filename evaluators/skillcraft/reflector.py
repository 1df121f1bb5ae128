"""HeuristicReflector: the offline stand-in for an LM reflection model.

It reads only what an LM reflector would read — the current artifact and the Feedback records
(case-N, input, expected, score, output, feedback, trace) — never the fixtures or the simulator's
tables. It diagnoses failures from the feedback text and rewrites the selected component: adds,
tightens or merges a step or pitfall, or adjusts when_to_use / description. Wording varies with
a RNG derived (hashlib) from its seed and its inputs, so a call is deterministic.

Like real reflection models it is imperfect on purpose: it sometimes copies counts or names from
the records (over-specific), bloats the skill, writes an over-general efficiency rule, drops a
step the records never exercised, makes a vague edit, or returns the component unchanged.
See docs/skillcraft_sim.md §8; the reflection boundary it sits behind is docs/design.md §2.6.
"""

from __future__ import annotations

import json
import random
import re
from collections import Counter
from dataclasses import dataclass
from typing import Any

from evaluators.skillcraft.remedies import (
    BLOAT,
    DIAGNOSES,
    OVERGENERAL,
    PITFALLS,
    STEPS,
    TASK_WORDS,
)
from evaluators.skillcraft.rng import derived_rng
from gepa_lab.core.contracts import canonical_json

_COUNT_IN_EXPECTED = re.compile(r'"([A-Za-z][A-Za-z ]+)":\{"count":(\d+)')
_TOKENS = re.compile(r"Efficiency: ([\d,]+) agent tokens \((\d+)%")
_MAX_SKILL_CHARS = 12_000  # stop bloating far before the 65,536 limit


@dataclass(frozen=True)
class Rates:
    """How often the imperfect moves happen (per reflection)."""

    noop: float = 0.08
    vague: float = 0.10
    over_specific: float = 0.14
    bloat: float = 0.10
    overgeneral: float = 0.30  # share of "all passed" reflections that write an over-general rule
    simplify: float = 0.25  # share of "all passed" reflections that drop a step


class HeuristicReflector:
    """Deterministic, seeded, LM-free reflector for SkillCraft-sim skills."""

    def __init__(self, seed: int = 0, rates: Rates | None = None) -> None:
        self.seed = int(seed)
        self.rates = rates or Rates()

    # -- public contract -------------------------------------------------------------------
    def reflect(self, artifact: Any, component: str, records: list[dict[str, Any]]) -> dict[str, Any]:
        fields = dict(artifact.to_dict()) if hasattr(artifact, "to_dict") else dict(artifact)
        fields.pop("kind", None)
        rng = derived_rng("heuristic-reflector", self.seed, canonical_json(fields), component,
                          canonical_json(records))
        diags = self._diagnose(records)
        current = fields.get(component)
        if rng.random() < self.rates.noop or current is None:
            return {**fields, "rationale": "The records give no clear evidence against this component; kept it."}
        if isinstance(current, list):
            value, why = self._edit_list(rng, component, list(current), diags, records, fields)
        else:
            value, why = self._edit_text(rng, component, str(current), diags, records)
        return {**fields, component: value, "rationale": why}

    # -- diagnosis -------------------------------------------------------------------------
    def _diagnose(self, records: list[dict[str, Any]]) -> Counter[str]:
        """Weighted evidence per diagnosis key, from the feedback text of every record."""
        found: Counter[str] = Counter()
        for rec in records:
            text = str(rec.get("feedback", ""))
            failed = float(rec.get("score", 1.0)) < 0.8
            for d in DIAGNOSES:
                hits = len(d.pattern.findall(text))
                if hits:
                    found[d.key] += d.weight * min(hits, 3) * (1.5 if failed else 1.0)
            if "skill loaded: no" in text and failed:
                found["not_loaded"] += 2.0
            m = _TOKENS.search(text)
            if m and int(m.group(2)) >= 40 and not failed:
                found["tokens"] += 1.0
        return found

    @staticmethod
    def _pick(rng: random.Random, diags: Counter[str], keys: set[str]) -> str | None:
        options = [(k, w) for k, w in sorted(diags.items()) if k in keys and w > 0]
        if not options:
            return None
        return rng.choices([k for k, _ in options], weights=[w for _, w in options])[0]

    # -- steps / pitfalls --------------------------------------------------------------------
    def _edit_list(self, rng: random.Random, component: str, items: list[str], diags: Counter[str],
                   records: list[dict[str, Any]], fields: dict[str, Any]) -> tuple[list[str], str]:
        vocab = STEPS if component == "steps" else PITFALLS
        total_chars = sum(len(str(v)) if isinstance(v, str) else sum(map(len, v)) for v in fields.values())
        roll = rng.random()
        if roll < self.rates.bloat and total_chars < _MAX_SKILL_CHARS:
            extra = rng.sample(BLOAT, rng.randint(2, 3))
            return items + extra, "Made the guidance more thorough so the agent overlooks nothing."
        roll -= self.rates.bloat
        if roll < self.rates.over_specific:
            specific = self._over_specific(rng, records)
            if specific:
                return self._insert(items, specific, component), (
                    "The records show exact counts for these lists; added them so the agent collects "
                    "the right number of dishes.")
        key = self._pick(rng, diags, set(vocab))
        if key is None:
            return self._no_failure_edit(rng, component, items, diags)
        d_summary = next((d.summary for d in DIAGNOSES if d.key == key), key)
        options = list(vocab[key])
        text = options[-1] if rng.random() < self.rates.vague else rng.choice(options[:-1] or options)
        related = next((d.related for d in DIAGNOSES if d.key == key), ())
        existing = [i for i, s in enumerate(items) if any(w in s.lower() for w in related)]
        if existing and rng.random() < 0.45:
            i = existing[0]  # tighten the step that already talks about this
            new = list(items)
            new[i] = text if rng.random() < 0.5 else f"{items[i].rstrip('.')}; {text[0].lower()}{text[1:]}"
            return new, f"Records show {d_summary}; tightened the existing {component[:-1]} about it."
        if len(items) >= 6 and rng.random() < 0.25:
            j = rng.randrange(len(items) - 1)  # merge two neighbours to keep the list short
            merged = f"{items[j].rstrip('.')}; {items[j + 1][0].lower()}{items[j + 1][1:]}"
            new = items[:j] + [merged] + items[j + 2:]
            return self._insert(new, text, component), f"Records show {d_summary}; merged two {component} and added one."
        return self._insert(items, text, component), f"Records show {d_summary}; added a {component[:-1]} for it."

    def _no_failure_edit(self, rng: random.Random, component: str, items: list[str],
                         diags: Counter[str]) -> tuple[list[str], str]:
        """Every record passed: efficiency tweaks, some over-general, or simplification."""
        vocab = STEPS if component == "steps" else PITFALLS
        roll = rng.random()
        if roll < self.rates.overgeneral:
            rule = rng.choice(OVERGENERAL)
            topic = ("retry", "rate") if "retry" in rule.lower() or "rate" in rule.lower() else ("get_recipe",)
            related = [i for i, s in enumerate(items) if any(w in s.lower() for w in topic)]
            if related:  # replace the guardrail the records never needed with a leaner rule
                new = list(items)
                new[related[0]] = rule
                return new, "All records passed without needing this guardrail; replaced it with a leaner rule."
            return self._insert(items, rule, component), (
                "All records passed; cut work the records did not need to save tokens.")
        roll -= self.rates.overgeneral
        if roll < self.rates.simplify and len(items) > 1:
            # Drop an item about a problem the records never showed (never the write step).
            unused = [i for i, s in enumerate(items) if "write" not in s.lower()
                      and any(any(w in s.lower() for w in d.related) for d in DIAGNOSES if not diags.get(d.key))]
            pool = unused or [i for i, s in enumerate(items) if "write" not in s.lower()]
            if pool:
                i = rng.choice(pool)
                return items[:i] + items[i + 1:], (
                    f"All records passed; removed a {component[:-1]} about a problem the records never showed.")
        if diags.get("tokens") or diags.get("waste") or rng.random() < 0.5:
            return self._insert(items, rng.choice(vocab["waste"]), component), (
                "Records pass but spend many tokens; limited detail fetching.")
        return self._insert(items, rng.choice(vocab["validate"]), component), (
            "Records pass; added a final validation guardrail.")

    @staticmethod
    def _insert(items: list[str], text: str, component: str) -> list[str]:
        if text in items:
            return list(items)
        if component == "steps":
            # New work goes before the final "write the file" step, as a careful editor would.
            for i in range(len(items) - 1, -1, -1):
                if "write" in items[i].lower():
                    return items[:i] + [text] + items[i:]
        return items + [text]

    @staticmethod
    def _over_specific(rng: random.Random, records: list[dict[str, Any]]) -> str | None:
        """Copy a count (and maybe a name) out of a record's expected output."""
        found: list[tuple[str, int]] = []
        for rec in records:
            try:
                expected = json.loads(str(rec.get("expected", "")))
                for section in ("category_dishes", "cuisine_dishes", "ingredient_dishes"):
                    for name, entry in (expected.get(section) or {}).items():
                        found.append((name, int(entry["count"])))
            except (ValueError, TypeError, KeyError, AttributeError):
                found += [(n, int(c)) for n, c in _COUNT_IN_EXPECTED.findall(str(rec.get("expected", "")))]
        if not found:
            return None
        name, count = rng.choice(found)
        pages = max(1, -(-count // 10))
        return rng.choice((
            f"Collect exactly {count} dishes for {name}, following next_page until you have them all.",
            f"Collect exactly {count} dishes per list.",
            f"The {name} listing has {count} dishes; stop after {pages} pages.",
            f"For {name}, follow next_page through every page.",
        ))

    # -- when_to_use / description ---------------------------------------------------------
    def _edit_text(self, rng: random.Random, component: str, current: str, diags: Counter[str],
                   records: list[dict[str, Any]]) -> tuple[str, str]:
        raw_inputs = " ".join(str(r.get("input", "")) for r in records)
        inputs = raw_inputs.lower()
        seen = [label for word, label in TASK_WORDS if word in inputs]
        missing = [label for word, label in TASK_WORDS if word in inputs and word not in current.lower()]
        if not missing and not diags.get("not_loaded") and rng.random() < 0.5:
            return current, f"The {component} already matches the records; unchanged."
        if rng.random() < self.rates.over_specific:
            names = re.findall(r"\bthe ([A-Z]\w+) category\b|\b([A-Z]\w+) cuisine\b", raw_inputs)
            picked = sorted({a or b for a, b in names})[:2]
            if picked:
                extra = f" Especially for {' and '.join(picked)} dishes."
                return current.rstrip() + extra, "Named the lists the records asked for."
        wanted = missing or seen
        phrase = ", ".join(seen[:-1]) + (" and " if len(seen) > 1 else "") + (seen[-1] if seen else "")
        added = ", ".join(wanted)
        if component == "when_to_use":
            templates = (
                "Use for recipe and cookbook tasks that list dishes by {p} from the recipe API.",
                "Use whenever a task asks for recipe dishes by {p}, or for a cookbook JSON built from the recipe API.",
                "{c} Also use it for recipe tasks involving {p}.",
            )
        else:
            templates = (
                "Builds recipe cookbook JSON from the paginated recipe API, covering {p}.",
                "{c} Covers dishes by {p}.",
                "Collects recipe dishes by {p} and writes a validated cookbook JSON file.",
            )
        template = rng.choice(templates)
        if "{c}" in template:  # appending: name only what is missing
            phrase = added
        text = template.format(p=phrase or "categories, cuisines or ingredients", c=current.rstrip())
        why = ("The skill was not loaded on failing records; " if diags.get("not_loaded") else "") + (
            f"made the {component} name the task types seen in the records ({phrase or 'recipes'}).")
        return text, why
