"""`reflector=prompt_rules`: an offline, deterministic reflector for prompt tasks.

It edits a prompt from what the Feedback minibatch shows (the only data a reflector sees): a
format rule distilled from the records (the allowed answers when the expected answers are labels
that the inputs do not contain, else "the answer only"), reworded when replies still break it,
and worked examples taken from failing records. One edit per proposal, alternating between the
two when replies break the format, so the search (strict minibatch improvement) keeps what helps
the task model and drops what does not. Paired with a real task LM, the proposer is a fixed
function of the records, so a study measures the model, not a reflection model's luck.
"""

from __future__ import annotations

import re
from typing import Any

from gepa_lab import Artifact

# The format rule's wordings, tried in turn while replies keep breaking it. {choices}: "a or b".
LABEL_RULES = ("Answer with one word: {choices}.", "Reply with only the label ({choices}), nothing else.",
               "Output just one word, {choices}, with no explanation.")
ANSWER_RULES = ("Reply with the answer only, no sentence.", "Answer in as few words as possible: just the answer.",
                "Output only the exact answer and nothing else.")
EXAMPLE = "Example: {input} -> {expected}"
# (index of the wording, a label rule?, the pattern of its lines: `{choices}` any non-empty text)
_PATTERNS = [(index, wordings is LABEL_RULES, re.compile(re.escape(rule).replace(r"\{choices\}", "(.+)")))
             for wordings in (LABEL_RULES, ANSWER_RULES) for index, rule in enumerate(wordings)]


def _choices(labels: list[str]) -> str:
    return labels[0] if len(labels) == 1 else f"{', '.join(labels[:-1])} or {labels[-1]}"


class PromptRulesReflector:
    """Reflector (`gepa_lab.core.contracts.Reflector`) for `prompt` artifacts; `max_examples`:
    worked examples kept in the prompt (the oldest leaves first)."""

    def __init__(self, max_examples: int = 3):
        if isinstance(max_examples, bool) or not isinstance(max_examples, int) or max_examples < 0:
            raise ValueError(f"reflector.max_examples must be an integer >= 0, got {max_examples!r}")
        self.max_examples = max_examples

    def reflect(self, artifact: Artifact, component: str, records: list[dict[str, Any]]) -> dict[str, str]:
        if component != "text":
            raise ValueError(f"reflector=prompt_rules edits prompt artifacts (component 'text'), not {component!r}")
        text = str(getattr(artifact, "text", ""))
        lines = [line for line in text.splitlines() if line.strip()]
        examples = [line for line in lines if line.startswith("Example: ")]
        rule = next((line for line in lines if _rule_index(line) is not None), None)
        base = [line for line in lines if line not in examples and line != rule]
        failing = [r for r in records if float(r["score"]) < 1.0]
        broken = sum(map(_breaks_format, failing))
        edits = len(examples) + (1 + (_rule_index(rule) or 0) if rule else 0)
        if broken and (rule is None or edits % 2 == 0 or self.max_examples == 0):
            rules = _rules(lines, records)
            rule = rules[((_rule_index(rule) or 0) + 1) % len(rules)] if rule else rules[0]
            why = f"{broken} of {len(records)} replies were not the bare answer: format rule {rule!r}"
        else:
            fresh = [e for e in (_example(r) for r in failing or records) if e not in examples]
            if not fresh or self.max_examples == 0:
                return {"text": text, "rationale": "nothing new in these records"}
            examples = [*examples, fresh[0]][-self.max_examples:]
            why = f"worked example from a {'failing' if failing else 'passing'} case: {fresh[0]!r}"
        return {"text": "\n".join([*base, *([rule] if rule else []), *examples]), "rationale": why}


def _example(record: dict[str, Any]) -> str:
    return EXAMPLE.format(input=" ".join(str(record["input"]).split()), expected=record["expected"])


def _rule_index(line: str) -> int | None:
    """Which wording of the format rule `line` is (None: not a format rule)."""
    return next((index for index, _, pattern in _PATTERNS if pattern.fullmatch(line)), None)


def _rules(lines: list[str], records: list[dict[str, Any]]) -> tuple[str, ...]:
    """The format rule's wordings for this task: with the labels the prompt already names (the
    `{choices}` part of an earlier edit's label rule) plus the expected answers that are labels
    (answers the input does not contain)."""
    named = next((m[1] for line in lines for _, label, pattern in _PATTERNS if label and (m := pattern.fullmatch(line))), "")
    labels = sorted({str(r["expected"]).strip() for r in records
                     if str(r["expected"]).strip().lower() not in str(r["input"]).lower()}
                    | {x.strip() for x in re.split(r",| or ", named) if x.strip()})
    if not labels:
        return ANSWER_RULES
    return tuple(rule.format(choices=_choices(labels)) for rule in LABEL_RULES)


def _breaks_format(record: dict[str, Any]) -> bool:
    """The reply is not the bare answer: empty, or longer than the expected answer."""
    output, expected = str(record.get("output") or "").split(), str(record.get("expected") or "").split()
    return not output or len(output) > len(expected)
