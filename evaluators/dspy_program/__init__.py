"""`evaluator=dspy_program` (any DSPy program's instructions, optimized under the holdout protocol):
its evaluator is the library's (`gepa_lab.lm.program.DspyProgramEvaluator`, which `gepa_lab.dspy.GEPA`
builds too); this package adds the command line that writes a program's seed file and freezes a
Hugging Face dataset:

    python -m evaluators.dspy_program seed <module>:<attr>
    python -m evaluators.dspy_program freeze-hf <saved dir> <out> ...
    freeze_hf_dataset(...)        an HF save_to_disk dataset -> JSONL splits + manifest
"""

from evaluators.dspy_program.hf import freeze_hf_dataset

__all__ = ["freeze_hf_dataset"]
