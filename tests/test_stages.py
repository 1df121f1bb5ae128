"""A run is one record: exact identity on resume, later stages (decision, submission) re-run from the
record without paying the search again, and the data checks made before anything is spent."""

from __future__ import annotations

import json
import logging
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest
from conftest import RunRecord, strip_volatile
from helpers_long import FileSubmitter, HashEvaluator, InterruptingReflector, VaryingReflector, long_dataset, long_seed

from gepa_lab import Case, Dataset, EvaluationSettings, PromotionPolicy, ReflectionSettings, SearchConfig, optimize
from gepa_lab.core.errors import GepaLabError, ResumeError
from gepa_lab.core.settings import GatePolicy
from gepa_lab.summary import format_summary

CONFIG = SearchConfig(max_iterations=8, minibatch_size=2, random_seed=5)
SCRIPT = Path(__file__).parent / "scripts" / "killable_run.py"




class _OtherReflector(VaryingReflector):
    def fingerprint(self) -> str:
        return "tuned-reflector"


def _interrupted(run_dir: Path, **kwargs) -> None:
    with pytest.raises(KeyboardInterrupt):
        optimize(long_seed(), long_dataset(), HashEvaluator(), InterruptingReflector(at=3), CONFIG, run_dir=run_dir, **kwargs)


def _resume(run_dir: Path, reflector=None, **kwargs):
    return optimize(long_seed(), long_dataset(), HashEvaluator(), reflector or VaryingReflector(),
                    kwargs.pop("config", CONFIG), run_dir=run_dir, resume=True, **kwargs)


# -- identity ---------------------------------------------------------------------------------------
@pytest.mark.parametrize("change, message", [
    ({"reflector": _OtherReflector()}, r"the reflector .* changed \('varying-reflector-v1' → 'tuned-reflector'\)"),
    ({"evaluation": EvaluationSettings(max_retries=5)}, r"evaluation setting max_retries changed \(2 → 5\)"),
    ({"evaluation": EvaluationSettings(timeout_s=3.0)}, r"evaluation setting timeout_s changed \(None → 3.0\)"),
    ({"reflection": ReflectionSettings(max_retries=0)}, r"reflection setting max_retries changed \(2 → 0\)"),
    ({"config": SearchConfig(max_iterations=8, minibatch_size=2, random_seed=5,
                             parent={"_target_": "gepa_lab.search.policies.CurrentBest"})},
     r"search setting parent changed"),
    ({"config": SearchConfig(max_iterations=8, minibatch_size=2, random_seed=5, validation_repeats=3)},
     r"search setting validation_repeats changed \(1 → 3\)"),
    ({"promotion": PromotionPolicy(holdout_repeats=3)},
     r"promotion setting holdout_repeats changed \(1 → 3\).*finish the run first, then decide again"),
])
def test_a_resume_that_changes_what_decides_the_result_is_refused_by_name(tmp_path, change, message):
    _interrupted(tmp_path)
    with pytest.raises(ResumeError, match=message) as info:
        _resume(tmp_path, **change)
    assert "\n" not in str(info.value)
    _resume(tmp_path)  # the original settings still resume it


def test_workers_and_raisable_limits_may_change_on_resume(tmp_path):
    _interrupted(tmp_path)
    raised = SearchConfig(max_iterations=8, minibatch_size=2, random_seed=5, time_limit_s=3600.0)
    resumed = _resume(tmp_path, config=raised, evaluation=EvaluationSettings(workers=4))
    clean = optimize(long_seed(), long_dataset(), HashEvaluator(), VaryingReflector(), CONFIG)
    assert strip_volatile(resumed.to_dict()) == strip_volatile(clean.to_dict())


