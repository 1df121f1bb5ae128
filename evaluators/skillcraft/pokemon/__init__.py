"""The pokemon family ("pokemon-evolution-reporter"): a PokéAPI-like API with form-only species
(a bare name loops), branching evolution chains, older past_stats, dual types, a type chart read
in one direction, immunities and transient rate limits (docs/skillcraft_sim.md §3.6). Its
tables: family.yaml.
"""
