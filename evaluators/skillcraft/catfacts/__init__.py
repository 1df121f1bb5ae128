"""The catfacts family ("cat-facts-collector"): a catfact.ninja-like paginated listing with
repeated facts, HTML entities, stale lengths, truncated long facts, a tempting random-fact
endpoint (the loop trap) and transient rate limits (docs/skillcraft_sim.md §3.5). Its tables:
family.yaml.
"""