@pytest.mark.parametrize("leftover", ["evaluations.jsonl", "events.jsonl", "checkpoint.json"])
def test_a_run_dir_holding_records_is_never_appended_to(tmp_path, leftover):
    (tmp_path / leftover).write_text("{}\n")
    with pytest.raises(ResumeError, match=f"already holds a run \\({leftover}\\)"):
        optimize(long_seed(), long_dataset(), HashEvaluator(), VaryingReflector(), CONFIG, run_dir=tmp_path)
    with pytest.raises(ResumeError, match="no gepa_lab run|earlier gepa-lab version"):
        _resume(tmp_path)
    assert (tmp_path / leftover).read_text() == "{}\n"


# -- later stages from the record ------------------------------------------------------------------
def test_a_finished_run_is_decided_again_beside_its_first_decision(tmp_path):
    first = optimize(long_seed(), long_dataset(), HashEvaluator(), VaryingReflector(), CONFIG, run_dir=tmp_path)
    strict = PromotionPolicy(holdout_repeats=3)
    again = _resume(tmp_path, promotion=strict)
    assert again.decision_number == 2 and again.best_id == first.best_id
    assert again.holdout_repeats == 3 and len(again.seeds["holdout_seeds"]) == 3
    assert again.seeds["holdout_seeds"][0] == first.seeds["holdout_seed"]
    # Only the two new repeats were paid: seed and winner on every holdout case, twice.
    assert again.decision_paid_evaluations == 2 * 2 * len(long_dataset().holdout)
    decisions = [e["data"] for e in RunRecord(tmp_path).events if e["kind"] == "decision"]
    assert [d["number"] for d in decisions] == [1, 2]
    assert decisions[0]["result"]["holdout_repeats"] == 1  # the first decision is kept as it was
    assert json.loads((tmp_path / "result.json").read_text())["decision_number"] == 2
    with pytest.raises(ResumeError, match="already finished"):
        _resume(tmp_path, promotion=strict)


# A small holdout: the mean delta decides (the interval and the gates are tested elsewhere).
LENIENT = PromotionPolicy(require_interval=False, gates=GatePolicy(ceilings={}))


def test_an_eligible_winner_is_submitted_later_and_only_once(tmp_path):
    data = long_dataset(10, 10, 10)
    store = FileSubmitter(str(tmp_path / "store.jsonl"))
    first = optimize(long_seed(), data, HashEvaluator(), VaryingReflector(), CONFIG, run_dir=tmp_path / "run",
                     promotion=LENIENT)
    assert first.promotion_eligible and first.revision is None
    counting = _Counting()
    later = optimize(long_seed(), data, counting, VaryingReflector(), CONFIG, run_dir=tmp_path / "run",
                     resume=True, submit=True, submitter=store, promotion=LENIENT)
    assert later.revision == {"revision_id": "rev-1", "status": "pending_approval"}
    assert later.decision_number == 1 and counting.calls == 0
    promotion = json.loads((tmp_path / "run" / "promotion.json").read_text())
    assert (promotion["revision_id"], promotion["submit"]) == ("rev-1", True)
    with pytest.raises(ResumeError, match="already finished"):
        optimize(long_seed(), data, HashEvaluator(), VaryingReflector(), CONFIG, run_dir=tmp_path / "run",
                 resume=True, submit=True, submitter=store, promotion=LENIENT)
    assert len((tmp_path / "store.jsonl").read_text().splitlines()) == 1


def test_a_winner_that_was_not_eligible_is_never_submitted_later(tmp_path):
    data = long_dataset(10, 10, 10)
    never = PromotionPolicy(min_holdout_improvement=0.99)
    optimize(long_seed(), data, HashEvaluator(), VaryingReflector(), CONFIG, run_dir=tmp_path, promotion=never)
    with pytest.raises(ResumeError, match="cannot submit: the run's decision was NOT ELIGIBLE"):
        optimize(long_seed(), data, HashEvaluator(), VaryingReflector(), CONFIG, run_dir=tmp_path, resume=True,
                 promotion=never, submit=True, submitter=FileSubmitter(str(tmp_path / "store.jsonl")))


class _Unreachable:
    def preflight(self, seed):
        raise ConnectionError("could not connect to server: Connection refused")

    def submit(self, request):
        raise AssertionError("never reached")


