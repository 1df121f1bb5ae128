"""Single-turn prompt tasks on a real model (`evaluator=prompt`, `reflector=prompt_rules`): the
artifact is a prompt, each case input -> answer graded by a metric; the tasks shipped as data
are under datasets/prompt/ (docs/real_models.md)."""

from evaluators.prompt_task.evaluator import PromptEvaluator
from evaluators.prompt_task.reflector import PromptRulesReflector

__all__ = ["PromptEvaluator", "PromptRulesReflector"]
