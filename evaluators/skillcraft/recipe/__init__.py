"""The recipe family ("recipe-cookbook-builder"): a paginated recipe API with overlapping pages,
a self-pointing empty sentinel page (the loop trap), stale `total_hint`s, mixed units, missing
values and transient rate limits (docs/skillcraft_sim.md §3.2). Its tables: family.yaml.
"""
