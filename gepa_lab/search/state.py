"""The search state: the pool with its Pareto fronts, and the run's one seeded RNG.

The engine and the proposal pipeline advance it; `snapshot()` / `restore()` turn it into the
plain values a round end records (docs/architecture.md, "The run record").
"""

from __future__ import annotations

import base64
import math
import random
import struct
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from gepa_lab.core.artifacts import Artifact, PromptArtifact
from gepa_lab.core.contracts import Evaluation
from gepa_lab.search.pareto import ordered_selection, prune_dominated
from gepa_lab.search.policies.frontier import Frontier, Instance
from gepa_lab.search.policies.parent import Pareto

SEED_BITS = 63


def draw_seed(rng: random.Random) -> int:
    return rng.getrandbits(SEED_BITS)


def validation_seeds(validation_seed: int, repeats: int) -> list[int]:
    """The evaluation seeds of a validation scoring: the run's validation seed, then draws from an
    RNG seeded with it (not from the run's RNG: the holdout seeds and the search's draws stay those
    of one repeat)."""
    rng = random.Random(validation_seed)
    return [validation_seed] + [draw_seed(rng) for _ in range(repeats - 1)]


@dataclass
class Candidate:
    """A pool member. `cursor` indexes artifact.COMPONENTS: the next component in round-robin
    order. `parents` has two ids for a merge, one for a reflective child, none for the seed."""

    id: str
    artifact: Artifact
    parents: tuple[str, ...]
    components: tuple[str, ...]
    iteration: int | None
    cursor: int
    validation: tuple[Evaluation, ...]
    metric_calls: int = 0  # budget spent when it joined the pool
    rationale: str = ""
    joined_after: int = 0  # proposals made before it joined
    scores: list[float] = field(init=False, repr=False)
    mean: float = field(init=False, repr=False)
    view: Artifact | None = field(default=None, repr=False)  # what the reflector sees (cached)

    def __post_init__(self) -> None:
        self.scores = [ev.score for ev in self.validation]
        self.mean = math.fsum(self.scores) / len(self.scores) if self.scores else 0.0

    @property
    def parent_id(self) -> str | None:
        return self.parents[0] if self.parents else None

    @property
    def component(self) -> str | None:
        return "+".join(self.components) if self.components else None


class Pool:
    """Pool members in joining order, with the frontier's fronts kept up to date as they join."""

    def __init__(self, frontier: Frontier | None = None):
        self.frontier = frontier or Instance()
        self.members: list[Candidate] = []
        self._by_id: dict[str, Candidate] = {}
        self._values: dict[str, list[float]] = {}
        self._top: list[float] = []  # per frontier key: the best value
        self._fronts: list[set[str]] = []  # per key: who holds it
        self._selection: list[str] | None = None
        self._alive: set[str] | None = None

    def add(self, candidate: Candidate) -> None:
        values = self.frontier.values(candidate.validation)
        self.members.append(candidate)
        self._by_id[candidate.id] = candidate
        self._values[candidate.id] = values
        if not self._top:
            self._top, self._fronts = [-math.inf] * len(values), [set() for _ in values]
        for key, value in enumerate(values):  # the fronts move where the newcomer ties or beats the best
            if value > self._top[key]:
                self._top[key], self._fronts[key] = value, {candidate.id}
            elif value == self._top[key]:  # exact ties kept
                self._fronts[key].add(candidate.id)
        self._selection = self._alive = None

    def __contains__(self, candidate_id: object) -> bool:
        return candidate_id in self._by_id

    def __len__(self) -> int:
        return len(self.members)

    def get(self, candidate_id: str) -> Candidate:
        return self._by_id[candidate_id]

    def _held(self) -> list[set[str]]:
        # A key nobody has a value for (an objective no candidate reports) is nobody's front.
        return [front if top != -math.inf else set() for front, top in zip(self._fronts, self._top, strict=True)]

    def survivors(self) -> set[str]:
        if self._alive is None:
            self._alive = prune_dominated({c.id: c.mean for c in self.members}, self._held())
        return self._alive

    def selection(self) -> list[str]:
        """Per frontier key in order, each surviving front holder in pool order."""
        if self._selection is None:
            self._selection = ordered_selection(self._held(), self.survivors(), [c.id for c in self.members])
        return self._selection

    def best(self) -> Candidate:
        return max(self.members, key=lambda c: c.mean)  # the earliest on ties: the seed wins ties


def select_parent(scores: Mapping[str, Sequence[float]], rng: random.Random) -> str:
    """Instance-level Pareto selection over a score matrix (candidate id -> scores per validation
    case, in pool order): a uniform draw from the selection list, so a candidate is drawn in
    proportion to the cases it owns; with no validation cases, no draw and the best mean."""
    if not scores:
        raise ValueError("cannot select a parent from an empty pool")
    pool = Pool()
    for cid, row in scores.items():
        evaluations = tuple(Evaluation(str(i), score) for i, score in enumerate(row))
        pool.add(Candidate(cid, PromptArtifact(cid), (), (), None, 0, evaluations))
    return Pareto().select(pool, rng).id


@dataclass
class SearchState:
    rng: random.Random
    validation_seed: int
    pool: Pool
    iteration: int = 0  # the next iteration to run
    proposals: int = 0
    skipped: int = 0  # proposals skipped because the parent was already perfect on its minibatch
    stop_reason: str | None = None

    def snapshot(self) -> dict[str, Any]:
        """Small, as it is written at every round end: the RNG's state packed (3.3 KB), the pool by
        its size (its members are the seed and the accepted proposals, in order)."""
        version, internal, gauss = self.rng.getstate()
        packed = base64.b64encode(struct.pack(f"<{len(internal)}I", *internal)).decode("ascii")
        return {"rng": [version, packed, gauss], "iteration": self.iteration, "proposals": self.proposals,
                "skipped": self.skipped, "pool_size": len(self.pool), "cursors": [c.cursor for c in self.pool.members]}

    def restore(self, snapshot: dict[str, Any]) -> None:
        version, packed, gauss = snapshot["rng"]
        raw = base64.b64decode(packed)
        self.rng.setstate((version, struct.unpack(f"<{len(raw) // 4}I", raw), gauss))
        self.iteration, self.proposals = int(snapshot["iteration"]), int(snapshot["proposals"])
        self.skipped = int(snapshot.get("skipped", 0))
        for cand, cursor in zip(self.pool.members, snapshot["cursors"], strict=True):
            cand.cursor = int(cursor)
