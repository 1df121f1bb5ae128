"""Property tests (Hypothesis): Pareto selection invariants, the metric budget never exceeded,
text caps and UTF-8 validity, artifact and search-state snapshot round-trips."""

from __future__ import annotations

import json
import math
import random

from hypothesis import given, settings
from hypothesis import strategies as st

from gepa_lab import Case, Dataset, Evaluation, SearchConfig, SkillSpec, optimize, select_parent
from gepa_lab.core.artifacts import PromptArtifact, artifact_dict, artifact_from_dict, artifact_id
from gepa_lab.core.redact import TRUNCATION_MARKER, prepare_field
from gepa_lab.search.pareto import ordered_selection, prune_dominated
from gepa_lab.search.planning import proposal_calls
from gepa_lab.search.policies import Pareto
from gepa_lab.search.state import Candidate, Pool, SearchState

SCORES = st.sampled_from([0.0, 0.25, 0.5, 0.75, 1.0])  # few values: plenty of exact ties


def means(scores: dict[str, list[float]]) -> dict[str, float]:
    return {c: math.fsum(row) / len(row) for c, row in scores.items()}


# The rule as plain functions over a score matrix: the oracle the incremental pool is held to.
def instance_fronts(scores: dict[str, list[float]]) -> list[set[str]]:
    """Per validation case: every candidate holding the top score (exact ties kept)."""
    return [{c for c, row in scores.items() if row[case] == max(r[case] for r in scores.values())}
            for case in range(len(next(iter(scores.values()))))]


def selection_list(scores: dict[str, list[float]]) -> list[str]:
    fronts = instance_fronts(scores)
    return ordered_selection(fronts, prune_dominated(means(scores), fronts), list(scores))


def reference_select(scores: dict[str, list[float]], rng: random.Random) -> str:
    weighted = selection_list(scores)
    return weighted[rng.randrange(len(weighted))]


@st.composite
def score_matrices(draw: st.DrawFn) -> dict[str, list[float]]:
    cases = draw(st.integers(1, 6))
    pool = draw(st.integers(1, 7))
    return {f"c{i}": draw(st.lists(SCORES, min_size=cases, max_size=cases)) for i in range(pool)}


@given(score_matrices())
def test_pruning_keeps_every_front_covered_and_only_front_members(scores):
    fronts = instance_fronts(scores)
    alive = prune_dominated(means(scores), fronts)
    assert all(front & alive for front in fronts)  # no case loses its last owner
    assert alive <= set().union(*fronts)
    for case, front in enumerate(fronts):
        top = max(row[case] for row in scores.values())
        assert front == {c for c, row in scores.items() if row[case] == top}


@given(score_matrices(), st.integers(0, 2**32))
def test_selection_draws_from_survivors_in_proportion_to_cases_owned(scores, seed):
    weighted = selection_list(scores)
    alive = prune_dominated(means(scores), instance_fronts(scores))
    assert set(weighted) == alive
    assert len(weighted) == sum(len(front & alive) for front in instance_fronts(scores))
    first = select_parent(scores, random.Random(seed))
    assert first in alive and first == select_parent(scores, random.Random(seed))  # same seed, same draw


@given(score_matrices(), st.integers(0, 2**32))
def test_the_incremental_pool_selects_exactly_like_select_parent(scores, seed):
    rng, pool, seen = random.Random(seed), Pool(), {}
    for cid, row in scores.items():
        evals = tuple(Evaluation(f"v{j}", s) for j, s in enumerate(row))
        pool.add(Candidate(cid, PromptArtifact(cid), (), (), None, 0, evals))
        seen[cid] = row
        expected_rng = random.Random(seed)
        expected_rng.setstate(rng.getstate())
        assert Pareto().select(pool, rng).id == reference_select(seen, expected_rng)
        assert pool.survivors() == prune_dominated(means(seen), instance_fronts(seen))


class RandomEvaluator:
    """Deterministic per (artifact, case, seed); otherwise arbitrary."""

    def evaluate(self, artifact, cases, seed):
        return [Evaluation(c.id, random.Random(f"{artifact_id(artifact)}|{c.id}|{seed}").random()) for c in cases]


class AppendingReflector:
    def __init__(self):
        self.n = 0

    def reflect(self, artifact, component, records):
        self.n += 1
        return {"text": f"{artifact.text} r{self.n}"}


