"""Core contracts (docs/design.md §2): request validation, SkillSpec
validity, split digests and the evaluator contract."""

from __future__ import annotations

import math
from dataclasses import replace

import pytest
from helpers import ImprovingReflector, ToyEvaluator, attach, cases, dataset, seed_spec

from gepa_lab import Case, Dataset, Evaluation, SearchConfig, SkillSpec, optimize
from gepa_lab.core.errors import EvaluatorContractError
from gepa_lab.search.evaluation import check_batch

# --------------------------------------------------------------------------------------------
# Dataset validation: messages and order
# --------------------------------------------------------------------------------------------


def ds(fb=2, val=2, ho=2, *, id="d", version="v1", **splits) -> Dataset:
    return Dataset(
        id=id,
        version=version,
        feedback=splits.get("feedback", cases("fb", fb)),
        validation=splits.get("validation", cases("val", val)),
        holdout=splits.get("holdout", cases("ho", ho)),
    )


@pytest.mark.parametrize(
    "dataset_, submit, message",
    [
        (ds(id="  "), False, "dataset id is required"),
        (ds(version=""), False, "dataset version is required"),
        (ds(fb=0), False, "feedback split must not be empty"),
        (ds(val=0), False, "validation split must not be empty"),
        (ds(9, 10, 10), True, "submission requires at least 10 feedback cases"),
        (ds(10, 9, 10), True, "submission requires at least 10 validation cases"),
        (ds(10, 10, 9), True, "submission requires at least 10 holdout cases"),
        (ds(10, 10, 0), True, "submission requires at least 10 holdout cases"),
        (ds(feedback=[Case(" ", "x")]), False, "feedback split contains an empty case id"),
        (ds(holdout=[Case("", "x")]), False, "holdout split contains an empty case id"),
        (ds(holdout=[Case("fb-1", "x")]), False, "case id 'fb-1' appears in both feedback and holdout splits"),
        (ds(validation=[Case("fb-2", "x")]), False, "case id 'fb-2' appears in both feedback and validation splits"),
        (ds(holdout=[Case("val-1", "x")]), False, "case id 'val-1' appears in both validation and holdout splits"),
        (ds(validation=[Case("v", "a"), Case("v", "b")]), False, "case id 'v' appears twice in the validation split"),
        (ds(holdout=[Case(" fb-1 ", "x")]), False, "case id 'fb-1' appears in both feedback and holdout splits"),
    ],
)
def test_dataset_validation_messages(dataset_, submit, message):
    with pytest.raises(ValueError, match=message):
        dataset_.validate(submit=submit)


@pytest.mark.parametrize(
    "dataset_, submit, message",
    [
        # Each dataset breaks several rules; the earliest rule in the documented order names the error.
        (ds(0, 0, id="", version=""), True, "dataset id is required"),
        (ds(0, 0, version=""), True, "dataset version is required"),
        (ds(0, 0), True, "feedback split must not be empty"),
        (ds(val=0, holdout=[Case("fb-1", "x")]), True, "validation split must not be empty"),
        (ds(10, 10, 3, holdout=[Case("", "x"), Case("fb-1", "y")]), True, "submission requires at least 10 holdout"),
        (ds(feedback=[Case("", "x")], holdout=[Case("val-1", "y")]), False, "feedback split contains an empty case id"),
    ],
)
def test_dataset_validation_order(dataset_, submit, message):
    with pytest.raises(ValueError, match=message):
        dataset_.validate(submit=submit)


def test_holdout_may_be_empty_unless_submitting():
    ds(ho=0).validate(submit=False)
    ds(10, 10, 10).validate(submit=True)
    with pytest.raises(ValueError, match="submission requires at least 10 holdout cases"):
        ds(10, 10, 0).validate(submit=True)


def test_invalid_dataset_is_rejected_before_any_evaluation():
    ev, rf = attach(ToyEvaluator(), ImprovingReflector())
    with pytest.raises(ValueError, match="appears in both feedback and holdout"):
        optimize(seed_spec(), ds(holdout=[Case("fb-1", "x")]), ev, rf)
    assert ev.calls == [] and rf.seen == []


