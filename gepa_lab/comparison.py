"""A paired comparison that says no more than its data: the mean paired difference, an interval that
resamples every level of the design, a sign-flip test, and better / tied / worse by a stated tolerance.

Pairs fall into clusters (pairs sharing every factor but the compared one and the nuisance axes: one
family and random seed with merge off and on are near-duplicates, not two observations) and strata
(the holdout split they were judged on). The interval is a two-way bootstrap: each resample draws,
within each stratum, clusters with replacement and holdout cases with replacement (one case draw for
every pair judged on that split), and recomputes the mean difference. The test flips the signs of
whole clusters (every sign pattern when there are at most log2(resamples) clusters, else a random
sample); it holds the holdout cases fixed, so the interval is the more cautious of the two. With
fewer than MIN_CLUSTERS clusters there is neither, and `why` says so.
"""

from __future__ import annotations

from collections.abc import Hashable, Sequence
from dataclasses import dataclass

import numpy as np

MIN_CLUSTERS = 5
# The score's resolution: score differences within it are no difference. Applied per holdout case
# when the per-case differences are known (a pair is tied when every case is within it), else to the
# pair's mean. 0.01 is the SkillCraft score's token-efficiency credit: two winners that pass the same
# checks on every case differ by less.
TOLERANCE = 0.01


@dataclass(frozen=True)
class Comparison:
    estimate: float  # mean paired difference
    low: float | None  # interval (None: too few clusters, see `why`)
    high: float | None
    p_value: float | None  # two-sided cluster sign-flip test of "no difference"
    better: int  # pairs with a difference beyond the tolerance (see TOLERANCE), above 0
    tied: int
    worse: int
    pairs: int
    clusters: int
    tolerance: float
    why: str = ""


def paired_comparison(differences: Sequence[float], clusters: Sequence[Hashable],
                      case_differences: Sequence[Sequence[float]] | None = None, *,
                      strata: Sequence[Hashable] | None = None, tolerance: float = TOLERANCE,
                      confidence: float = 0.95, resamples: int = 10_000, seed: int = 0) -> Comparison:
    """Compare paired values: `differences[i]` is pair i's difference (value minus baseline),
    `clusters[i]` its cluster label, `case_differences[i]` (optional) its per-holdout-case
    differences, whose mean is `differences[i]`; given, the holdout cases are resampled too.
    `strata[i]` (optional) names the holdout split: cases and clusters are resampled within it."""
    d = np.asarray(differences, dtype=float)
    n = len(d)
    if n == 0 or len(clusters) != n or (strata is not None and len(strata) != n):
        raise ValueError(f"{n} differences need as many cluster labels (and strata), at least one pair")
    labels: list[Hashable] = list(strata) if strata is not None else [None] * n
    keys = list(zip(labels, clusters, strict=True))
    codes = np.array([{k: i for i, k in enumerate(dict.fromkeys(keys))}[k] for k in keys])
    k = int(codes.max()) + 1
    within = (np.abs(d) <= tolerance if case_differences is None
              else np.array([np.max(np.abs(row), initial=0.0) <= tolerance for row in case_differences]))
    better, worse = int((~within & (d > 0)).sum()), int((~within & (d < 0)).sum())
    counts = {"estimate": float(d.mean()), "better": better, "tied": n - better - worse, "worse": worse,
              "pairs": n, "clusters": k, "tolerance": tolerance}
    if k < MIN_CLUSTERS:
        return Comparison(low=None, high=None, p_value=None, **counts,  # type: ignore[arg-type]
                          why=f"{k} cluster{'s' * (k != 1)} of pairs: an interval needs at least {MIN_CLUSTERS} "
                              "(sweep more random seeds)")
    rng = np.random.default_rng(seed)
    low, high = np.quantile(_bootstrap(d, codes, labels, case_differences, rng, resamples),
                            [(1 - confidence) / 2, (1 + confidence) / 2])
    return Comparison(low=float(low), high=float(high), p_value=_sign_flip(d, codes, k, rng, resamples),
                      **counts)  # type: ignore[arg-type]


def _bootstrap(d: np.ndarray, codes: np.ndarray, labels: list[Hashable],
               case_differences: Sequence[Sequence[float]] | None, rng: np.random.Generator,
               resamples: int) -> np.ndarray:
    """The mean difference under `resamples` two-way resamples (clusters and cases, per stratum)."""
    total, weight = np.zeros(resamples), np.zeros(resamples)
    for stratum in dict.fromkeys(labels):
        rows = np.array([i for i, label in enumerate(labels) if label == stratum])
        local = np.unique(codes[rows], return_inverse=True)[1]
        k = int(local.max()) + 1
        pair_weights = rng.multinomial(k, np.full(k, 1 / k), size=resamples)[:, local]
        values = np.broadcast_to(d[rows], (resamples, len(rows)))
        if case_differences is not None:
            cases = np.array([case_differences[i] for i in rows], dtype=float)
            if cases.ndim != 2 or not np.allclose(cases.mean(axis=1), d[rows], atol=1e-9):
                raise ValueError("per-case differences must have one row per pair, of equal length within a "
                                 "stratum, each averaging to its pair's difference")
            c = cases.shape[1]
            values = rng.multinomial(c, np.full(c, 1 / c), size=resamples) @ cases.T / c
        total += (pair_weights * values).sum(axis=1)
        weight += pair_weights.sum(axis=1)
    return total / weight


def _sign_flip(d: np.ndarray, codes: np.ndarray, k: int, rng: np.random.Generator, resamples: int) -> float:
    """Two-sided p-value of the mean difference under random signs of whole clusters."""
    sums = np.bincount(codes, weights=d, minlength=k)
    observed = abs(sums.sum()) - 1e-12 * max(1.0, float(np.abs(sums).sum()))
    if 2 ** k <= resamples:  # every sign pattern: the exact p-value
        signs = ((np.arange(2 ** k)[:, None] >> np.arange(k)) & 1) * 2 - 1
        return float((np.abs(signs @ sums) >= observed).mean())
    signs = rng.choice(np.array([-1.0, 1.0]), size=(resamples, k))
    return float((1 + (np.abs(signs @ sums) >= observed).sum()) / (resamples + 1))
