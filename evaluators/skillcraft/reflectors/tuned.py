"""TunedReflector: the offline reflector co-designed with the simulator (`reflector=tuned`).

It reads only what an LM reflector would read — the current artifact and the Feedback records —
but its knowledge is the family's own (its vocabulary, vocabulary.py and
vocabularies/<family>.yaml): diagnosis regexes that match that family's grader messages and
remedy wordings that address its behaviours' concepts. That makes it an **upper reference**, not evidence about reflective
search; the family-agnostic default is `reflector=feedback` (feedback.py).
(Formerly `HeuristicReflector`; the name stays as an alias.)

Like real reflection models it is imperfect on purpose: it sometimes copies counts or names from
the records (over-specific), bloats the skill, writes an over-general efficiency rule, drops a
step the records never exercised, makes a vague edit, or returns the component unchanged.
Wording varies with a RNG derived (hashlib) from its seed and its inputs, so a call is
deterministic. See docs/skillcraft_sim.md §8; the reflection boundary is docs/design.md §2.6.
"""

from __future__ import annotations

import random
import re
from dataclasses import dataclass
from typing import Any

from evaluators.skillcraft.family import known_family
from evaluators.skillcraft.reflectors.vocabulary import TunedVocabulary, load_vocabulary, vocabulary_names
from evaluators.skillcraft.rng import derived_rng
from gepa_lab import canonical_json

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


