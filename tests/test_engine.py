"""Engine lifecycle and GEPA search (docs/design.md §3)."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest
from helpers import (
    COMPONENT_ORDER,
    IMPROVED_STEP,
    SEARCH_EVENTS,
    IdentityReflector,
    ImprovingReflector,
    RevisionReflector,
    ScriptedReflector,
    TextReflector,
    ToyEvaluator,
    add_improved_step,
    attach,
    dataset,
    full_dict,
    read_events,
    revisions,
    seed_spec,
)

from gepa_lab import (
    Evaluation,
    EvaluatorError,
    PromotionPolicy,
    PromptArtifact,
    RoutingPolicy,
    SearchConfig,
    SkillSpec,
    ToolDescription,
    optimize,
)
from gepa_lab.core.artifacts import artifact_id


def ids(cases):
    return [c.id for c in cases]


# --------------------------------------------------------------------------------------------
# Metric accounting (docs/design.md §3.8 examples)
# --------------------------------------------------------------------------------------------


def test_one_accepted_iteration_costs_12_calls_and_is_eligible():
    seed = seed_spec()
    ev, rf = attach(ToyEvaluator(), ImprovingReflector())
    result = optimize(seed, dataset(2, 2, 2), ev, rf, SearchConfig(max_iterations=1, minibatch_size=2))

    assert result.metric_calls == 12
    assert ev.cases_evaluated == 12
    assert result.candidate_count == 2
    assert result.stop_reason == "max_iterations"
    assert result.promotion_eligible is True
    assert result.promotion_reason == "holdout requirements satisfied"
    assert result.seed_id == artifact_id(seed)
    assert result.best_id == artifact_id(result.best) != result.seed_id
    assert result.baseline_validation.score == pytest.approx(0.2)
    assert result.candidate_validation.score == pytest.approx(0.8)
    assert result.baseline_holdout.score == pytest.approx(0.2)
    assert result.candidate_holdout.score == pytest.approx(0.8)
    assert result.baseline_validation.cases == 2
    assert result.candidate_holdout.cases == 2


def test_evaluator_call_order_and_seed_pairing():
    seed = seed_spec()
    ds = dataset(2, 2, 2)
    ev, rf = attach(ToyEvaluator(), ImprovingReflector())
    result = optimize(seed, ds, ev, rf, SearchConfig(max_iterations=1, minibatch_size=2))

    batches = ev.batches()
    seed_id, child_id = result.seed_id, result.best_id
    # [seed validation, parent feedback, child feedback, child validation, holdout seed, holdout best]
    assert [b.artifact_id for b in batches] == [seed_id, seed_id, child_id, child_id, seed_id, child_id]
    assert batches[0].case_ids == ids(ds.validation)
    assert sorted(batches[1].case_ids) == ids(ds.feedback)
    assert batches[2].case_ids == batches[1].case_ids  # the SAME minibatch
    assert batches[3].case_ids == ids(ds.validation)
    assert batches[4].case_ids == ids(ds.holdout)
    assert batches[5].case_ids == ids(ds.holdout)

    validation_seed, paired_seed, holdout_seed = batches[0].seed, batches[1].seed, batches[4].seed
    assert batches[3].seed == validation_seed
    assert batches[2].seed == paired_seed
    assert batches[5].seed == holdout_seed
    assert len({validation_seed, paired_seed, holdout_seed}) == 3
    assert result.seeds["validation_seed"] == validation_seed
    assert result.seeds["holdout_seed"] == holdout_seed
    assert result.seeds["random_seed"] == 1


def test_first_mutation_is_steps_and_other_components_are_untouched():
    seed = seed_spec(pitfalls=["Do not skip validation."])
    ev, rf = attach(ToyEvaluator(), ImprovingReflector())
    result = optimize(seed, dataset(2, 2, 2), ev, rf, SearchConfig(max_iterations=1, minibatch_size=2))

    assert rf.components == ["steps"]
    best = result.best
    assert best.steps == (*seed.steps, IMPROVED_STEP)
    assert (best.name, best.description, best.when_to_use, best.pitfalls) == (
        seed.name,
        seed.description,
        seed.when_to_use,
        seed.pitfalls,
    )


def test_rejected_at_minibatch_without_holdout_costs_6_calls():
    seed = seed_spec()
    ev, rf = attach(ToyEvaluator(lambda a, c, s: 0.2), ImprovingReflector())
    result = optimize(seed, dataset(2, 2, 0), ev, rf, SearchConfig(max_iterations=1, minibatch_size=2))

    assert result.metric_calls == 6
    assert ev.cases_evaluated == 6
    assert len(ev.batches()) == 3  # seed validation, parent feedback, child feedback
    assert result.candidate_count == 1
    assert result.best == seed
    assert result.best_id == result.seed_id
    assert result.promotion_eligible is False
    assert "no accepted candidate" in result.promotion_reason
    assert result.baseline_holdout.cases == 0
    assert result.candidate_holdout.cases == 0


def test_seed_only_run_with_holdout_costs_4_calls():
    ev, rf = attach(ToyEvaluator(), ImprovingReflector())
    result = optimize(seed_spec(), dataset(2, 2, 2), ev, rf, SearchConfig(max_iterations=0, minibatch_size=2))

    assert result.metric_calls == 4
    assert result.stop_reason == "max_iterations"
    assert result.candidate_count == 1
    assert rf.seen == []
    batches = ev.batches()
    assert len(batches) == 2  # seed validation + seed holdout (reused as the candidate's)
    assert batches[1].case_ids == ["ho-1", "ho-2"]
    assert result.baseline_holdout == result.candidate_holdout
    assert result.promotion_reason == "no accepted candidate improved validation"


def test_budget_reserves_holdout_and_stops_with_metric_budget():
    ev, rf = attach(ToyEvaluator(), ImprovingReflector())
    config = SearchConfig(max_iterations=2, minibatch_size=2, max_metric_calls=11)
    result = optimize(seed_spec(), dataset(2, 2, 2), ev, rf, config)

    assert result.stop_reason == "metric_budget"
    assert result.metric_calls == 4
    assert ev.cases_evaluated == 4
    assert result.candidate_count == 1
    assert rf.seen == []


def test_budget_allowing_exactly_one_iteration_is_never_exceeded():
    # 2 (seed validation) + 6 (one iteration) + 4 (holdout) = 12.
    ev, rf = attach(ToyEvaluator(), ImprovingReflector())
    config = SearchConfig(max_iterations=5, minibatch_size=2, max_metric_calls=12)
    result = optimize(seed_spec(), dataset(2, 2, 2), ev, rf, config)

    assert result.stop_reason == "metric_budget"
    assert result.metric_calls == 12
    assert ev.cases_evaluated == 12
    assert result.candidate_count == 2
    assert len(rf.seen) == 1


def test_minibatch_is_capped_by_feedback_size():
    ev, rf = attach(ToyEvaluator(), ImprovingReflector())
    result = optimize(seed_spec(), dataset(2, 2, 0), ev, rf, SearchConfig(max_iterations=1, minibatch_size=5))
    # 2 + (2 + 2 + 2): a minibatch of min(5, |feedback|) = 2.
    assert result.metric_calls == 8
    assert len(rf.seen[0].records) == 2


# --------------------------------------------------------------------------------------------
# Component round-robin
# --------------------------------------------------------------------------------------------


def test_child_inherits_its_parents_advanced_cursor():
    seed = seed_spec()
    seed_dict = full_dict(seed)

    def unchanged(artifact, component):
        return dict(seed_dict)

    def add_marker(artifact, component):
        return RevisionReflector().reply(artifact, component, [])

    # it0: seed / steps -> rejected (unchanged), the seed's cursor still advances.
    # it1: seed / pitfalls -> accepted child (cursor inherited: when_to_use).
    # it2: the child (now the only parent on any front) / when_to_use -> accepted grandchild.
    # it3: the grandchild / description.
    rf = ScriptedReflector(unchanged, add_marker)

    def score(artifact, case, seed_):
        return 0.2 if artifact_id(artifact) == artifact_id(seed) else min(1.0, 0.4 + 0.1 * revisions(artifact))

    ev = ToyEvaluator(score)
    attach(ev, rf)
    result = optimize(seed, dataset(2, 2, 0), ev, rf, SearchConfig(max_iterations=4, minibatch_size=2))

    assert rf.components == ["steps", "pitfalls", "when_to_use", "description"]
    assert artifact_id(rf.seen[0].artifact) == result.seed_id
    assert artifact_id(rf.seen[1].artifact) == result.seed_id
    assert artifact_id(rf.seen[2].artifact) != result.seed_id
    assert artifact_id(rf.seen[3].artifact) not in (result.seed_id, artifact_id(rf.seen[2].artifact))
    assert result.candidate_count == 4


def test_per_candidate_round_robin_matches_cursor_model():
    """Every reflection asks for COMPONENTS[cursor(parent)]; a parent's cursor advances on each
    use (accepted or not) and a child starts at its parent's advanced cursor."""
    seed = seed_spec(pitfalls=["Keep outputs short."])

    def score(artifact, case, seed_):
        if case.id.startswith("fb"):
            return min(1.0, 0.1 + 0.05 * revisions(artifact))
        digest = hashlib.sha256(f"{artifact_id(artifact)}|{case.id}".encode()).hexdigest()
        return int(digest[:8], 16) / 0xFFFFFFFF

    ev, rf = attach(ToyEvaluator(score), RevisionReflector())
    optimize(seed, dataset(3, 4, 0), ev, rf, SearchConfig(max_iterations=14, minibatch_size=2, random_seed=3))

    assert len(rf.seen) == 14
    cursor = {artifact_id(seed): 0}
    pending: dict[str, int] = {}
    for seen in rf.seen:
        parent = artifact_id(seen.artifact)
        if parent not in cursor:
            assert parent in pending, "parent must be the seed or an accepted child"
            cursor[parent] = pending[parent]
        assert seen.component == COMPONENT_ORDER[cursor[parent]]
        cursor[parent] = (cursor[parent] + 1) % 4
        # Recreate the child the reflector produced (same counter-based marker).
        child_dict = full_dict(seen.artifact)
        marker = f"rev {rf.seen.index(seen) + 1}"
        value = child_dict[seen.component]
        child_dict[seen.component] = value + [marker] if isinstance(value, list) else f"{value} ({marker})"
        pending[artifact_id(SkillSpec(**child_dict))] = cursor[parent]

    parents = [artifact_id(s.artifact) for s in rf.seen]
    assert len(set(parents)) >= 3, "the scenario must exercise several parents"
    global_order = [COMPONENT_ORDER[i % 4] for i in range(len(rf.seen))]
    assert rf.components != global_order, "per-candidate cursors must differ from one global cursor"