def test_submit_without_submitter_fails_before_anything_is_evaluated(tmp_path):
    ev, rf = attach(ToyEvaluator(), ImprovingReflector())
    with pytest.raises(ValueError, match="without a revision submitter"):
        optimize(seed_spec(), ds(10, 10, 10), ev, rf, SearchConfig(max_iterations=1), submit=True)
    assert ev.calls == [] and rf.seen == []


def test_dataset_checks_come_before_the_submitter_check():
    ev, rf = attach(ToyEvaluator(), ImprovingReflector())
    with pytest.raises(ValueError, match="submission requires at least 10 holdout cases"):
        optimize(seed_spec(), ds(10, 10, 9), ev, rf, submit=True)
    assert ev.calls == []


def test_budget_too_small_for_validation_and_holdout_reserve_fails_before_evaluating():
    ev, rf = attach(ToyEvaluator(), ImprovingReflector())
    # |validation| + 2 x |holdout| = 3 + 2 * 2 = 7
    with pytest.raises(ValueError, match="metric budget cannot cover validation and holdout"):
        optimize(seed_spec(), dataset(2, 3, 2), ev, rf, SearchConfig(max_metric_calls=6))
    assert ev.calls == []
    result = optimize(seed_spec(), dataset(2, 3, 2), ev, rf, SearchConfig(max_metric_calls=7))
    assert result.metric_calls == 3 + 2  # seed validation + seed holdout (reused for the best)
    assert result.stop_reason == "metric_budget"


def test_invalid_seed_is_rejected_before_any_evaluation():
    ev, rf = attach(ToyEvaluator(), ImprovingReflector())
    with pytest.raises(ValueError, match="description is required"):
        optimize(seed_spec(description=" "), dataset(), ev, rf)
    assert ev.calls == []


# --------------------------------------------------------------------------------------------
# SkillSpec validity
# --------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "overrides, message",
    [
        ({"name": ""}, "name is required"),
        ({"name": "  "}, "name is required"),
        ({"description": ""}, "description is required"),
        ({"when_to_use": "\n"}, "when_to_use is required"),
        ({"steps": []}, "at least one step is required"),
        ({"steps": ["  "]}, "step 0 is empty"),
        ({"steps": ["ok", ""]}, "step 1 is empty"),
        ({"steps": ["x" * 65_537]}, "spec exceeds 65536 characters"),
    ],
)
def test_skill_spec_validation_messages(overrides, message):
    with pytest.raises(ValueError, match=message):
        seed_spec(**overrides).validate()


def test_skill_spec_validation_order():
    with pytest.raises(ValueError, match="name is required"):
        SkillSpec(name="", description="", when_to_use="", steps=[]).validate()
    with pytest.raises(ValueError, match="description is required"):
        SkillSpec(name="n", description="", when_to_use="", steps=[]).validate()
    with pytest.raises(ValueError, match="when_to_use is required"):
        SkillSpec(name="n", description="d", when_to_use="", steps=[]).validate()


def test_pitfalls_are_optional():
    seed_spec(pitfalls=[]).validate()


def test_spec_size_counts_characters_not_bytes():
    # A CJK spec of exactly 65,536 characters (196,608 UTF-8 bytes) is valid; one more is not.
    fixed = "技能" + "描述" + "何时"  # name + description + when_to_use = 6 characters
    ok = SkillSpec(name="技能", description="描述", when_to_use="何时", steps=["步" * (65_536 - len(fixed))])
    ok.validate()
    assert len("".join([ok.name, ok.description, ok.when_to_use, *ok.steps]).encode("utf-8")) > 65_536
    too_big = replace(ok, pitfalls=["坑"])
    with pytest.raises(ValueError, match="spec exceeds 65536 characters"):
        too_big.validate()


def test_size_includes_every_component():
    base = 65_536 - len("n" + "d" + "w")
    SkillSpec(name="n", description="d", when_to_use="w", steps=["s" * (base - 1)], pitfalls=["p"]).validate()
    with pytest.raises(ValueError, match="exceeds"):
        SkillSpec(name="n", description="d", when_to_use="w", steps=["s" * base], pitfalls=["p"]).validate()


# --------------------------------------------------------------------------------------------
# Split digests
# --------------------------------------------------------------------------------------------


