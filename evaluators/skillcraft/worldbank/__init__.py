"""The worldbank family ("worldbank-indicator-reporter"): a World-Bank-Indicators-like API with
ISO3 codes to look up (a guessed code loops), newest-first paginated series, null values, raw
units, aggregates mixed into the country list and transient rate limits
(docs/skillcraft_sim.md §3.4). Its tables: family.yaml.
"""