# --------------------------------------------------------------------------------------------
# Determinism
# --------------------------------------------------------------------------------------------

VOLATILE = {"experiment_id", "started_at", "recorded_at", "at", "elapsed_s", "holdout_reuse"}


def _strip(value, top_level_id=False):
    if isinstance(value, dict):
        return {
            k: _strip(v)
            for k, v in value.items()
            if k not in VOLATILE and not (top_level_id and k == "id")
        }
    if isinstance(value, list):
        return [_strip(v) for v in value]
    return value


def _record(run_dir: Path) -> dict[str, object]:
    out: dict[str, object] = {}
    for path in sorted(run_dir.rglob("*")):
        rel = path.relative_to(run_dir).as_posix()
        if path.suffix == ".json":
            out[rel] = _strip(json.loads(path.read_text(encoding="utf-8")), rel == "experiment.json")
        elif path.suffix == ".jsonl":
            out[rel] = [_strip(json.loads(line)) for line in path.read_text(encoding="utf-8").splitlines()]
    return out


def _det_run(run_dir: Path, random_seed: int = 1):
    def score(artifact, case, seed_):
        base = 0.1 + 0.05 * revisions(artifact)
        return min(1.0, base + (seed_ % 7) / 100)

    ev, rf = attach(ToyEvaluator(score, echo=True), RevisionReflector())
    config = SearchConfig(max_iterations=6, minibatch_size=2, random_seed=random_seed)
    result = optimize(seed_spec(), dataset(4, 3, 2), ev, rf, config, run_dir=run_dir)
    return result, ev


