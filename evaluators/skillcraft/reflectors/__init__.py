"""Offline reflectors for SkillCraft-sim skills.

    feedback.FeedbackReflector   family-agnostic: reads only feedback, trace and inputs (the default)
    tuned.TunedReflector         co-designed with the simulator's families (an upper reference)

This package's `__init__` imports nothing, so loading the feedback reflector loads no family.
"""
