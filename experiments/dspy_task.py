"""The two-predictor DSPy task of `experiments/dspy_vs_gepa.py` (a plain module beside it).

Each example is a short sales log (one sentence per day) and a question about one day. The
program extracts the fact with a `ChainOfThought` and answers with a `Predict`. The loopback stub
model (`respond`) plays both the task model and the reflection model, deterministically:

- the extractor quotes the sentence of the asked day only when its instructions say
  "Quote the whole sentence that names the asked day"; otherwise it returns the first sentence;
- the answerer replies with the bare number only when its instructions say "Reply with the
  number only"; otherwise it adds the unit;
- the reflection model adds the rule that the feedback it is shown asks for (both rules if it is
  shown both), to whichever instructions it is asked to improve. It answers gepa-lab's JSON prompt
  and dspy.GEPA's `InstructionProposer` (JSON adapter) alike.

So a run improves the seed (about 0.1) to 1.0 in two accepted proposals when each predictor gets
its own feedback; with program-level feedback a rule can land on the wrong predictor.
"""

from __future__ import annotations

import json
import random
import re
from typing import Any

DAYS = ("Monday", "Tuesday", "Wednesday", "Thursday", "Friday")
SHOPS = (("bakery", "loaves"), ("florist", "bouquets"), ("bookshop", "novels"), ("dairy", "cheeses"),
         ("toy store", "kites"), ("cafe", "muffins"), ("tailor", "jackets"), ("grocer", "melons"))
QUOTE_RULE = "Quote the whole sentence that names the asked day."
NUMBER_RULE = "Reply with the number only."
EXTRACT_SEED = "Find the fact in the log that answers the question."
ANSWER_SEED = "Answer the question from the fact."


def rows(n: int, seed: int) -> list[dict[str, str]]:
    """`n` examples: passage, question, answer (the number as text)."""
    rng = random.Random(seed)
    out = []
    for _ in range(n):
        shop, unit = rng.choice(SHOPS)
        days = rng.sample(DAYS, 4)
        counts = rng.sample(range(11, 99), 4)
        passage = " ".join(f"On {d} the {shop} sold {c} {unit}." for d, c in zip(days, counts, strict=True))
        asked = rng.randrange(4)
        out.append({"passage": passage, "question": f"How many {unit} did the {shop} sell on {days[asked]}?",
                    "answer": str(counts[asked])})
    return out


def splits(per_split: int = 10) -> dict[str, list[dict[str, str]]]:
    return {"train": rows(per_split, 1), "val": rows(per_split, 2), "holdout": rows(per_split, 3)}


def make_program() -> Any:
    import dspy

    class FactThenAnswer(dspy.Module):
        def __init__(self) -> None:
            super().__init__()
            self.extract = dspy.ChainOfThought(dspy.Signature("passage, question -> fact", EXTRACT_SEED))
            self.answer = dspy.Predict(dspy.Signature("fact, question -> answer", ANSWER_SEED))

        def forward(self, passage: str, question: str) -> Any:
            fact = self.extract(passage=passage, question=question).fact
            return self.answer(fact=fact, question=question)

    return FactThenAnswer()


def _day(question: str) -> str:
    return next(d for d in DAYS if d in question)


def metric(gold: Any, pred: Any, trace: Any = None, pred_name: str | None = None, pred_trace: Any = None) -> Any:
    """dspy.GEPA's feedback metric: a score and feedback; with `pred_name`, feedback about that
    predictor alone."""
    import dspy

    answer = str(getattr(pred, "answer", "") or "").strip()
    day = _day(gold.question)
    numbers = re.findall(r"\d+", answer)
    if answer == gold.answer:
        score, program = 1.0, "Correct."
    elif gold.answer in numbers:
        score, program = 0.5, f"The number is right but the answer '{answer}' has extra words: number only."
    else:
        score, program = 0.0, f"Wrong number: the fact must be the sentence about {day}."
    if pred_name is None:
        return dspy.Prediction(score=score, feedback=program)
    outputs = pred_trace[0][2] if pred_trace else None
    if pred_name.startswith("extract"):
        fact = str(getattr(outputs, "fact", "") or "")
        text = ("The fact names the asked day." if day in fact
                else f"The fact '{fact}' is not the sentence about {day}: quote that sentence.")
    else:
        text = ("The answer is the bare number." if numbers and answer == numbers[0]
                else f"The answer '{answer}' has extra words: number only.")
    return dspy.Prediction(score=score, feedback=text)


# -- the stub model --------------------------------------------------------------------------------
_FIELD = re.compile(r"\[\[ ## (\w+) ## \]\]\n(.*?)(?=\n\n\[\[ ## |\n\nRespond with|\Z)", re.S)


def _fields(text: str) -> dict[str, str]:
    return {m.group(1): m.group(2).strip() for m in _FIELD.finditer(text)}


def _improved(current: str, evidence: str) -> str:
    rules = [rule for rule, cue in ((QUOTE_RULE, "sentence about"), (NUMBER_RULE, "number only"))
             if cue in evidence and rule not in current]
    return " ".join([current, *rules]) if rules else current + " Be precise."


def _task(system: str, user: str) -> str:
    from stub_llm import chat_fields

    fields = _fields(user)
    if "`fact` (str)" in system.split("Your output fields are:", 1)[-1]:  # the extractor
        sentences = re.findall(r"[^.]+\.", fields["passage"])
        day = _day(fields["question"])
        chosen = next(s for s in sentences if day in s) if QUOTE_RULE in system else sentences[0]
        return chat_fields(reasoning="Look for the sentence.", fact=chosen.strip())
    number = (re.findall(r"\d+", fields.get("fact", "")) or ["0"])[0]
    unit = fields["question"].split()[2]
    return chat_fields(answer=number if NUMBER_RULE in system else f"{number} {unit}")


def respond(request: Any) -> str:
    """The stub's responder: task model, gepa-lab's reflector prompt, dspy.GEPA's proposer."""
    system, user = request.system, request.last_user
    if "You revise one component" in system:  # gepa-lab's reflection prompt (JSON reply)
        component = re.search(r"Selected component: `([^`]+)`", user).group(1)
        current = json.loads(user.split(f"## Current value of `{component}`\n```json\n", 1)[1].split("\n```")[0])
        records = user.split("<records>", 1)[1]
        return json.dumps({component: _improved(current, records), "rationale": "from the feedback"})
    if "new_instruction" in system:  # dspy.GEPA's InstructionProposer (JSON adapter)
        fields = _fields(user)
        current = fields.get("current_instruction", "")
        return json.dumps({"new_instruction": _improved(current, fields.get("examples_with_feedback", ""))})
    return _task(system, user)