def test_same_config_and_seed_give_identical_result_and_record(tmp_path):
    r1, ev1 = _det_run(tmp_path / "a")
    r2, ev2 = _det_run(tmp_path / "b")

    d1, d2 = r1.to_dict(), r2.to_dict()
    assert d1.pop("experiment_id") != d2.pop("experiment_id")
    assert (d1.pop("holdout_reuse"), d2.pop("holdout_reuse")) == (0, 1)  # the second look at the same holdout
    assert d1 == d2
    assert [(b.artifact_id, b.case_ids, b.seed) for b in ev1.batches()] == [
        (b.artifact_id, b.case_ids, b.seed) for b in ev2.batches()
    ]

    rec1, rec2 = _record(tmp_path / "a"), _record(tmp_path / "b")
    assert "experiment.json" in rec1 and "result.json" in rec1 and "events.jsonl" in rec1
    assert sorted(rec1) == sorted(rec2)
    for name in rec1:
        assert rec1[name] == rec2[name], name


def test_different_random_seed_records_different_seeds(tmp_path):
    r1, ev1 = _det_run(tmp_path / "a", random_seed=1)
    r2, ev2 = _det_run(tmp_path / "b", random_seed=2)
    assert r1.seeds["random_seed"] == 1 and r2.seeds["random_seed"] == 2
    assert r1.seeds["validation_seed"] != r2.seeds["validation_seed"]
    assert r1.seeds["holdout_seed"] != r2.seeds["holdout_seed"]
    assert [b.seed for b in ev1.batches()] != [b.seed for b in ev2.batches()]


