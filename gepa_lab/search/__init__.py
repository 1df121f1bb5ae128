"""The search: engine (lifecycle, budget, stop rules), strategy (one iteration), Pareto pool,
evaluator and reflector boundaries, promotion and the submission hand-off."""
