"""The run record in run_dir: enough to audit a run without MLflow (docs/design.md §6)."""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import RunRecord
from helpers import (
    IMPROVED_STEP,
    SEARCH_EVENTS,
    ImprovingReflector,
    ScriptedReflector,
    ToyEvaluator,
    add_improved_step,
    attach,
    dataset,
    full_dict,
    seed_spec,
)

from gepa_lab import EvaluatorContractError, SearchConfig, optimize


def _accepted_run(run_dir: Path, **evaluator_kwargs):
    ev, rf = attach(ToyEvaluator(**evaluator_kwargs), ImprovingReflector())
    ds = dataset(2, 2, 2)
    result = optimize(seed_spec(), ds, ev, rf, SearchConfig(max_iterations=1, minibatch_size=2), run_dir=run_dir)
    return result, ds, ev


def test_record_layout_for_one_accepted_iteration(tmp_path):
    result, ds, ev = _accepted_run(tmp_path)

    experiment = RunRecord(tmp_path).json("experiment.json")
    assert experiment["id"] == result.experiment_id
    assert experiment["algorithm"] == "gepa"
    assert experiment["dataset"]["digests"] == ds.digests()  # the run records its digests
    assert [c["id"] for c in experiment["dataset"]["holdout"]] == [c.id for c in ds.holdout]

    record = RunRecord(tmp_path)
    assert [(c["id"], c["status"]) for c in record.candidates] == [(result.seed_id, "seed"),
                                                                    (result.best_id, "accepted")]
    child = record.candidates[1]
    assert child["parent_id"] == result.seed_id and child["iteration"] == 0
    assert IMPROVED_STEP in child["artifact"]["steps"]

    batches = record.evaluations
    assert [(b["index"], b["phase"], b["candidate_id"]) for b in batches] == [
        (0, "validation", result.seed_id),
        (1, "feedback-parent", result.seed_id),
        (2, "feedback-child", result.best_id),
        (3, "validation", result.best_id),
        (4, "holdout-baseline", result.seed_id),
        (5, "holdout-candidate", result.best_id),
    ]
    for line, batch in zip(batches, ev.batches(), strict=True):
        assert line["candidate_id"] == batch.artifact_id
        assert line["seed"] == batch.seed
        assert [r["case_id"] for r in line["results"]] == batch.case_ids
        assert "cases" not in line  # no copy of case inputs

    assert record.kinds() == ["batch", "round_end", "batch", "batch", "batch", "candidate_accepted", "round_end",
                              "search_end", "batch", "batch", "decision", "run_finished"]
    accepted = next(e for e in record.events if e["kind"] == "candidate_accepted")
    assert accepted["data"]["candidate_id"] == result.best_id
    assert accepted["data"]["parent_id"] == result.seed_id
    assert accepted["data"]["component"] == "steps"
    assert accepted["data"]["batches"] == [1, 2, 3]  # parent minibatch, child minibatch, child validation
    assert [r["case_id"] for r in accepted["data"]["records"]] == ["case-1", "case-2"]  # what the reflector saw
    assert IMPROVED_STEP in accepted["data"]["reply"]["steps"]
    assert all(set(e) == {"at", "kind", "data"} for e in record.events)
    assert len(record.paid) == 12  # every paid evaluation once, under its cache key

    stored = record.json("result.json")
    assert stored["experiment_id"] == result.experiment_id
    assert stored["metric_calls"] == 12
    assert stored["stop_reason"] == "max_iterations"
    assert stored["promotion_reason"] == "holdout requirements satisfied"
    assert stored["promotion_eligible"] is True
    assert stored["best_id"] == result.best_id


def test_holdout_candidate_is_recorded_even_when_the_seed_is_best(tmp_path):
    ev, rf = attach(ToyEvaluator(), ImprovingReflector())
    result = optimize(seed_spec(), dataset(2, 2, 2), ev, rf, SearchConfig(max_iterations=0), run_dir=tmp_path)
    phases = [b["phase"] for b in RunRecord(tmp_path).evaluations]
    assert phases[0] == "validation" and phases[1] == "holdout-baseline"
    assert result.metric_calls == 4
    assert (tmp_path / "result.json").exists()


