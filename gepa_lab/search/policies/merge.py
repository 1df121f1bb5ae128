"""GEPA+Merge (`search/merge=on`): after reflective children are accepted, a later round may
instead combine two frontier candidates that share an ancestor, component by component
(`proposal.merged`). The merged child must score at least as well as the better parent on a
Feedback minibatch (never Validation or Holdout: that would leak selection data into the
proposal) before it is scored on Validation like any other child."""

from __future__ import annotations

import random
from typing import TYPE_CHECKING, Any

from gepa_lab.core.artifacts import Artifact, artifact_id, get_component, with_component

if TYPE_CHECKING:
    from gepa_lab.search.state import Candidate, Pool


def ancestors(pool: Pool, candidate: Candidate) -> set[str]:
    seen: set[str] = set()
    todo = list(candidate.parents)
    while todo:
        cid = todo.pop()
        if cid not in seen and cid in pool:
            seen.add(cid)
            todo.extend(pool.get(cid).parents)
    return seen


def merged(ancestor: Candidate, a: Candidate, b: Candidate) -> Artifact | None:
    """GEPA+Merge's child: per component, the descendant's value that differs from the common
    ancestor's (both changed it: the one with the higher validation mean; ties: `a`). None when it
    would equal either parent."""
    child = ancestor.artifact
    for component in ancestor.artifact.COMPONENTS:
        base = get_component(ancestor.artifact, component)
        va, vb = get_component(a.artifact, component), get_component(b.artifact, component)
        if va != base and (vb == base or a.mean >= b.mean):
            child = with_component(child, component, va)
        elif vb != base:
            child = with_component(child, component, vb)
    return None if child in (a.artifact, b.artifact) else child


class Merge:
    """At most `max_merges` merge attempts in a run; one becomes due per accepted reflective child
    and is tried in the next round (one per round, as its first proposal)."""

    draws = "one randrange over the eligible (pair, ancestor) triples, when a merge is due"

    def __init__(self, max_merges: int = 5):
        if isinstance(max_merges, bool) or not isinstance(max_merges, int) or max_merges < 1:
            raise ValueError(f"search.merge.max_merges must be an integer >= 1 (got {max_merges!r})")
        self.max_merges = max_merges
        self.due, self.tried = 0, 0
        self._attempted: set[tuple[str, str, str]] = set()

    def after_round(self, accepted_reflective: int) -> None:
        self.due = min(self.due + accepted_reflective, self.max_merges - self.tried)

    def pick(self, pool: Pool, rng: random.Random) -> tuple[Candidate, Candidate, Artifact] | None:
        """A due merge's parents and child, or None (nothing due, or no eligible pair)."""
        if self.due <= 0:
            return None
        triples = self._eligible(pool)
        if not triples:
            return None
        a, b, ancestor, child = triples[rng.randrange(len(triples))]
        self._attempted.add((a.id, b.id, ancestor.id))
        self.due -= 1
        self.tried += 1
        return a, b, child

    def _eligible(self, pool: Pool) -> list[tuple[Candidate, Candidate, Candidate, Artifact]]:
        order = {c.id: i for i, c in enumerate(pool.members)}
        holders = sorted(pool.survivors(), key=order.__getitem__)
        out = []
        for i, a_id in enumerate(holders):
            for b_id in holders[i + 1:]:
                a, b = pool.get(a_id), pool.get(b_id)
                lineage_a, lineage_b = ancestors(pool, a), ancestors(pool, b)
                if a.id in lineage_b or b.id in lineage_a:
                    continue  # one descends from the other: nothing to combine
                common = [c for c in map(pool.get, lineage_a & lineage_b) if c.mean <= min(a.mean, b.mean)]
                if not common:
                    continue
                ancestor = max(common, key=lambda c: order[c.id])  # the most recent one
                child = merged(ancestor, a, b)
                if (child is None or (a.id, b.id, ancestor.id) in self._attempted
                        or artifact_id(child) in pool):
                    continue
                out.append((a, b, ancestor, child))
        return out

    def state(self) -> dict[str, Any]:
        return {"due": self.due, "tried": self.tried, "attempted": sorted(list(t) for t in self._attempted)}

    def restore(self, state: dict[str, Any]) -> None:
        self.due, self.tried = int(state["due"]), int(state["tried"])
        self._attempted = {(str(a), str(b), str(c)) for a, b, c in state["attempted"]}
