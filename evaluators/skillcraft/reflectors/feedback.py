"""FeedbackReflector: the family-agnostic offline reflector (`reflector=feedback`, the default).

It knows no family, no cue table and no grader message format. It reads the records' feedback
and trace text (and the task inputs, for when_to_use / description) the way a reader would
(`evidence.py`), turns the heaviest recurring failure that the selected component does not yet
cover into a step or a pitfall in its own words (`guidance.py`), merges near-duplicates, and
keeps the whole skill within `max_skill_chars`. When loading failed it names the task's salient
terms in when_to_use / description. It returns the whole artifact with the selected component
changed, plus a `rationale`; identical inputs give an identical reply (wording variety comes
from a RNG derived from its seed and inputs).

It imports nothing from the family subpackages and reads no fixtures (a test enforces it).
See docs/skillcraft_sim.md §8; the reflection boundary it sits behind is docs/design.md §2.6.
"""

from __future__ import annotations

import random
import re
from collections import Counter
from typing import Any

from evaluators.skillcraft.reflectors.evidence import Evidence, gather
from evaluators.skillcraft.reflectors.guidance import (
    as_pitfall,
    as_step,
    checklist,
    insert,
    merge_duplicates,
    within_budget,
)
from evaluators.skillcraft.reflectors.text import STOP, content, coverage, sentence, stem, words
from evaluators.skillcraft.rng import derived_rng
from gepa_lab import canonical_json

COVERED = 0.6  # an item holding this share of a problem's words already addresses it
CHECK_WORDS = frozenset({"check", "verify", "validate", "review", "re-read", "reread", "double-check"})
# Words of task instructions in general (not of any domain): not worth naming in when_to_use.
INSTRUCTION_WORDS = frozenset(
    "build using use tools tool return returns call calls write writes report collect also across under list "
    "lists json file path content name names page pages next check then local offline service prepare "
    "assemble summary full them both these task tasks give given want wanted asked ask item items value "
    "values field fields add include result results output input make made find found each every their "
    "other more most done claim_done write_file total distinct count counts".split()
)
TEXT_BUDGET = 320  # characters for when_to_use or description


def salient_terms(inputs: tuple[str, ...], limit: int = 6) -> list[str]:
    """The domain words the task inputs keep using (document frequency first, then frequency)."""
    tf: Counter[str] = Counter()
    df: Counter[str] = Counter()
    names = {w.lower() for text in inputs for w in re.findall(r"(?<![.:!?]\s)(?<!^)\b[A-Z][a-z]+", text)}
    for text in inputs:
        # Field lists in brackets ("returns {id, name, latitude}") name an API, not the task's topic.
        kept = [w for w in words(re.sub(r"\([^()]*\)|\{[^{}]*\}", " ", text)) if not (
            "_" in w or len(w) < 4 or w in STOP or w in INSTRUCTION_WORDS or not w.isalpha() or w in names)]
        tf.update(kept)
        df.update(set(kept))
    recurring = 2 if len(inputs) > 1 else 1  # a term of one input only is not what the tasks share
    by_stem: dict[str, str] = {}
    for w in sorted(tf, key=lambda w: (-df[w], -tf[w], w)):
        if df[w] >= recurring:
            by_stem.setdefault(stem(w), w)
    return list(by_stem.values())[:limit]


