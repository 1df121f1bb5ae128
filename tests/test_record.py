"""The run record in run_dir (DESIGN §6; reference §2.8, §7.1 recorder tests)."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
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
    read_events,
    seed_spec,
)

from gepa_lab import SearchConfig, optimize

MARKER = "\n...[truncated]...\n"
CAP = 16_384
EVAL_NAME = re.compile(
    r"^(\d{4})-(validation|feedback-parent|feedback-child|holdout-baseline|holdout-candidate)-([0-9a-f]{64})\.json$"
)


def _load(path: Path):
    return json.loads(path.read_bytes().decode("utf-8"))  # strict UTF-8


def _accepted_run(run_dir: Path, **evaluator_kwargs):
    ev, rf = attach(ToyEvaluator(**evaluator_kwargs), ImprovingReflector())
    ds = dataset(2, 2, 2)
    result = optimize(seed_spec(), ds, ev, rf, SearchConfig(max_iterations=1, minibatch_size=2), run_dir=run_dir)
    return result, ds, ev


def test_record_layout_for_one_accepted_iteration(tmp_path):
    result, ds, ev = _accepted_run(tmp_path)

    experiment = _load(tmp_path / "experiment.json")
    assert experiment["id"] == result.experiment_id
    assert experiment["algorithm"] == "gepa"
    assert json.dumps(experiment).count(ds.digests()["holdout"]) >= 1  # the run records its digests
    for digest in ds.digests().values():
        assert digest in json.dumps(experiment)

    cands = sorted(p.stem for p in (tmp_path / "candidates").glob("*.json"))
    assert cands == sorted([result.seed_id, result.best_id])
    child = _load(tmp_path / "candidates" / f"{result.best_id}.json")
    assert child["parent_id"] == result.seed_id
    assert IMPROVED_STEP in json.dumps(child)

    names = sorted(p.name for p in (tmp_path / "evaluations").iterdir())
    parsed = [EVAL_NAME.match(n) for n in names]
    assert all(parsed), names
    assert [(m.group(1), m.group(2), m.group(3)) for m in parsed] == [
        ("0000", "validation", result.seed_id),
        ("0001", "feedback-parent", result.seed_id),
        ("0002", "feedback-child", result.best_id),
        ("0003", "validation", result.best_id),
        ("0004", "holdout-baseline", result.seed_id),
        ("0005", "holdout-candidate", result.best_id),
    ]
    batches = ev.batches()
    for name, batch in zip(names, batches, strict=True):
        record = _load(tmp_path / "evaluations" / name)
        assert record["phase"] == EVAL_NAME.match(name).group(2)
        assert record["candidate_id"] == batch.artifact_id
        assert record["seed"] == batch.seed
        assert [r["case_id"] for r in record["results"]] == batch.case_ids
        assert "cases" not in record  # no copy of case inputs

    kinds = [e["kind"] for e in read_events(tmp_path)]
    assert kinds.count("candidate_accepted") == 1
    accepted = next(e for e in read_events(tmp_path) if e["kind"] == "candidate_accepted")
    assert accepted["data"]["candidate_id"] == result.best_id
    assert accepted["data"]["parent_id"] == result.seed_id
    assert accepted["data"]["component"] == "steps"
    assert all({"at", "kind", "data"} <= set(e) for e in read_events(tmp_path))

    stored = _load(tmp_path / "result.json")
    assert stored["experiment_id"] == result.experiment_id
    assert stored["metric_calls"] == 12
    assert stored["stop_reason"] == "max_iterations"
    assert stored["promotion_reason"] == "holdout requirements satisfied"
    assert stored["promotion_eligible"] is True
    assert stored["best_id"] == result.best_id


def test_holdout_candidate_is_recorded_even_when_the_seed_is_best(tmp_path):
    ev, rf = attach(ToyEvaluator(), ImprovingReflector())
    result = optimize(seed_spec(), dataset(2, 2, 2), ev, rf, SearchConfig(max_iterations=0), run_dir=tmp_path)
    phases = [EVAL_NAME.match(p.name).group(2) for p in sorted((tmp_path / "evaluations").iterdir())]
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

    events = [e for e in read_events(tmp_path) if e["kind"] in SEARCH_EVENTS]
    rr = "reflection_rejected"
    assert [e["kind"] for e in events] == [rr] * 4 + ["candidate_rejected"] + [rr] * 3 + [
        "candidate_accepted"
    ] + [rr] * 3 + ["candidate_duplicate"]
    assert [e["data"]["iteration"] for e in events] == list(range(13))
    rejected = [e for e in read_events(tmp_path) if e["kind"] == "candidate_rejected"]
    assert rejected[0]["data"]["reason"] == "strict_minibatch_improvement"
    # Rejected children were scored, so their evaluation files must resolve to a candidate file.
    for path in (tmp_path / "evaluations").iterdir():
        cid = EVAL_NAME.match(path.name).group(3)
        assert (tmp_path / "candidates" / f"{cid}.json").exists()


def _texts(artifact, case, seed):
    return {
        "output": "".join("ABCDEFGHI "[i % 10] for i in range(40_000)),  # ASCII, 40,000 bytes
        "feedback": "é" * 20_000 + "end",  # 2-byte characters
        "trace": "漢字😀" * 5_000,  # 3- and 4-byte characters
    }


def test_stored_evaluator_text_is_capped_at_16_kib_with_marker_and_valid_utf8(tmp_path):
    _accepted_run(tmp_path, text=_texts)
    files = sorted((tmp_path / "evaluations").iterdir())
    assert files
    originals = _texts(None, None, 0)
    for path in files:
        raw = path.read_bytes()
        raw.decode("utf-8")  # strict: raises on a split multibyte character
        record = json.loads(raw)
        for row in record["results"]:
            for key in ("output", "feedback", "trace"):
                value, original = row[key], originals[key]
                size = len(value.encode("utf-8"))
                assert size <= CAP, (path.name, key, size)
                assert size >= CAP - 8, "the cap should be used, not undershot"
                assert MARKER in value
                head, tail = value.split(MARKER)
                assert original.startswith(head) and original.endswith(tail)
                head_share = len(head.encode()) / (size - len(MARKER))
                assert head_share == pytest.approx(0.75, abs=0.01)


def test_short_text_is_stored_verbatim(tmp_path):
    def texts(artifact, case, seed):
        return {"output": f"out {case.id} ✓", "feedback": "fine", "trace": ""}

    _accepted_run(tmp_path, text=texts)
    record = _load(sorted((tmp_path / "evaluations").iterdir())[0])
    assert [r["output"] for r in record["results"]] == ["out val-1 ✓", "out val-2 ✓"]
    assert all(r["feedback"] == "fine" for r in record["results"])


def test_no_temp_files_are_left_behind(tmp_path):
    _accepted_run(tmp_path)
    leftovers = [
        p.relative_to(tmp_path).as_posix()
        for p in tmp_path.rglob("*")
        if p.is_file() and (p.suffix == ".tmp" or p.name.startswith(".") or p.name.endswith("~"))
    ]
    assert leftovers == []


def test_failed_run_records_the_failure_and_writes_no_result(tmp_path):
    from gepa_lab.evaluation import EvaluatorContractError

    class Bad:
        def evaluate(self, artifact, cases, seed):
            return []

    with pytest.raises(EvaluatorContractError):
        optimize(seed_spec(), dataset(), Bad(), ImprovingReflector(), run_dir=tmp_path)
    assert (tmp_path / "experiment.json").exists()
    assert not (tmp_path / "result.json").exists()
    assert "run_failed" in [e["kind"] for e in read_events(tmp_path)]


def test_candidate_file_keeps_the_rationale(tmp_path):
    result, _, _ = _accepted_run(tmp_path)
    child = _load(tmp_path / "candidates" / f"{result.best_id}.json")
    assert "records show the result was never checked" in json.dumps(child)


def test_invalid_unicode_from_the_evaluator_does_not_crash_a_recorded_run(tmp_path):
    def texts(artifact, case, seed):
        return {"output": "partial \ud800 output", "feedback": "ok", "trace": ""}

    result, _, _ = _accepted_run(tmp_path, text=texts)
    assert result.metric_calls == 12
    for path in (tmp_path / "evaluations").iterdir():
        record = json.loads(path.read_bytes().decode("utf-8"))
        assert all("\ud800" not in r["output"] for r in record["results"])