# --------------------------------------------------------------------------------------------
# Duplicates, rejections, strict improvement, pool membership, final selection
# --------------------------------------------------------------------------------------------


def test_child_equal_to_a_pool_member_is_a_duplicate_and_never_evaluated(tmp_path):
    seed = seed_spec()
    seed_dict = full_dict(seed)

    def revert_to_seed(artifact, component):
        return dict(seed_dict)

    # it0: seed/steps -> child accepted; it1-3: child/pitfalls, when_to_use, description ->
    # unchanged; it4: child/steps -> reverted to the seed's steps = the seed itself: duplicate.
    ev, rf = attach(ToyEvaluator(), ScriptedReflector(add_improved_step, revert_to_seed))
    result = optimize(seed, dataset(2, 2, 0), ev, rf, SearchConfig(max_iterations=5, minibatch_size=2),
                      run_dir=tmp_path)

    events = [e for e in read_events(tmp_path) if e["kind"] in SEARCH_EVENTS]
    assert [e["kind"] for e in events] == ["candidate_accepted"] + ["reflection_rejected"] * 3 + [
        "candidate_duplicate"
    ]
    dup = events[-1]["data"]
    assert dup["candidate_id"] == result.seed_id
    assert dup["parent_id"] == result.best_id
    assert dup["iteration"] == 4
    for e in events[1:4]:
        assert "did not change" in e["data"]["reason"]

    # The duplicate (= seed) is never scored as a child: after the first iteration only the
    # parent's minibatch evaluations happen.
    batches = ev.batches()
    assert len(batches) == 1 + 3 + 4
    assert [b.artifact_id for b in batches[4:]] == [result.best_id] * 4
    assert result.metric_calls == 2 + 6 + 4 * 2
    assert result.candidate_count == 2


