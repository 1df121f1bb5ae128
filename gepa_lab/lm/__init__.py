"""Real language models through DSPy and litellm: LM settings (`lm.task`, `lm.reflection`), the
`dspy.LM` they build, usage and cost accounting, the LM-backed reflector, and the pieces an
evaluator that calls an LM needs (the public toolkit for plugins, beside `gepa_lab`'s own names).

Importing this package is cheap: dspy and litellm are imported only when an LM is built.
"""

from gepa_lab.lm.client import build_lm, lm_and_settings, transient_errors
from gepa_lab.lm.config import LMConfig, LMSettings, as_settings
from gepa_lab.lm.metered import Metered, case_seed, metered
from gepa_lab.lm.records import compose_feedback, trace_line
from gepa_lab.lm.reflector import DspyReflector
from gepa_lab.lm.usage import Usage, UsageMeter

__all__ = ["DspyReflector", "LMConfig", "LMSettings", "Metered", "Usage", "UsageMeter", "as_settings", "build_lm",
           "case_seed", "compose_feedback", "lm_and_settings", "metered", "trace_line", "transient_errors"]