def test_split_digests_are_stable_sha256_per_split():
    d1, d2 = ds(3, 3, 3).digests(), ds(3, 3, 3).digests()
    assert d1 == d2
    assert set(d1) == {"feedback", "validation", "holdout"}
    for value in d1.values():
        assert len(value) == 64 and all(ch in "0123456789abcdef" for ch in value)
    assert len(set(d1.values())) == 3


@pytest.mark.parametrize(
    "change",
    [
        lambda c: replace(c, input=c.input + "!"),
        lambda c: replace(c, expected="something"),
        lambda c: replace(c, critical=True),
        lambda c: replace(c, metadata={"k": "v"}),
        lambda c: replace(c, id=c.id + "x"),
    ],
    ids=["input", "expected", "critical", "metadata", "id"],
)
def test_digest_changes_when_a_case_changes(change):
    base = ds(3, 3, 3)
    holdout = list(base.holdout)
    holdout[1] = change(holdout[1])
    changed = replace(base, holdout=holdout)
    assert changed.digests()["holdout"] != base.digests()["holdout"]
    assert changed.digests()["feedback"] == base.digests()["feedback"]
    assert changed.digests()["validation"] == base.digests()["validation"]


def test_digest_is_order_sensitive():
    base = ds(3, 3, 3)
    reordered = replace(base, validation=list(reversed(base.validation)))
    assert reordered.digests()["validation"] != base.digests()["validation"]


# --------------------------------------------------------------------------------------------
# Evaluator contract (check_batch and end-to-end through optimize)
# --------------------------------------------------------------------------------------------

TWO = [Case("a", "x"), Case("b", "y")]


def ev(case_id, score=0.5, **kw):
    return Evaluation(case_id=case_id, score=score, **kw)


@pytest.mark.parametrize(
    "results, message",
    [
        ([ev("a")], "expected 2 evaluation results, got 1"),
        ([ev("a"), ev("b"), ev("a")], "expected 2 evaluation results, got 3"),
        ([ev("a"), ev("zzz")], "unexpected evaluation case 'zzz'"),
        ([ev("a"), ev("a")], "duplicate evaluation case 'a'"),
        ([ev("a"), ev("b", math.nan)], "case 'b' score must be finite and within \\[0, 1\\]"),
        ([ev("a"), ev("b", math.inf)], "case 'b' score must be finite and within \\[0, 1\\]"),
        ([ev("a", -0.1), ev("b")], "case 'a' score must be finite and within \\[0, 1\\]"),
        ([ev("a"), ev("b", 1.5)], "case 'b' score must be finite and within \\[0, 1\\]"),
        ([ev("a"), ev("b", objectives={"tokens": math.inf})], "case 'b' objective 'tokens' must be finite"),
        ([ev("a", objectives={"cost_usd": math.nan}), ev("b")], "case 'a' objective 'cost_usd' must be finite"),
    ],
)
def test_check_batch_contract_errors(results, message):
    with pytest.raises(EvaluatorContractError, match=message):
        check_batch(TWO, results)


def test_check_batch_missing_case_is_a_contract_error():
    # With the right count and no unknown ids a case can only be missing if another repeats.
    with pytest.raises(EvaluatorContractError, match="duplicate evaluation case 'a'|missing evaluation case 'b'"):
        check_batch(TWO, [ev("a"), ev("a")])


def test_check_batch_reorders_to_case_order():
    out = check_batch(TWO, [ev("b", 0.9), ev("a", 0.1)])
    assert [(e.case_id, e.score) for e in out] == [("a", 0.1), ("b", 0.9)]
    assert [e.case_id for e in check_batch(TWO, [ev("a", 0.0), ev("b", 1.0)])] == ["a", "b"]


class BrokenEvaluator:
    """Behaves for the seed validation, then breaks the contract for holdout case 'ho-2'."""

    def __init__(self, breakage):
        self.breakage = breakage
        self.calls = 0

    def evaluate(self, artifact, cases, seed):
        self.calls += 1
        out = [Evaluation(case_id=c.id, score=0.5) for c in cases]
        if any(c.id == "ho-2" for c in cases):
            return self.breakage(out)
        return out


def _set(index_id, **fields):
    def apply(out):
        return [replace(e, **fields) if e.case_id == index_id else e for e in out]

    return apply


