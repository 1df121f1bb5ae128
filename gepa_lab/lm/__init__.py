"""Real language models through DSPy and litellm: LM settings (`lm.task`, `lm.reflection`), the
`dspy.LM` they build, usage and cost accounting, the LM-backed reflector, the evaluator of any DSPy
program (`program.py`: `evaluator=dspy_program` and the teleprompter's), and the pieces an evaluator
that calls an LM needs (the public toolkit for plugins, beside `gepa_lab`'s own names).

Importing this package is cheap: dspy and litellm are imported only when an LM is built.
"""

from gepa_lab.lm.client import build_lm, chat, transient_errors
from gepa_lab.lm.config import LMConfig, LMSettings
from gepa_lab.lm.loading import load_program
from gepa_lab.lm.metered import LMCaller, Metered
from gepa_lab.lm.records import compose_feedback, trace_line
from gepa_lab.lm.reflector import DspyReflector
from gepa_lab.lm.server import LOCAL, ServerSettings, serving
from gepa_lab.lm.texts import seed_json
from gepa_lab.lm.usage import Usage

__all__ = ["LOCAL", "DspyReflector", "LMCaller", "LMConfig", "LMSettings", "Metered", "ServerSettings", "Usage",
           "build_lm", "chat", "compose_feedback", "load_program", "seed_json", "serving", "trace_line",
           "transient_errors"]
