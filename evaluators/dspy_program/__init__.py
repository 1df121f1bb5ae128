"""`evaluator=dspy_program`: any DSPy program's instructions, optimized under the holdout protocol.

    DspyProgramEvaluator(program="pkg.mod:make_program", metric="pkg.mod:metric", inputs=["question"], lm=...)
    program_texts(program) / apply_texts(program, artifact)   the program <-> a texts artifact
    freeze_hf_dataset(...)                                    an HF save_to_disk dataset -> JSONL splits + manifest

From Python, `gepa_lab.dspy.GEPA` (a DSPy teleprompter) builds this evaluator from a program, a
metric and `dspy.Example` lists. dspy is imported when an evaluator is built, not with this package.
"""

from evaluators.dspy_program.evaluator import DspyProgramEvaluator, ProgramStateTracker
from evaluators.dspy_program.hf import freeze_hf_dataset
from evaluators.dspy_program.texts import apply_texts, program_texts, seed_json

__all__ = ["DspyProgramEvaluator", "ProgramStateTracker", "apply_texts", "freeze_hf_dataset", "program_texts",
           "seed_json"]