def test_an_unreachable_submitter_is_found_before_anything_is_paid(tmp_path):
    evaluator = _Counting()
    with pytest.raises(GepaLabError, match="the revision submitter is not ready: ConnectionError: could not"):
        optimize(long_seed(), long_dataset(10, 10, 10), evaluator, VaryingReflector(), CONFIG, run_dir=tmp_path,
                 submit=True, submitter=_Unreachable())
    assert evaluator.calls == 0 and not (tmp_path / "experiment.json").exists()


class _Counting(HashEvaluator):
    calls = 0

    def evaluate(self, artifact, cases, seed):
        self.calls += 1
        return super().evaluate(artifact, cases, seed)


# -- kills at every stage --------------------------------------------------------------------------
def _script(run_dir: Path, log: Path, kill_before: int, *extra: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, str(SCRIPT), str(run_dir), str(log), str(kill_before), *extra],
                          capture_output=True, text=True, timeout=120)


@pytest.mark.slow
@pytest.mark.parametrize("stage", ["decision", "submission"])
def test_a_kill_in_the_decision_or_submission_stage_resumes_without_paying_again(tmp_path, stage):
    clean_dir, run_dir, log = tmp_path / "clean", tmp_path / "run", tmp_path / "paid.jsonl"
    assert _script(clean_dir, tmp_path / "clean.jsonl", 0, "--submit", str(tmp_path / "clean-store.jsonl")
                   ).returncode == 0
    store = ["--submit", str(tmp_path / "store.jsonl")]
    calls = len((tmp_path / "clean.jsonl").read_text().splitlines())
    if stage == "decision":  # before the winner's last holdout case
        killed = _script(run_dir, log, calls, *store)
    else:  # as the store receives the revision
        killed = _script(run_dir, log, 0, *store, "--kill-in-submit")
    assert killed.returncode == -9, killed.stderr
    resumed = _script(run_dir, log, 0, *store, "--resume")
    assert resumed.returncode == 0, resumed.stderr
    clean = json.loads((clean_dir / "result.json").read_text())
    got = json.loads((run_dir / "result.json").read_text())
    assert got["revision"] == clean["revision"] == {"revision_id": "rev-1", "status": "pending_approval"}
    assert strip_volatile({**got, "decision_paid_evaluations": 0}) == strip_volatile(
        {**clean, "decision_paid_evaluations": 0})
    paid = Counter(tuple(json.loads(line)) for line in log.read_text().splitlines())
    assert max(paid.values()) == 1 and sum(paid.values()) == calls


# -- data that would make the decision meaningless -------------------------------------------------
def _cases(prefix: str, inputs: list[str]) -> list[Case]:
    return [Case(f"{prefix}-{i}", text) for i, text in enumerate(inputs)]


def test_a_holdout_case_the_search_has_seen_under_another_id_is_refused():
    data = Dataset("d", "1", _cases("fb", ["a", "b"]), _cases("val", ["c", "d"]), _cases("ho", ["e", " B "]))
    with pytest.raises(ValueError, match="holdout case 'ho-1' has the same input as feedback case 'fb-1'; a holdout "
                                         "must be unseen by the search"):
        optimize(long_seed(), data, HashEvaluator(), VaryingReflector(), CONFIG)


def _relabelled(case: Case, new_id: str) -> Case:
    """The same question under another id, answer and metadata, its input re-spaced."""
    return Case(new_id, "  " + "\n".join(case.input.split()) + " ", f"other {case.expected}", case.critical,
                {**case.metadata, "source": "copied"})


