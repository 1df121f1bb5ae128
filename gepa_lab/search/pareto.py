"""Instance-level Pareto parent selection with coverage-dominance pruning (docs/design.md §3).

Pure functions over a score matrix (candidate id -> scores per validation case, in pool order).
The pool (`search/state.py`) keeps the fronts of its frontier up to date incrementally and calls
`prune_dominated` / `ordered_selection` itself; `select_parent` is the instance-level rule in one
call.
"""

from __future__ import annotations

import math
import random
from collections.abc import Mapping, Sequence


def instance_fronts(scores: Mapping[str, Sequence[float]]) -> list[set[str]]:
    """Per validation case: every candidate holding the top score (exact ties kept)."""
    fronts = []
    for column in zip(*scores.values(), strict=True):
        best = max(column)
        fronts.append({c for c, value in zip(scores, column, strict=True) if value == best})
    return fronts


def prune_dominated(means: Mapping[str, float], fronts: list[set[str]]) -> set[str]:
    """Remove, one at a time, candidates whose every front also holds another survivor.

    Scan order is ascending validation mean, then id, so the weakest redundant candidate goes
    first. (The rule restarts the scan after each removal; one pass gives the same survivors,
    because a removal only makes the others less removable: a candidate kept once stays kept.)
    """
    on_front = set().union(*fronts) if fronts else set()
    order = sorted(on_front, key=lambda c: (means[c], c))
    holding: dict[str, list[int]] = {c: [] for c in on_front}
    for index, front in enumerate(fronts):
        for cand in front:
            holding[cand].append(index)
    alive_count = [len(front) for front in fronts]  # survivors on each front
    alive = set(on_front)
    for cand in order:
        if all(alive_count[i] >= 2 for i in holding[cand]):
            alive.discard(cand)
            for i in holding[cand]:
                alive_count[i] -= 1
    return alive


def ordered_selection(fronts: Sequence[set[str]], alive: set[str], pool_order: Sequence[str]) -> list[str]:
    """Per case in dataset order, each surviving front member in pool order."""
    position = {c: i for i, c in enumerate(pool_order)}
    return [c for front in fronts for c in sorted(front & alive, key=position.__getitem__)]


def selection_list(scores: Mapping[str, Sequence[float]]) -> list[str]:
    """Per case in dataset order, each surviving front member in pool order."""
    fronts = instance_fronts(scores)
    means = {c: math.fsum(s) / max(1, len(s)) for c, s in scores.items()}
    return ordered_selection(fronts, prune_dominated(means, fronts), list(scores))


def select_parent(scores: Mapping[str, Sequence[float]], rng: random.Random) -> str:
    """Draw uniformly from the selection list (so frequency ∝ number of cases a candidate owns).

    `scores` keys are in pool insertion order; values are per validation case in dataset order.
    """
    if not scores:
        raise ValueError("cannot select a parent from an empty pool")
    weighted = selection_list(scores)
    if not weighted:  # only possible with zero validation cases; no draw, best mean wins
        return max(scores, key=lambda c: math.fsum(scores[c]))
    return weighted[rng.randrange(len(weighted))]
