"""Leaf values of gepa-lab: contracts, artifacts, settings, events, results and errors. Nothing
here imports any other part of gepa_lab."""