def test_feedback_cases_relabelled_as_holdout_are_refused():
    base = long_dataset()
    holdout = [_relabelled(case, f"new-{i}") for i, case in enumerate(base.feedback[:10])]
    with pytest.raises(ValueError, match=f"holdout case 'new-0' has the same input as feedback case "
                                         f"'{base.feedback[0].id}'"):
        optimize(long_seed(), Dataset("d", "1", base.feedback, base.validation, holdout), HashEvaluator(),
                 VaryingReflector(), CONFIG)
    # A structured input: the same JSON object, keys in another order and spaced otherwise.
    data = Dataset("d", "1", [Case("fb", '{"city": "Oslo", "days": 3}')], [Case("v", "x")],
                   [Case("ho", '{ "days":3,\n  "city":"Oslo" }', "3")])
    with pytest.raises(ValueError, match="holdout case 'ho' has the same input as feedback case 'fb'"):
        data.validate()


def test_copies_of_one_input_with_other_labels_are_counted_as_copies():
    cases = [Case("a", "Same  question"), Case("b", "same question", "x"), Case("c", "same\tquestion", "y", False,
                                                                                  {"tag": "t"}), Case("d", "other")]
    assert Dataset("d", "1", cases, [Case("v", "v")]).distinct("feedback") == 2


def test_copies_of_one_holdout_case_count_once(tmp_path, caplog):
    copies = _cases("ho", ["the same task"] * 20)
    data = Dataset("d", "1", _cases("fb", ["a", "b", "c"]), _cases("val", ["d", "e"]), copies)
    with caplog.at_level(logging.WARNING, logger="gepa_lab"):
        result = optimize(long_seed(), data, HashEvaluator(), VaryingReflector(), CONFIG,
                          promotion=PromotionPolicy(require_interval=False))
    assert "the holdout split has 20 cases but only 1 distinct inputs" in caplog.text
    assert any("only 1 distinct" in w for w in result.warnings)
    delta_rule = next(r for r in result.promotion_rules if r["rule"] == "holdout_delta")
    assert "(over 1 distinct of 20 cases)" in delta_rule["detail"]
    assert "(1 distinct of 20 cases)" in format_summary(result, "copies", None)
    assert result.holdout_interval is None  # one case resampled is a zero-width interval: none is claimed
    # The default policy requires the interval: one distinct case can never make the winner eligible.
    strict = optimize(long_seed(), data, HashEvaluator(), VaryingReflector(), CONFIG)
    assert strict.best_id != strict.seed_id and not strict.promotion_eligible
    assert strict.promotion_reason == ("the holdout has only 1 distinct case (20 cases): a 95% interval needs at least "
                                       "2; add distinct holdout cases")
    assert next(r for r in strict.promotion_rules if r["rule"] == "holdout_interval")["status"] == "failed"
    summary = format_summary(strict, "copies", None)
    assert "(1 distinct of 20 cases)" in summary and "CI" not in summary
    # Two distinct cases, ten copies each: the interval is over the 2, the summary says so.
    two = optimize(long_seed(), Dataset("d", "1", data.feedback, data.validation,
                                        _cases("ho", ["the same task", "another task"] * 10)),
                   HashEvaluator(), VaryingReflector(), CONFIG)
    assert two.holdout_interval is not None and "(2 distinct of 20 cases)" in format_summary(two, "copies", None)
    with pytest.raises(ValueError, match="submission requires at least 10 distinct holdout cases"):
        optimize(long_seed(), Dataset("d", "1", _cases("fb", list("abcdefghij")), _cases("val", list("klmnopqrst")),
                                      copies), HashEvaluator(), VaryingReflector(), CONFIG, submit=True,
                 submitter=FileSubmitter(str(tmp_path / "s.jsonl")))


def test_an_oversized_minibatch_and_a_missing_holdout_are_said_before_the_search(caplog):
    with caplog.at_level(logging.WARNING, logger="gepa_lab"):
        optimize(long_seed(), long_dataset(2, 2, 0), HashEvaluator(), VaryingReflector(),
                 SearchConfig(max_iterations=1, minibatch_size=5))
    assert "search.minibatch_size 5 is larger than the feedback split (2 cases)" in caplog.text
    assert "no holdout split: the run can never be promotion-eligible" in caplog.text