@pytest.mark.parametrize(
    "breakage, pattern",
    [
        (lambda out: out + [ev("ho-2")], r"expected \d+ evaluation results, got \d+"),
        (lambda out: [e for e in out if e.case_id != "ho-2"] or [], r"expected \d+ evaluation results, got \d+"),
        (_set("ho-2", case_id="nope"), r"unexpected evaluation case 'nope'"),
        (_set("ho-2", score=math.nan), r"case 'ho-2' score must be finite and within \[0, 1\]"),
        (_set("ho-2", score=math.inf), r"case 'ho-2' score must be finite and within \[0, 1\]"),
        (_set("ho-2", score=-0.1), r"case 'ho-2' score must be finite and within \[0, 1\]"),
        (_set("ho-2", score=1.5), r"case 'ho-2' score must be finite and within \[0, 1\]"),
        (_set("ho-2", objectives={"latency_ms": -math.inf}), r"case 'ho-2' objective 'latency_ms' must be finite"),
    ],
    ids=["extra", "missing", "unknown", "nan", "inf", "negative", "above-one", "objective"],
)
def test_contract_breach_stops_the_run(breakage, pattern):
    evaluator = BrokenEvaluator(breakage)
    with pytest.raises(EvaluatorContractError, match=pattern):
        optimize(seed_spec(), dataset(2, 2, 2), evaluator, ImprovingReflector(), SearchConfig(max_iterations=0))


def test_duplicate_result_stops_the_run():
    def duplicate(out):
        return [ev("ho-1") if e.case_id == "ho-2" else e for e in out] if len(out) > 1 else out + [ev("ho-2")]

    with pytest.raises(EvaluatorContractError, match=r"duplicate evaluation case 'ho-1'|expected \d+ evaluation"):
        optimize(seed_spec(), dataset(2, 2, 2), BrokenEvaluator(duplicate), ImprovingReflector(),
                 SearchConfig(max_iterations=0))


def test_contract_breach_on_seed_validation_stops_before_search():
    class Bad:
        def evaluate(self, artifact, cases, seed):
            return [Evaluation(case_id=c.id, score=2.0) for c in cases]

    reflector = ImprovingReflector()
    with pytest.raises(EvaluatorContractError, match=r"case 'val-1' score must be finite and within \[0, 1\]"):
        optimize(seed_spec(), dataset(), Bad(), reflector, SearchConfig(max_iterations=3))
    assert reflector.seen == []


def test_results_in_a_different_order_are_reordered_not_rejected():
    scores = {"ho-1": 0.1, "ho-2": 0.6, "ho-3": 0.9, "val-1": 0.3, "val-2": 0.5}

    class Reversed:
        def evaluate(self, artifact, cases, seed):
            return [Evaluation(case_id=c.id, score=scores.get(c.id, 0.5)) for c in reversed(cases)]

    result = optimize(seed_spec(), dataset(2, 2, 3), Reversed(), ImprovingReflector(), SearchConfig(max_iterations=0))
    assert [(h["case_id"], h["baseline"]) for h in result.holdout_cases] == [
        ("ho-1", 0.1),
        ("ho-2", 0.6),
        ("ho-3", 0.9),
    ]
    assert result.baseline_validation.score == pytest.approx(0.4)


def test_summary_means_scores_and_averages_each_objective_over_reporting_cases():
    from gepa_lab import Summary

    summary = Summary.of(
        [
            Evaluation("a", 0.2, objectives={"tokens": 100.0, "passed": 0.0}),
            Evaluation("b", 0.6, objectives={"tokens": 300.0}),
            Evaluation("c", 1.0),
        ]
    )
    assert summary.score == pytest.approx(0.6)
    assert summary.cases == 3
    assert summary.objectives == {"passed": 0.0, "tokens": 200.0}
    empty = Summary.of([])
    assert (empty.score, empty.cases, empty.objectives) == (0.0, 0, {})


def test_result_summaries_carry_objective_means():
    evaluator = ToyEvaluator(objectives={"cost_usd": 0.5})
    result = optimize(seed_spec(), dataset(2, 2, 2), evaluator, ImprovingReflector(),
                      SearchConfig(max_iterations=1, minibatch_size=2))
    assert result.candidate_holdout.objectives == {"cost_usd": 0.5}
    assert result.baseline_validation.objectives == {"cost_usd": 0.5}
