"""Progress reporting: a bar over the metric budget, or log lines off a terminal."""

from __future__ import annotations

import logging

import pytest
from helpers_long import HashEvaluator, VaryingReflector, long_dataset, long_seed

from gepa_lab import SearchConfig, optimize
from gepa_lab.tracking.progress import ProgressTracker


def test_bar_tracks_metric_calls_and_shows_search_state(capsys):
    tracker = ProgressTracker(mode="bar")
    result = optimize(long_seed(), long_dataset(), HashEvaluator(), VaryingReflector(),
                      SearchConfig(max_iterations=3, max_metric_calls=200, minibatch_size=2), trackers=[tracker])
    err = capsys.readouterr().err
    assert "/200" in err and "pool=" in err and "best=" in err and "usd=" in err
    last = err.replace("\r", "\n").strip().splitlines()[-1]
    # A run capped by max_iterations ends at 100 % of what it used, not at a fraction of the budget.
    assert last.startswith("gepa: 100%") and f"{result.metric_calls}/{result.metric_calls}" in last


def test_log_mode_writes_one_line_per_iteration(caplog):
    caplog.set_level(logging.INFO, logger="gepa_lab.progress")
    optimize(long_seed(), long_dataset(), HashEvaluator(), VaryingReflector(),
             SearchConfig(max_iterations=3, max_metric_calls=200, minibatch_size=2),
             trackers=[ProgressTracker(mode="log")])
    lines = [r.getMessage() for r in caplog.records if r.name == "gepa_lab.progress"]
    assert [x.split(":")[0] for x in lines if x.startswith("iteration")] == ["iteration 1/3", "iteration 2/3",
                                                                             "iteration 3/3"]
    assert "best validation" in lines[-1] and "metric calls" in lines[-1]


def test_unknown_mode_is_refused():
    with pytest.raises(ValueError, match="progress must be one of"):
        ProgressTracker(mode="loud")