def test_every_search_event_kind_is_written(tmp_path):
    seed = seed_spec()

    def garbage(artifact, component):
        return "no json here"

    def same_score_change(artifact, component):
        d = full_dict(artifact)
        d["steps"] = d["steps"] + ["A neutral extra step."]
        return d

    def back_to_seed(artifact, component):
        return full_dict(seed)

    # The seed stays the only parent until it8, so its cursor walks steps, pitfalls,
    # when_to_use, description twice; every non-steps proposal is unchanged (rejected).
    rf = ScriptedReflector(
        garbage,  # it0 steps: unparsable -> reflection_rejected
        same_score_change,  # it1-3: only steps change -> "did not change"
        back_to_seed,
        same_score_change,
        same_score_change,  # it4 steps: scored, equal sums -> candidate_rejected
        add_improved_step,  # it5-7: "did not change"
        add_improved_step,
        add_improved_step,
        add_improved_step,  # it8 steps: strictly better -> candidate_accepted
        back_to_seed,  # it9-11 unchanged; it12 child/steps == the seed -> candidate_duplicate
    )
    ev = ToyEvaluator()
    attach(ev, rf)
    optimize(seed, dataset(2, 2, 0), ev, rf, SearchConfig(max_iterations=13, minibatch_size=2), run_dir=tmp_path)

    record = RunRecord(tmp_path)
    events = [e for e in record.events if e["kind"] in SEARCH_EVENTS]
    rr = "reflection_rejected"
    assert [e["kind"] for e in events] == [rr] * 4 + ["candidate_rejected"] + [rr] * 3 + [
        "candidate_accepted"
    ] + [rr] * 3 + ["candidate_duplicate"]
    assert [e["data"]["iteration"] for e in events] == list(range(13))
    rejected = [e for e in record.events if e["kind"] == "candidate_rejected"]
    assert rejected[0]["data"]["reason"] == "strict_minibatch_improvement"
    # Rejected children were scored, so every evaluated candidate resolves to a candidate line.
    known = {c["id"] for c in record.candidates}
    assert {b["candidate_id"] for b in record.evaluations} <= known
    assert [c["status"] for c in record.candidates].count("rejected") == 1


def _texts(artifact, case, seed):
    return {
        "output": "".join("ABCDEFGHI "[i % 10] for i in range(40_000)),  # ASCII, 40,000 bytes
        "feedback": "é" * 20_000 + "end",  # 2-byte characters
        "trace": "漢字😀" * 5_000,  # 3- and 4-byte characters
    }


def test_evaluator_text_is_stored_exactly_as_valid_utf8(tmp_path):
    # The record is the evaluation cache: a resumed run must see exactly what was paid for.
    _accepted_run(tmp_path, text=_texts)
    raw = (tmp_path / "evaluations.jsonl").read_bytes()
    raw.decode("utf-8")  # strict: raises on a split multibyte character
    batches = RunRecord(tmp_path).evaluations
    assert len(batches) == 6
    originals = _texts(None, None, 0)
    for record in batches:
        for row in record["results"]:
            assert {key: row[key] for key in originals} == originals


def test_short_text_is_stored_verbatim(tmp_path):
    def texts(artifact, case, seed):
        return {"output": f"out {case.id} ✓", "feedback": "fine", "trace": ""}

    _accepted_run(tmp_path, text=texts)
    record = RunRecord(tmp_path).evaluations[0]
    assert [r["output"] for r in record["results"]] == ["out val-1 ✓", "out val-2 ✓"]
    assert all(r["feedback"] == "fine" for r in record["results"])


def test_no_temp_files_are_left_behind(tmp_path):
    _accepted_run(tmp_path)
    leftovers = [
        p.relative_to(tmp_path).as_posix()
        for p in tmp_path.rglob("*")
        if p.is_file() and (p.suffix == ".tmp" or p.name.startswith(".") or p.name.endswith("~"))
    ]
    assert leftovers == [".lock"]  # the run dir's lock file (held by a running process, then free)


def test_failed_run_records_the_failure_and_writes_no_result(tmp_path):
    class Bad:
        def evaluate(self, artifact, cases, seed):
            return []

    with pytest.raises(EvaluatorContractError):
        optimize(seed_spec(), dataset(), Bad(), ImprovingReflector(), run_dir=tmp_path)
    assert (tmp_path / "experiment.json").exists()
    assert not (tmp_path / "result.json").exists()
    assert RunRecord(tmp_path).kinds()[-1] == "run_failed"


def test_candidate_file_keeps_the_rationale(tmp_path):
    result, _, _ = _accepted_run(tmp_path)
    child = RunRecord(tmp_path).candidates[1]
    assert child["id"] == result.best_id
    assert child["rationale"] == "records show the result was never checked"


def test_invalid_unicode_from_the_evaluator_does_not_crash_a_recorded_run(tmp_path):
    def texts(artifact, case, seed):
        return {"output": "partial \ud800 output", "feedback": "ok", "trace": ""}

    result, _, _ = _accepted_run(tmp_path, text=texts)
    assert result.metric_calls == 12
    for record in RunRecord(tmp_path).evaluations:  # strict UTF-8 decoding
        assert all(r["output"] == "partial \ufffd output" for r in record["results"])
