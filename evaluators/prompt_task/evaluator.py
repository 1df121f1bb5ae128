"""`evaluator=prompt`: a single-turn prompt task on a real model.

The artifact is a prompt (`PromptArtifact`, component `text`). Each case asks the `lm.task` model
once: with `placement: user` (the default) the prompt, a blank line and the case's input are one
user message; with `placement: system` the prompt is the system message and the input the user
message (the reference GEPA library's default adapter). The reply is graded against the case's
`expected` by the configured metric:

- `exact`: the reply, lowercased and stripped of surrounding punctuation, is the expected answer;
- `label`: the reply names the expected label and no other of `labels` (label-in-answer);
- `numeric`: the first number in the reply equals the expected number;
- `regex`: the first match of `pattern` in the reply (its first group, if it has one) is the
  expected answer.

The feedback says what the reflector can act on: expected vs got, and format violations (an
empty reply, no allowed label, several labels, the answer buried in a sentence, a reply much
longer than the answer). Objectives: the LM's tokens, cost and latency (from the server's usage
records), `passed` and `format_ok` (the reply is the bare answer).
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from typing import Any, cast

from gepa_lab import Artifact, Case, Evaluation, PromptArtifact
from gepa_lab.lm import LMCaller, LMSettings, chat

METRICS = ("exact", "label", "numeric", "regex")
PLACEMENTS = ("user", "system")
_NUMBER = re.compile(r"-?\d+(?:,\d{3})*(?:\.\d+)?")
_EDGE = re.compile(r"^[\s\"'`.,:;!?()\[\]*-]+|[\s\"'`.,:;!?()\[\]*-]+$")


def normalize(text: str) -> str:
    """Lowercase, whitespace collapsed, punctuation and quotes trimmed from both ends."""
    return _EDGE.sub("", " ".join(text.lower().split()))


def _mentions(text: str, phrase: str) -> bool:
    return re.search(rf"(?<!\w){re.escape(phrase)}(?!\w)", text) is not None


def _number(text: str) -> float | None:
    match = _NUMBER.search(text)
    return None if match is None else float(match.group().replace(",", ""))


class PromptEvaluator(LMCaller):
    """Evaluator (`gepa_lab.core.contracts.Evaluator`) of a prompt on input -> answer cases.

    lm: the `lm.task` settings (the YAML passes `${lm.task}`) or a `dspy.LM`; metric: one of
    METRICS; labels: the allowed answers (`label` metric; also named in format feedback);
    pattern: the `regex` metric's regular expression; placement: where the prompt goes.
    """

    def __init__(self, lm: LMSettings | Mapping[str, Any] | Any = None, metric: str = "exact",
                 labels: Sequence[str] | None = None, pattern: str | None = None, placement: str = "user"):
        for key, value, allowed in (("metric", metric, METRICS), ("placement", placement, PLACEMENTS)):
            if value not in allowed:
                raise ValueError(f"evaluator.{key} must be one of {', '.join(allowed)} (got {value!r})")
        if labels is not None and (isinstance(labels, str) or not labels
                                   or not all(isinstance(x, str) and x.strip() for x in labels)):
            raise ValueError(f"evaluator.labels must be a list of answers, e.g. [positive, negative] (got {labels!r})")
        if metric == "regex":
            try:
                re.compile(pattern or "")
            except re.error as exc:
                raise ValueError(f"evaluator.pattern is not a regular expression: {exc}") from None
            if not pattern:
                raise ValueError("evaluator.metric=regex needs evaluator.pattern=<regular expression>")
        self.metric, self.placement, self.pattern = metric, placement, pattern
        self.labels = [normalize(x) for x in labels] if labels else None
        super().__init__(lm, "lm.task")

    def fingerprint(self) -> str:
        return json.dumps({"evaluator": "prompt", "metric": self.metric, "labels": self.labels,
                           "pattern": self.pattern, "placement": self.placement, "lm": self.settings.public()},
                          sort_keys=True)

    def check_cases(self, cases: Sequence[Case]) -> None:
        for case in cases:
            if case.expected is None or not str(case.expected).strip():
                raise ValueError(f"case {case.id!r} has no expected answer; evaluator=prompt grades each reply "
                                 "against the case's `expected`")
            if self.metric == "numeric" and _number(case.expected) is None:
                raise ValueError(f"case {case.id!r}: expected {case.expected!r} is not a number (metric=numeric)")

    def check_artifact(self, artifact: Artifact) -> None:
        if not isinstance(artifact, PromptArtifact):
            raise ValueError(f"evaluator=prompt optimizes a prompt artifact ({{\"kind\": \"prompt\", \"text\": "
                             f"...}}), not a {artifact.kind!r} one; point dataset.seed_artifact at a prompt file")

    def evaluate(self, artifact: Artifact, cases: list[Case], seed: int) -> list[Evaluation]:
        self.check_artifact(artifact)
        self.check_cases(cases)
        return [self._one(cast(PromptArtifact, artifact).text, case, seed) for case in cases]

    def _one(self, prompt: str, case: Case, seed: int) -> Evaluation:
        import dspy

        system = [{"role": "system", "content": prompt}] if self.placement == "system" else []
        messages = [*system, {"role": "user", "content": case.input if system else f"{prompt}\n\n{case.input}"}]
        run = self.metered(seed, case.id, lambda: chat(dspy.settings.lm, messages))
        reply, expected = run.value or "", str(case.expected)
        passed = self.grade(reply, expected)
        bare = normalize(reply)
        format_ok = len(bare.split()) <= max(1, len(normalize(expected).split())) and bool(bare)
        how = "sent to the provider" if run.seed_sent else "not sent: the provider takes no seed"
        u = run.usage
        trace = (f"provider seed {run.provider_seed} ({how}); {u.prompt_tokens} prompt + {u.completion_tokens} "
                 f"completion tokens; {run.latency_ms:.0f} ms")
        return Evaluation(case.id, 1.0 if passed else 0.0, output=reply, trace=trace,
                          feedback=self.feedback(reply, expected, passed),
                          objectives={**run.objectives(), "passed": float(passed), "format_ok": float(format_ok)})

    def grade(self, reply: str, expected: str) -> bool:
        text, want = normalize(reply), normalize(expected)
        if self.metric == "exact":
            return text == want
        if self.metric == "label":
            return {label for label in self.labels or [want] if _mentions(text, label)} == {want}
        if self.metric == "numeric":
            got, target = _number(reply), _number(expected)
            return got is not None and target is not None and abs(got - target) <= 1e-9 * max(1.0, abs(target))
        match = re.search(self.pattern or "", reply)
        return match is not None and normalize(match.group(1) if match.groups() else match.group(0)) == want

    def feedback(self, reply: str, expected: str, passed: bool) -> str:
        """Expected vs got, then every format violation the reply shows."""
        text, want = normalize(reply), normalize(expected)
        lines = [f"Correct: the answer is {expected!r}." if passed
                 else f"Wrong: expected {expected!r}, got {' '.join(reply.split())[:300]!r}."]
        words, needed = len(text.split()), max(1, len(want.split()))
        if not text:
            lines.append("Format: the reply was empty.")
        elif self.labels and self.metric in ("exact", "label"):
            named = [label for label in self.labels if _mentions(text, label)]
            if not named:
                lines.append(f"Format: the reply names none of the allowed answers ({', '.join(self.labels)}).")
            elif len(named) > 1:
                lines.append(f"Format: the reply names several answers ({', '.join(named)}); give exactly one.")
        if text and text != want and _mentions(text, want):
            lines.append("Format: the reply contains the answer inside other words; reply with the answer only.")
        elif words > needed + 3:
            lines.append(f"Format: the reply has {words} words; the answer has {needed}.")
        return "\n".join(lines)