def _cases(prefix: str, n: int) -> list[Case]:
    return [Case(f"{prefix}{i}", f"task {prefix}{i}") for i in range(n)]


@settings(max_examples=60, deadline=None)
@given(feedback=st.integers(1, 6), validation=st.integers(1, 5), holdout=st.integers(0, 5),
       batch=st.integers(1, 4), slack=st.integers(0, 80), seed=st.integers(0, 1000))
def test_the_metric_budget_is_never_exceeded(feedback, validation, holdout, batch, slack, seed):
    ds = Dataset("d", "1", _cases("f", feedback), _cases("v", validation), _cases("h", holdout))
    budget = validation + 2 * holdout + slack
    result = optimize(PromptArtifact("seed"), ds, RandomEvaluator(), AppendingReflector(),
                      SearchConfig(max_iterations=None, max_metric_calls=budget, minibatch_size=batch,
                                   random_seed=seed))
    assert result.metric_calls <= budget
    assert result.stop_reason == "metric_budget"
    spent_on_holdout = holdout * (1 if result.best_id == result.seed_id else 2)
    search_spent = result.metric_calls - spent_on_holdout
    # It stopped only because one more iteration could not keep the holdout reserve.
    assert search_spent + proposal_calls(batch, ds) + 2 * holdout > budget
    assert result.baseline_holdout.cases == holdout


@given(st.text(max_size=9000), st.integers(40, 5000))
def test_prepared_fields_are_bounded_and_keep_head_and_tail(text, limit):
    out = prepare_field(text, limit)
    assert len(out) <= limit
    stripped = text.strip()
    if len(stripped) <= limit and out == stripped:
        return
    if TRUNCATION_MARKER in out and TRUNCATION_MARKER not in stripped:
        head, tail = out.split(TRUNCATION_MARKER)
        assert len(head) >= len(tail)  # head 3/4, tail 1/4


LINE = st.text(st.characters(blacklist_categories=("Cs",)), min_size=1, max_size=40).filter(str.strip)


@given(name=LINE, description=LINE, when=LINE, steps=st.lists(LINE, min_size=1, max_size=5),
       pitfalls=st.lists(LINE, max_size=3))
def test_artifacts_round_trip_through_json_with_the_same_identity(name, description, when, steps, pitfalls):
    spec = SkillSpec(name, description, when, steps, pitfalls)
    back = artifact_from_dict(json.loads(json.dumps(artifact_dict(spec))))
    assert back == spec and artifact_id(back) == artifact_id(spec)
    assert isinstance(back.steps, tuple)


@given(score_matrices(), st.integers(0, 2**32), st.lists(st.integers(0, 3), max_size=7))
def test_search_state_snapshots_round_trip_through_json(scores, seed, cursors):
    def build() -> SearchState:
        state = SearchState(random.Random(seed), 7, Pool())
        for cid, row in scores.items():
            evals = tuple(Evaluation(f"v{j}", s) for j, s in enumerate(row))
            state.pool.add(Candidate(cid, SkillSpec(cid, "d", "w", [f"step {cid}"]), (), (), None, 0, evals))
        return state

    state = build()
    state.rng.random()
    state.iteration = state.proposals = 3
    for cand, cursor in zip(state.pool.members, cursors, strict=False):
        cand.cursor = cursor
    back = build()
    back.restore(json.loads(json.dumps(state.snapshot())))
    assert back.rng.getstate() == state.rng.getstate()
    assert (back.iteration, back.proposals) == (3, 3)
    assert [c.cursor for c in back.pool.members] == [c.cursor for c in state.pool.members]
    assert Pareto().select(back.pool, back.rng).id == Pareto().select(state.pool, state.rng).id


def _restarting_prune(scores, fronts):
    """The rule as stated: remove one candidate, restart the scan."""
    import math as _math

    on_front = set().union(*fronts) if fronts else set()
    order = sorted(on_front, key=lambda c: (_math.fsum(scores[c]) / max(1, len(scores[c])), c))
    alive = set(on_front)
    removed = True
    while removed:
        removed = False
        for cand in order:
            if cand in alive and all(any(o != cand and o in alive for o in f) for f in fronts if cand in f):
                alive.discard(cand)
                removed = True
                break
    return alive


@given(score_matrices())
def test_one_pass_pruning_equals_the_restarting_rule(scores):
    fronts = instance_fronts(scores)
    assert prune_dominated(means(scores), fronts) == _restarting_prune(scores, fronts)
