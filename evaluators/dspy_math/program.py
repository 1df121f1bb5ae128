"""The program `experiment=dspy_math` optimizes: one chain-of-thought step, question -> answer.
Its one predictor is named `predict`, so the seed artifact is `{"kind": "texts", "predict": ...}`."""

from __future__ import annotations

import dspy


class WordProblem(dspy.Signature):
    """Solve the arithmetic word problem."""

    question: str = dspy.InputField()
    answer: str = dspy.OutputField(desc="the final result")


def make_program() -> dspy.Module:
    return dspy.ChainOfThought(WordProblem)
