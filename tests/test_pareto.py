"""Instance-level Pareto parent selection (docs/design.md §3.6)."""

from __future__ import annotations

import random
from collections import Counter

import pytest

from gepa_lab import select_parent

WORKED = {"A": [1.0, 1.0, 0.2], "B": [0.2, 0.2, 1.0], "C": [1.0, 1.0, 0.0]}


def draws(scores, n, seed):
    rng = random.Random(seed)
    return [select_parent(scores, rng) for _ in range(n)]


def test_worked_example_prunes_c_and_draws_a_two_thirds_b_one_third():
    n = 6000
    counts = Counter(draws(WORKED, n, seed=42))
    assert counts["C"] == 0
    assert set(counts) == {"A", "B"}
    assert counts["A"] / n == pytest.approx(2 / 3, abs=0.03)
    assert counts["B"] / n == pytest.approx(1 / 3, abs=0.03)


def test_worked_example_does_not_depend_on_pool_order():
    reordered = {"C": WORKED["C"], "B": WORKED["B"], "A": WORKED["A"]}
    counts = Counter(draws(reordered, 3000, seed=7))
    assert counts["C"] == 0
    assert counts["A"] / 3000 == pytest.approx(2 / 3, abs=0.04)


def test_same_rng_seed_gives_identical_draw_sequence():
    first = draws(WORKED, 50, seed=123)
    second = draws(WORKED, 50, seed=123)
    assert first == second
    assert set(first) == {"A", "B"}  # the sequence is not degenerate
    assert draws(WORKED, 50, seed=124) != first


def test_ties_on_an_instance_keep_every_tied_candidate():
    # Case 1 is tied between A and B; each also owns one case alone, so neither is pruned and the
    # selection list is [A, B, A, B] (case 1 contributes both).
    scores = {"A": [1.0, 1.0, 0.0], "B": [1.0, 0.0, 1.0]}
    n = 4000
    counts = Counter(draws(scores, n, seed=5))
    assert counts["A"] / n == pytest.approx(0.5, abs=0.04)
    assert counts["B"] / n == pytest.approx(0.5, abs=0.04)


def test_tied_candidate_that_owns_a_case_alone_is_weighted_by_every_front_it_is_on():
    # A ties B on case 1 and owns case 2 alone; B owns case 3 alone: list [A, B, A, B].
    # C ties A and B on case 1 only, so it is covered and pruned.
    scores = {"A": [0.5, 0.9, 0.1], "B": [0.5, 0.1, 0.9], "C": [0.5, 0.0, 0.0]}
    counts = Counter(draws(scores, 4000, seed=9))
    assert counts["C"] == 0
    assert counts["A"] / 4000 == pytest.approx(0.5, abs=0.04)


def test_all_equal_scores_everyone_tied_then_pruned_to_one_survivor():
    # Every candidate is on every front (ties kept); coverage pruning then removes them one at a
    # time in (mean, id) order while another survivor covers them, leaving the last id.
    scores = {"B": [0.5, 0.5], "A": [0.5, 0.5], "C": [0.5, 0.5]}
    assert set(draws(scores, 200, seed=3)) == {"C"}


def test_all_zero_scores_still_select_a_candidate():
    scores = {"seed": [0.0, 0.0, 0.0], "child": [0.0, 0.0, 0.0]}
    picked = set(draws(scores, 50, seed=1))
    assert len(picked) == 1
    assert picked <= {"seed", "child"}


def test_single_candidate_is_always_selected():
    assert set(draws({"only": [0.3, 0.7]}, 20, seed=1)) == {"only"}
    assert set(draws({"only": [0.0]}, 20, seed=1)) == {"only"}


def test_low_mean_owner_of_a_case_survives_and_covered_candidate_is_never_drawn():
    # B owns case 2 alone with a low mean; it must never be pruned. D is covered by A everywhere.
    scores = {"A": [1.0, 0.0, 1.0], "B": [0.0, 0.3, 0.0], "D": [1.0, 0.0, 0.9]}
    counts = Counter(draws(scores, 3000, seed=11))
    assert counts["D"] == 0
    assert counts["B"] / 3000 == pytest.approx(1 / 3, abs=0.04)
    assert counts["A"] / 3000 == pytest.approx(2 / 3, abs=0.04)