class FeedbackReflector:
    """Deterministic, family-agnostic, LM-free reflector (see the module docstring)."""

    def __init__(self, seed: int = 0, max_skill_chars: int = 1500) -> None:
        if not isinstance(max_skill_chars, int) or max_skill_chars < 200:
            raise ValueError(f"max_skill_chars must be an integer >= 200, got {max_skill_chars!r}")
        self.seed = int(seed)
        self.max_skill_chars = max_skill_chars

    def reflect(self, artifact: Any, component: str, records: list[dict[str, Any]]) -> dict[str, Any]:
        fields = dict(artifact.to_dict()) if hasattr(artifact, "to_dict") else dict(artifact)
        fields.pop("kind", None)
        current = fields.get(component)
        if current is None:
            return {**fields, "rationale": f"No {component} to edit; kept the artifact."}
        rng = derived_rng("feedback-reflector", self.seed, canonical_json(fields), component,
                          canonical_json(records))
        evidence = gather(records)
        if isinstance(current, (list, tuple)):
            value, why = self._edit_list(rng, component, [str(x) for x in current], evidence, fields)
            return {**fields, component: value, "rationale": why}
        if component in ("when_to_use", "description"):
            text, why = self._edit_trigger(component, str(current), evidence)
        else:  # a prompt, a tool description, a policy: one block of text
            lines = [x for x in str(current).splitlines() if x.strip()]  # edited as a list of pitfalls
            new, why = self._edit_list(rng, "pitfalls", lines, evidence, {**fields, component: ""})
            text = "\n".join(new)
        return {**fields, component: text, "rationale": why}

    # -- steps / pitfalls -----------------------------------------------------------------------
    def _edit_list(self, rng: random.Random, component: str, items: list[str], evidence: Evidence,
                   fields: dict[str, Any]) -> tuple[list[str], str]:
        others = sum(sum(map(len, v)) if isinstance(v, (list, tuple)) else len(str(v))  # characters elsewhere
                     for k, v in fields.items() if k not in (component, "name", "kind", "rationale"))
        if not evidence.problems:
            if evidence.token_heavy:
                text = "Make only the tool calls the task needs; skip extra calls it did not ask for."
                return self._add(items, text, component, others, "Records pass but spend many tokens")
            return items, "Every record passed and none looks wasteful; kept the component."
        here = [content(x) for x in items]
        open_problems = [p for p in evidence.problems if not any(coverage(p.words, c) >= COVERED for c in here)]
        has_check = any(CHECK_WORDS & set(words(x)) for x in items)
        heavy = [p for p in evidence.problems if p.weight >= evidence.problems[0].weight / 2]
        if component == "steps" and not has_check and len(heavy) >= 2 and rng.random() < 0.35:
            text = checklist([(p.text, p.fix) for p in heavy])
            return self._add(items, text, component, others, "Several different failures recur")
        if not open_problems:
            # Everything seen is covered here and still fails: say it again, in the other form.
            p = evidence.problems[0]
            text = as_pitfall(p.text, rng, p.fix) if component == "steps" else as_step(p.text, rng, p.fix)
            return self._add(items, text, component, others, f"Still failing although covered: {p.text}")
        p = open_problems[0]  # usually the heaviest; sometimes a runner-up nearly as heavy (variety across iterations)
        if len(open_problems) > 1 and open_problems[1].weight >= p.weight / 2 and rng.random() < 0.25:
            p = open_problems[1]
        text = as_step(p.text, rng, p.fix) if component == "steps" else as_pitfall(p.text, rng, p.fix)
        return self._add(items, text, component, others, f"Recurring failure ({len(p.records)} record(s)): {p.text}")

    def _add(self, items: list[str], text: str, component: str, others: int, why: str) -> tuple[list[str], str]:
        new = merge_duplicates(insert(items, text, component))
        fitted = within_budget(new, others, self.max_skill_chars, keep=text)
        if fitted is None and len(new) > 1:
            # Still too long: the new item replaces the existing item closest to it in topic
            # (never the last step, which produces the output).
            pool = range(len(items) - 1) if component == "steps" and len(items) > 1 else range(len(items))
            if scores := [(len(content(items[i]) & content(text)), -i) for i in pool]:
                i = -max(scores)[1]
                replaced = items[:i] + [text] + items[i + 1:]
                fitted = within_budget(merge_duplicates(replaced), others, self.max_skill_chars, keep=text)
        if fitted is None:
            return items, f"{why}; but the skill is at its length budget and nothing could be cut, so kept it."
        return fitted, f"{why}; added guidance for it."

    # -- when_to_use / description -------------------------------------------------------------
    def _edit_trigger(self, component: str, current: str, evidence: Evidence) -> tuple[str, str]:
        terms = salient_terms(evidence.inputs)
        have = content(current)
        missing = [t for t in terms if stem(t) not in have]
        if not missing or (not evidence.not_loaded and len(missing) < 2):
            return current, f"The {component} already names what the tasks are about; kept it."
        lead = "Use it for tasks that involve " if component == "when_to_use" else "Covers "
        addition = sentence(lead + ", ".join(missing[:-1]) + (" and " if len(missing) > 1 else "") + missing[-1])
        text = f"{current.rstrip()} {addition}"
        if len(text) > TEXT_BUDGET:  # rebuild instead of growing without end
            text = sentence(lead + ", ".join(terms[:-1]) + " and " + terms[-1]) if len(terms) > 1 else addition
        why = ("The skill was not loaded on failing records; " if evidence.not_loaded else "") + (
            f"named the task's recurring terms ({', '.join(missing)}) in the {component}.")
        return text, why
