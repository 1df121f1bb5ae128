"""A DSPy program's instructions as a `texts` artifact (one component per predictor: its name ->
its instructions), and the program with an artifact's instructions applied."""

from __future__ import annotations

import json
from typing import Any

from gepa_lab.core.artifacts import Artifact, TextsArtifact


def program_texts(program: Any) -> TextsArtifact:
    """The program's current instructions, in `named_predictors()` order."""
    pairs = [(name, predictor.signature.instructions) for name, predictor in program.named_predictors()]
    if not pairs:
        raise ValueError(f"program {type(program).__name__} has no predictors to optimize")
    return TextsArtifact(pairs)


def apply_texts(program: Any, artifact: Artifact) -> Any:
    """A deep copy of `program` whose predictors carry the artifact's instructions (names checked)."""
    names = [name for name, _ in program.named_predictors()]
    if not isinstance(artifact, TextsArtifact):
        raise ValueError(f"the dspy_program evaluator needs a texts artifact (one text per predictor), got "
                         f"{artifact.kind!r}; write the seed with `python -m evaluators.dspy_program seed <program>`")
    if sorted(artifact.COMPONENTS) != sorted(names):
        raise ValueError(f"the artifact names {list(artifact.COMPONENTS)} do not match the program's predictors "
                         f"{names}; regenerate the seed with `python -m evaluators.dspy_program seed <program>`")
    copy = program.deepcopy()
    for name, predictor in copy.named_predictors():
        predictor.signature = predictor.signature.with_instructions(artifact.text(name))
    return copy


def seed_json(program: Any) -> str:
    """The seed artifact file for a program (`{"kind": "texts", name: instructions, ...}`)."""
    return json.dumps({"kind": "texts", **program_texts(program).to_dict()}, indent=2, ensure_ascii=False) + "\n"