class _ZeroTransfer(HashEvaluator):
    def fingerprint(self) -> str:
        return "broken agent"

    def evaluate(self, artifact, cases, seed):
        return [ev.__class__(ev.case_id, 0.0) for ev in super().evaluate(artifact, cases, seed)]


def test_a_transfer_evaluator_that_scores_the_seed_zero_everywhere_is_refused_not_passed(tmp_path):
    with pytest.raises(GepaLabError, match="transfer evaluator _ZeroTransfer scored the seed 0 on every holdout "
                                           "case: it is misconfigured"):
        optimize(long_seed(), long_dataset(), HashEvaluator(), VaryingReflector(), CONFIG, run_dir=tmp_path,
                 transfer=_ZeroTransfer())
    assert not (tmp_path / "result.json").exists()
    # Fixed, the finished search is decided without repaying it.
    fixed = _resume(tmp_path, transfer=HashEvaluator())
    assert fixed.transfer is not None and fixed.decision_number == 1


def test_the_store_submitter_is_checked_before_anything_is_paid(tmp_path):
    from gepa_lab import PromptArtifact
    from gepa_lab.core.errors import ConfigError
    from gepa_lab.revisions.submitter import StoreSubmitter

    evaluator = _Counting()
    data = Dataset("d", "1", _cases("fb", list("abcdefghij")), _cases("val", list("klmnopqrst")),
                   _cases("ho", [f"h{i}" for i in range(10)]))
    store = StoreSubmitter(url=f"sqlite:///{tmp_path}/revisions.db")
    with pytest.raises(ConfigError, match="submit=true needs submitter.artifact_name: a prompt artifact has no name"):
        optimize(PromptArtifact("Answer."), data, evaluator, VaryingReflector(), CONFIG, submit=True, submitter=store)
    unreachable = StoreSubmitter(url="postgresql://gepa@127.0.0.1:9/revisions", artifact_name="answerer")
    with pytest.raises(GepaLabError, match="revision") as info:
        optimize(PromptArtifact("Answer."), data, evaluator, VaryingReflector(), CONFIG, submit=True,
                 submitter=unreachable)
    assert "\n" not in str(info.value) and evaluator.calls == 0


class _MissingField(HashEvaluator):
    def check_cases(self, cases):
        for case in cases:
            if "task" not in case.input:
                raise ValueError(f"case {case.id!r} has no input field 'task'")


def test_an_evaluator_refuses_a_case_it_cannot_read_before_anything_is_paid():
    data = Dataset("d", "1", _cases("fb", ["task a", "b"]), _cases("val", ["task c"]), _cases("ho", ["task d"]))
    with pytest.raises(ValueError, match="the dataset does not fit the evaluator _MissingField: ValueError: case "
                                         "'fb-1' has no input field 'task'"):
        optimize(long_seed(), data, _MissingField(), VaryingReflector(), CONFIG)


def test_a_second_submission_of_a_submitted_run_is_nothing_to_do(tmp_path):
    from gepa_lab.core.errors import AlreadyDone

    data, run_dir = long_dataset(10, 10, 10), tmp_path / "run"
    store = FileSubmitter(str(tmp_path / "store.jsonl"))
    optimize(long_seed(), data, HashEvaluator(), VaryingReflector(), CONFIG, run_dir=run_dir, promotion=LENIENT,
             submit=True, submitter=store)
    files = {p.name: p.read_bytes() for p in run_dir.iterdir() if p.is_file()}
    counting = _Counting()
    with pytest.raises(AlreadyDone) as info:
        optimize(long_seed(), data, counting, VaryingReflector(), CONFIG, run_dir=run_dir, resume=True, submit=True,
                 submitter=store, promotion=LENIENT)
    assert str(info.value) == (f"{run_dir}: the run already finished and was already submitted as revision rev-1 "
                               "(pending_approval); nothing to do")
    assert counting.calls == 0 and len((tmp_path / "store.jsonl").read_text().splitlines()) == 1
    assert {p.name: p.read_bytes() for p in run_dir.iterdir() if p.is_file()} == files  # nothing written
