"""Instance-level Pareto parent selection with coverage-dominance pruning (docs/design.md §3).

Pure functions over the fronts (per frontier key, the candidates holding its best value). The pool
(`search/state.py`) keeps the fronts of its frontier up to date as candidates join and calls
these; `select_parent` (there) is the instance-level rule in one call over a score matrix.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence


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
