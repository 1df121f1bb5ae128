"""The worked example `experiment=dspy_math`: a `dspy.ChainOfThought` arithmetic word-problem
solver (`program.py`), a feedback metric that says what went wrong (`metric.py`) and the
generator of its bundled dataset (`generate.py` -> datasets/dspy_math/)."""
