"""Proposal sources: what a round proposes. Reflection (GEPA's mutation: the reflector rewrites
a parent's component) fills every round; GEPA+Merge (`search/merge=on`) may first add one merge of
two frontier candidates that share an ancestor, combined component by component (`merged`). A
source plans through the round (`gepa_lab.search.planning.RoundPlanner`: `fits(parents)`,
`parent()`, `add(parents, child, components, kind)`): it draws its parents, the round then draws the
minibatch and seeds; the pipeline scores every parent and the child on that minibatch, and the acceptance
policy judges the child against its best parent — on Feedback cases only (Validation or Holdout
would leak selection data into the proposal)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from gepa_lab.core.artifacts import Artifact, artifact_id, get_component, with_component
from gepa_lab.core.events import Proposal
from gepa_lab.core.settings import check_int

if TYPE_CHECKING:
    from gepa_lab.search.planning import RoundPlanner as Round  # what a source plans through
    from gepa_lab.search.state import Candidate, Pool


class Reflection:
    """One reflective proposal per open slot, each on a parent the parent policy draws (with
    `same_parent`, one draw for the whole round: `search.proposal_parents=same`)."""

    draws = "the parent policy's, per proposal (per round with same_parent)"

    def __init__(self, same_parent: bool = False):
        self.same_parent = same_parent

    def plan(self, r: Round) -> None:
        same = r.parent() if self.same_parent and len(r.plans) < r.k else None
        while r.fits(1):
            r.add((same or r.parent(),))


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
    and is tried in the next round (one per round, before the reflective proposals)."""

    draws = "one randrange over the eligible (pair, ancestor) triples, when a merge is due"

    def __init__(self, max_merges: int = 5):
        check_int(max_merges, "search.merge.max_merges", 1)
        self.max_merges = max_merges
        self.due, self.tried = 0, 0
        self._attempted: set[tuple[str, str, str]] = set()

    def observe(self, proposals: Sequence[Proposal]) -> None:
        accepted = sum(p.status == "accepted" and p.kind == "reflection" for p in proposals)
        self.due = min(self.due + accepted, self.max_merges - self.tried)

    def plan(self, r: Round) -> None:
        """A due merge: its pair drawn among the eligible (pair, ancestor) triples."""
        if self.due <= 0 or not r.fits(2) or not (triples := self._eligible(r.pool)):
            return
        a, b, ancestor, child = triples[r.rng.randrange(len(triples))]
        self._attempted.add((a.id, b.id, ancestor.id))
        self.due -= 1
        self.tried += 1
        components = tuple(c for c in a.artifact.COMPONENTS if get_component(child, c) != get_component(a.artifact, c))
        r.add((a, b), child, components, "merge")

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
                if child is not None and artifact_id(child) not in pool and (
                        (a.id, b.id, ancestor.id) not in self._attempted):
                    out.append((a, b, ancestor, child))
        return out

    def state(self) -> dict[str, Any]:
        return {"due": self.due, "tried": self.tried, "attempted": sorted(list(t) for t in self._attempted)}

    def restore(self, state: dict[str, Any]) -> None:
        self.due, self.tried = int(state["due"]), int(state["tried"])
        self._attempted = {(str(a), str(b), str(c)) for a, b, c in state["attempted"]}