@pytest.mark.parametrize(
    "reply, reason",
    [
        ("this is not json at all", "parse reflection response"),
        ({"steps": []}, "invalid reflected candidate"),
        ({"steps": ["   ", ""]}, "invalid reflected candidate"),
        (None, "empty reflection response"),
    ],
)
def test_reflection_rejections_are_recorded_and_the_run_continues(tmp_path, reply, reason):
    ev, rf = attach(ToyEvaluator(), TextReflector(reply))
    result = optimize(seed_spec(), dataset(2, 2, 2), ev, rf, SearchConfig(max_iterations=3, minibatch_size=2),
                      run_dir=tmp_path)

    assert result.stop_reason == "max_iterations"
    assert result.candidate_count == 1
    assert len(rf.seen) == 3
    events = [e for e in read_events(tmp_path) if e["kind"] in SEARCH_EVENTS]
    assert [e["kind"] for e in events] == ["reflection_rejected"] * 3
    assert [e["data"]["component"] for e in events] == ["steps", "pitfalls", "when_to_use"]
    assert reason in events[0]["data"]["reason"]  # the first proposal is for `steps`
    for i, e in enumerate(events):
        assert e["data"]["reason"]
        assert e["data"]["iteration"] == i
        assert e["data"]["parent_id"] == result.seed_id
    # Nothing but parent minibatches was scored: 2 + 3 x 2 + holdout 2 (seed only).
    assert result.metric_calls == 10


def test_identity_reflector_is_rejected_as_unchanged(tmp_path):
    ev, rf = attach(ToyEvaluator(), IdentityReflector())
    result = optimize(seed_spec(), dataset(2, 2, 0), ev, rf, SearchConfig(max_iterations=2, minibatch_size=2),
                      run_dir=tmp_path)
    events = [e for e in read_events(tmp_path) if e["kind"] in SEARCH_EVENTS]
    assert [e["kind"] for e in events] == ["reflection_rejected"] * 2
    assert all("did not change" in e["data"]["reason"] for e in events)
    assert result.candidate_count == 1


def test_equal_minibatch_sum_is_rejected_for_strict_improvement(tmp_path):
    ev, rf = attach(ToyEvaluator(lambda a, c, s: 0.5), ImprovingReflector())
    result = optimize(seed_spec(), dataset(2, 2, 0), ev, rf, SearchConfig(max_iterations=1, minibatch_size=2),
                      run_dir=tmp_path)

    events = [e for e in read_events(tmp_path) if e["kind"] in SEARCH_EVENTS]
    assert [e["kind"] for e in events] == ["candidate_rejected"]
    data = events[0]["data"]
    assert data["reason"] == "strict_minibatch_improvement"
    assert data["parent_sum"] == pytest.approx(1.0)
    assert data["child_sum"] == pytest.approx(1.0)
    assert data["candidate_id"] != result.seed_id
    assert result.candidate_count == 1
    assert result.metric_calls == 6  # never validated


def test_lower_minibatch_sum_is_rejected():
    def score(artifact, case, seed_):
        return 0.1 if artifact_id(artifact) != artifact_id(seed_spec()) else 0.3

    ev, rf = attach(ToyEvaluator(score), ImprovingReflector())
    result = optimize(seed_spec(), dataset(2, 2, 0), ev, rf, SearchConfig(max_iterations=1, minibatch_size=2))
    assert result.candidate_count == 1
    assert result.metric_calls == 6


def test_child_with_lower_validation_mean_joins_the_pool_but_is_not_best():
    seed = seed_spec()

    def score(artifact, case, seed_):
        improved = IMPROVED_STEP in artifact.steps
        if case.id.startswith("fb"):
            return 0.8 if improved else 0.2
        return 0.1 if improved else 0.4  # validation and holdout: the child is worse

    ev, rf = attach(ToyEvaluator(score), ImprovingReflector())
    result = optimize(seed, dataset(2, 2, 2), ev, rf, SearchConfig(max_iterations=1, minibatch_size=2))

    assert result.candidate_count == 2
    assert result.metric_calls == 2 + 6 + 2  # holdout scored once: best is the seed
    assert result.best_id == result.seed_id
    assert result.best == seed
    assert result.candidate_validation.score == pytest.approx(0.4)
    assert result.promotion_reason == "no accepted candidate improved validation"


