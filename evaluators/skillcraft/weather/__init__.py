"""The weather family ("weather-forecast-reporter"): an Open-Meteo-like geocoder and daily
forecast endpoint with shared place names, accented names the ASCII geocoder cannot find (the
loop trap), imperial US stations, null gaps, a stale whole-horizon summary block, 7-day forecast
windows (long ranges only on m2 / h1) and transient rate limits (docs/skillcraft_sim.md §3.3).
Its tables: family.yaml.
"""
