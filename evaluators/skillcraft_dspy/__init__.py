"""`evaluator=skillcraft_dspy`: SkillCraft-sim tasks solved by a real LM agent (`dspy.ReAct` over
the family's tools), graded by the simulator's rubric.

    SkillCraftDspyEvaluator(family="recipe", lm=...)

dspy is imported when the evaluator is built, not with this package.
"""

from evaluators.skillcraft_dspy.evaluator import SkillCraftDspyEvaluator

__all__ = ["SkillCraftDspyEvaluator"]