def test_validation_tie_goes_to_the_seed():
    seed = seed_spec()

    def score(artifact, case, seed_):
        if case.id.startswith("fb"):
            return 0.8 if IMPROVED_STEP in artifact.steps else 0.2
        return 0.5

    ev, rf = attach(ToyEvaluator(score), ImprovingReflector())
    result = optimize(seed, dataset(2, 2, 2), ev, rf, SearchConfig(max_iterations=1, minibatch_size=2))
    assert result.candidate_count == 2
    assert result.best_id == result.seed_id
    assert result.promotion_eligible is False


def test_validation_tie_between_children_goes_to_the_earliest():
    seed = seed_spec()
    seed_id = artifact_id(seed)

    def score(artifact, case, seed_):
        if case.id.startswith("fb"):
            return min(1.0, 0.2 + 0.1 * revisions(artifact))
        return 0.5 if artifact_id(artifact) == seed_id else 0.7

    ev, rf = attach(ToyEvaluator(score), RevisionReflector())
    result = optimize(seed, dataset(2, 2, 0), ev, rf, SearchConfig(max_iterations=3, minibatch_size=2))

    assert result.candidate_count == 4
    first_child = rf.seen[0]
    expected = full_dict(first_child.artifact)
    expected["steps"] = expected["steps"] + ["rev 1"]
    assert result.best == SkillSpec(**expected)
    assert result.candidate_validation.score == pytest.approx(0.7)


def test_seed_and_dataset_are_not_mutated():
    seed = seed_spec(pitfalls=["Keep it short."])
    ds = dataset(3, 2, 2)
    before_seed = json.dumps(full_dict(seed))
    before_ds = json.dumps([[c.to_dict() for c in getattr(ds, s)] for s in ("feedback", "validation", "holdout")])
    ev, rf = attach(ToyEvaluator(), RevisionReflector())
    optimize(seed, ds, ev, rf, SearchConfig(max_iterations=4, minibatch_size=2))
    assert json.dumps(full_dict(seed)) == before_seed
    assert json.dumps([[c.to_dict() for c in getattr(ds, s)] for s in ("feedback", "validation", "holdout")]) == (
        before_ds
    )


@pytest.mark.parametrize(
    "seed, component",
    [
        (PromptArtifact(text="Answer the question."), "text"),
        (ToolDescription(name="search", description="Searches the catalogue."), "description"),
        (RoutingPolicy(policy="route billing questions to billing"), "policy"),
    ],
    ids=["prompt", "tool_description", "routing_policy"],
)
def test_other_artifact_kinds_are_optimised_through_their_components(seed, component):
    ev, rf = attach(ToyEvaluator(lambda a, c, s: min(1.0, 0.1 + 0.1 * revisions(a))), RevisionReflector())
    result = optimize(seed, dataset(2, 2, 2), ev, rf, SearchConfig(max_iterations=2, minibatch_size=2))
    assert rf.components == [component, component]
    assert result.candidate_count == 3
    assert type(result.best) is type(seed)
    assert result.promotion_reason == "holdout requirements satisfied"
    untouched = {k: v for k, v in full_dict(seed).items() if k != component}
    assert {k: v for k, v in full_dict(result.best).items() if k != component} == untouched


