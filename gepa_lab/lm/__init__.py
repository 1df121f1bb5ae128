"""Real language models through DSPy and litellm: LM settings (`lm.task`, `lm.reflection`), the
`dspy.LM` they build, usage and cost accounting, and the LM-backed reflector.

Importing this package is cheap: dspy and litellm are imported only when an LM is built.
"""

from gepa_lab.lm.config import LMConfig, LMSettings, as_settings
from gepa_lab.lm.reflector import DspyReflector
from gepa_lab.lm.usage import Usage, UsageMeter

__all__ = ["DspyReflector", "LMConfig", "LMSettings", "Usage", "UsageMeter", "as_settings"]