class TunedReflector:
    """Deterministic, seeded, LM-free reflector that knows its family's vocabulary."""

    def __init__(self, seed: int = 0, family: str = "recipe", rates: Rates | None = None) -> None:
        if known_family(family) not in vocabulary_names():
            raise ValueError(f"SkillCraft-sim family {family!r} has no tuned reflector vocabulary")
        self.seed = int(seed)
        self.family = family
        self.vocab: TunedVocabulary = load_vocabulary(family)
        self.rates = rates or Rates()

    # -- public contract -------------------------------------------------------------------
    def reflect(self, artifact: Any, component: str, records: list[dict[str, Any]]) -> dict[str, Any]:
        fields = dict(artifact.to_dict()) if hasattr(artifact, "to_dict") else dict(artifact)
        fields.pop("kind", None)
        # The former name in the purpose keeps the stream of the old HeuristicReflector.
        rng = derived_rng("heuristic-reflector", self.seed, canonical_json(fields), component,
                          canonical_json(records))
        diags = self._diagnose(records)
        current = fields.get(component)
        if rng.random() < self.rates.noop or current is None:
            return {**fields, "rationale": "The records give no clear evidence against this component; kept it."}
        value, why = (self._edit_list(rng, component, list(current), diags, records, fields)
                      if isinstance(current, (list, tuple)) else self._edit_text(rng, component, str(current), diags, records))
        return {**fields, component: value, "rationale": why}

    # -- diagnosis -------------------------------------------------------------------------
    def _diagnose(self, records: list[dict[str, Any]]) -> dict[str, float]:
        """Weighted evidence per diagnosis key, from the feedback text of every record."""
        found: dict[str, float] = {}
        for rec in records:
            text = str(rec.get("feedback", ""))
            failed = float(rec.get("score", 1.0)) < 0.8
            for d in self.vocab.diagnoses:
                if hits := len(d.pattern.findall(text)):
                    found[d.key] = found.get(d.key, 0.0) + d.weight * min(hits, 3) * (1.5 if failed else 1.0)
            if "skill loaded: no" in text and failed:
                found["not_loaded"] = found.get("not_loaded", 0.0) + 2.0
            if (m := _TOKENS.search(text)) and int(m.group(2)) >= 40 and not failed:
                found["tokens"] = found.get("tokens", 0.0) + 1.0
        return found

    # -- steps / pitfalls --------------------------------------------------------------------
    def _edit_list(self, rng: random.Random, component: str, items: list[str], diags: dict[str, float],
                   records: list[dict[str, Any]], fields: dict[str, Any]) -> tuple[list[str], str]:
        v = self.vocab
        vocab = v.steps if component == "steps" else v.pitfalls
        total_chars = sum(len(str(x)) if isinstance(x, str) else sum(map(len, x)) for x in fields.values())
        roll = rng.random()
        if roll < self.rates.bloat and total_chars < _MAX_SKILL_CHARS:
            return items + rng.sample(v.bloat, rng.randint(2, 3)), "Made the guidance more thorough so the agent overlooks nothing."
        roll -= self.rates.bloat
        if roll < self.rates.over_specific and (specific := v.over_specific(rng, records)):
            return self._insert(items, specific, component), (
                "The records show exact counts for these lists; added them so the agent collects "
                "the right number of items.")
        if not (weighted := [(k, w) for k, w in sorted(diags.items()) if k in vocab and w > 0]):
            return self._no_failure_edit(rng, component, items, diags)
        key = rng.choices([k for k, _ in weighted], weights=[w for _, w in weighted])[0]
        d_summary = next((d.summary for d in v.diagnoses if d.key == key), key)
        options = list(vocab[key])
        text = options[-1] if rng.random() < self.rates.vague else rng.choice(options[:-1] or options)
        related = next((d.related for d in v.diagnoses if d.key == key), ())
        existing = [i for i, s in enumerate(items) if any(w in s.lower() for w in related)]
        if existing and rng.random() < 0.45:
            i = existing[0]  # tighten the step that already talks about this
            tightened = text if rng.random() < 0.5 else f"{items[i].rstrip('.')}; {text[0].lower()}{text[1:]}"
            return items[:i] + [tightened] + items[i + 1:], f"Records show {d_summary}; tightened the existing {component[:-1]} about it."
        if len(items) >= 6 and rng.random() < 0.25:
            j = rng.randrange(len(items) - 1)  # merge two neighbours to keep the list short
            merged = f"{items[j].rstrip('.')}; {items[j + 1][0].lower()}{items[j + 1][1:]}"
            new = items[:j] + [merged] + items[j + 2:]
            return self._insert(new, text, component), f"Records show {d_summary}; merged two {component} and added one."
        return self._insert(items, text, component), f"Records show {d_summary}; added a {component[:-1]} for it."

    def _no_failure_edit(self, rng: random.Random, component: str, items: list[str],
                         diags: dict[str, float]) -> tuple[list[str], str]:
        """Every record passed: efficiency tweaks, some over-general, or simplification."""
        v = self.vocab
        vocab = v.steps if component == "steps" else v.pitfalls
        roll = rng.random()
        if roll < self.rates.overgeneral:
            rule, topic = rng.choice(v.overgeneral)
            related = [i for i, s in enumerate(items) if any(w in s.lower() for w in topic)]
            if related:  # replace the guardrail the records never needed with a leaner rule
                return items[:related[0]] + [rule] + items[related[0] + 1:], (
                    "All records passed without needing this guardrail; replaced it with a leaner rule.")
            return self._insert(items, rule, component), (
                "All records passed; cut work the records did not need to save tokens.")
        roll -= self.rates.overgeneral
        if roll < self.rates.simplify and len(items) > 1:
            # Drop an item about a problem the records never showed (never the final step).
            final = v.final_step_word
            unused = [i for i, s in enumerate(items) if final not in s.lower()
                      and any(any(w in s.lower() for w in d.related) for d in v.diagnoses if not diags.get(d.key))]
            if pool := unused or [i for i, s in enumerate(items) if final not in s.lower()]:
                i = rng.choice(pool)
                return items[:i] + items[i + 1:], (
                    f"All records passed; removed a {component[:-1]} about a problem the records never showed.")
        if diags.get("tokens") or diags.get("waste") or rng.random() < 0.5:
            return self._insert(items, rng.choice(vocab["waste"]), component), (
                "Records pass but spend many tokens; limited unneeded calls.")
        return self._insert(items, rng.choice(vocab["validate"]), component), (
            "Records pass; added a final validation guardrail.")

    def _insert(self, items: list[str], text: str, component: str) -> list[str]:
        if text in items:
            return list(items)
        if component == "steps":
            # New work goes before the final "write the file" step, as a careful editor would.
            last = [i for i, s in enumerate(items) if self.vocab.final_step_word in s.lower()]
            if last:
                return items[:last[-1]] + [text] + items[last[-1]:]
        return items + [text]

    # -- when_to_use / description ---------------------------------------------------------
    def _edit_text(self, rng: random.Random, component: str, current: str, diags: dict[str, float],
                   records: list[dict[str, Any]]) -> tuple[str, str]:
        v = self.vocab
        raw_inputs = " ".join(str(r.get("input", "")) for r in records)
        inputs = raw_inputs.lower()
        seen = [label for word, label in v.task_words if word in inputs]
        missing = [label for word, label in v.task_words if word in inputs and word not in current.lower()]
        if not missing and not diags.get("not_loaded") and rng.random() < 0.5:
            return current, f"The {component} already matches the records; unchanged."
        if rng.random() < self.rates.over_specific:
            if picked := v.names_in_inputs(raw_inputs):
                extra = v.names_template.format(names=" and ".join(picked))
                return current.rstrip() + extra, "Named the lists the records asked for."
        phrase = ", ".join(seen[:-1]) + (" and " if len(seen) > 1 else "") + (seen[-1] if seen else "")
        template = rng.choice(v.when_templates if component == "when_to_use" else v.description_templates)
        if "{c}" in template:  # appending: name only what is missing
            phrase = ", ".join(missing or seen)
        text = template.format(p=phrase or v.default_phrase, c=current.rstrip())
        why = ("The skill was not loaded on failing records; " if diags.get("not_loaded") else "") + (
            f"made the {component} name the task types seen in the records ({phrase or 'the task'}).")
        return text, why


# The former name (reflector=heuristic): the recipe family's tuned reflector.
HeuristicReflector = TunedReflector