@pytest.mark.parametrize(
    "make, field",
    [
        (lambda: SearchConfig(max_iterations=-1), "max_iterations"),
        (lambda: SearchConfig(minibatch_size=0), "minibatch_size"),
        (lambda: SearchConfig(max_metric_calls=0), "max_metric_calls"),
        (lambda: SearchConfig(max_cost_usd=0.0), "max_cost_usd"),
        (lambda: PromotionPolicy(min_holdout_improvement=float("nan")), "min_holdout_improvement"),
        (lambda: PromotionPolicy(min_holdout_improvement=-0.1), "min_holdout_improvement"),
        (lambda: PromotionPolicy(min_holdout_improvement=1.5), "min_holdout_improvement"),
        (lambda: PromotionPolicy(critical_tolerance=2.0), "critical_tolerance"),
    ],
)
def test_invalid_settings_are_rejected_on_construction(make, field):
    with pytest.raises(ValueError, match=field):
        make()


def test_settings_changed_after_construction_are_rejected_before_evaluating():
    ev, rf = attach(ToyEvaluator(), ImprovingReflector())
    config = SearchConfig()
    config.minibatch_size = 0
    with pytest.raises(ValueError, match="minibatch_size"):
        optimize(seed_spec(), dataset(), ev, rf, config)
    assert ev.calls == []


def test_missing_seed_is_rejected():
    ev, rf = attach(ToyEvaluator(), ImprovingReflector())
    with pytest.raises(ValueError, match="seed"):
        optimize(None, dataset(), ev, rf)
    assert ev.calls == []


class MutatingEvaluator(ToyEvaluator):
    """Misbehaves: tries to edit the artifact and the cases it is handed."""

    def __init__(self, target: str):
        super().__init__()
        self.target = target

    def evaluate(self, artifact, cases, seed):
        if self.target == "artifact":
            artifact.steps.append("Injected by the evaluator.")
        else:
            cases[0].metadata["touched"] = "yes"
        return super().evaluate(artifact, cases, seed)


@pytest.mark.parametrize("target", ["artifact", "case"])
def test_evaluator_cannot_mutate_the_seed_or_dataset(target):
    seed = seed_spec()
    ds = dataset(2, 2, 2)
    before_steps = list(seed.steps)
    ev, rf = attach(MutatingEvaluator(target), ImprovingReflector())
    # Artifacts and cases are immutable: the attempt is a bug in the evaluator and stops the run.
    with pytest.raises(EvaluatorError, match=r"evaluator MutatingEvaluator raised (AttributeError|TypeError)"):
        optimize(seed, ds, ev, rf, SearchConfig(max_iterations=1, minibatch_size=2))
    assert list(seed.steps) == before_steps
    assert all(dict(c.metadata) == {} for c in ds.feedback + ds.validation + ds.holdout)


def test_evaluation_objectives_are_a_read_only_private_copy():
    import copy
    import json
    import pickle

    mine = {"tokens": 12.0}
    ev = Evaluation("c", 0.5, objectives=mine)
    mine["tokens"] = 99.0  # the evaluator's own dict stays its own
    assert ev.objectives == {"tokens": 12.0}
    for attempt in (lambda o: o.__setitem__("tokens", 1.0), lambda o: o.update(x=1.0), lambda o: o.pop("tokens"),
                    lambda o: o.clear(), lambda o: o.setdefault("y", 2.0), lambda o: o.__delitem__("tokens")):
        with pytest.raises(TypeError, match="read-only"):
            attempt(ev.objectives)
    assert ev.objectives == {"tokens": 12.0}
    for back in (pickle.loads(pickle.dumps(ev)), copy.deepcopy(ev)):
        assert back == ev and type(back.objectives) is type(ev.objectives)
    assert json.loads(json.dumps(ev.objectives)) == {"tokens": 12.0} and Evaluation("d", 1.0).objectives == {}


def test_a_tracker_cannot_edit_what_other_observers_see():
    class Editing:
        def evaluation(self, batch):
            batch.evaluations[0].objectives["cost_usd"] = 0.0

    with pytest.raises(TypeError, match="read-only"):
        optimize(seed_spec(), dataset(2, 2, 2), ToyEvaluator(objectives={"cost_usd": 1.0}), ImprovingReflector(),
                 SearchConfig(max_iterations=1, minibatch_size=2), trackers=[Editing()])
