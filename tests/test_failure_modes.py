"""Every failure leaves a readable, resumable run: resume from any point, one process per run
dir, interrupts in the finish phase, money budgets, corrupt state, permissions, honest output."""

from __future__ import annotations

import os
import stat
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

import pytest
from conftest import ROOT, RunRecord, strip_volatile
from helpers_cli import gepa
from helpers_long import HashEvaluator, InterruptingReflector, VaryingReflector, long_dataset, long_seed

from gepa_lab import Case, Dataset, Evaluation, EvaluationSettings, PromptArtifact, RunAborted, SearchConfig, optimize
from gepa_lab.core.errors import ResumeError
from gepa_lab.core.result import Result
from gepa_lab.runs.lock import RunLock
from gepa_lab.summary import format_summary

SCRIPT = Path(__file__).parent / "scripts" / "killable_run.py"
CONFIG = SearchConfig(max_iterations=8, minibatch_size=2, random_seed=5)


def _tree(run_dir: Path) -> dict[str, tuple[int, int]]:
    return {str(p.relative_to(run_dir)): (p.stat().st_size, p.stat().st_mtime_ns) for p in run_dir.rglob("*")
            if p.is_file()}


# -- 1. resume from any point, including before the first checkpoint and after an abort ----------
class DeadThenFixed(HashEvaluator):
    """Transient failures (a wrong API key looks like this to a provider client) until fixed."""

    def __init__(self, paid: Counter, fixed: bool):
        self.paid, self.fixed = paid, fixed

    def evaluate(self, artifact, cases, seed):
        if not self.fixed:
            raise ConnectionRefusedError("provider refused the connection")
        for case in cases:
            self.paid[(repr(artifact), case.id, seed)] += 1
        return super().evaluate(artifact, cases, seed)


def test_a_run_aborted_while_scoring_the_seed_resumes_to_the_uninterrupted_result(tmp_path):
    paid: Counter = Counter()
    settings = EvaluationSettings(max_retries=0, max_consecutive_failures=2)
    with pytest.raises(RunAborted, match="fix the evaluator or provider, then resume the run"):
        optimize(long_seed(), long_dataset(), DeadThenFixed(paid, False), VaryingReflector(), CONFIG,
                 run_dir=tmp_path, evaluation=settings)
    assert RunRecord(tmp_path).kinds()[-1] == "run_failed"
    resumed = optimize(long_seed(), long_dataset(), DeadThenFixed(paid, True), VaryingReflector(), CONFIG,
                       run_dir=tmp_path, evaluation=settings, resume=True)
    clean = optimize(long_seed(), long_dataset(), HashEvaluator(), VaryingReflector(), CONFIG)
    assert strip_volatile(resumed.to_dict()) == strip_volatile(clean.to_dict())
    assert max(paid.values()) == 1 and sum(paid.values()) == clean.metric_calls


# -- 2. one process per run dir -----------------------------------------------------------------------
def test_a_locked_run_dir_is_refused_naming_the_holder_and_nothing_is_written(tmp_path):
    with pytest.raises(KeyboardInterrupt):
        optimize(long_seed(), long_dataset(), HashEvaluator(), InterruptingReflector(at=2), CONFIG, run_dir=tmp_path)
    holder = subprocess.Popen([sys.executable, "-c", "import sys, time; sys.path.insert(0, sys.argv[1]); "
                               "from gepa_lab.runs.lock import RunLock; from pathlib import Path; "
                               "lock = RunLock(Path(sys.argv[2])).__enter__(); print('locked', flush=True); "
                               "time.sleep(60)", str(ROOT), str(tmp_path)], stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline().strip() == "locked"
        before = _tree(tmp_path)
        with pytest.raises(ResumeError) as info:
            optimize(long_seed(), long_dataset(), HashEvaluator(), VaryingReflector(), CONFIG, run_dir=tmp_path,
                     resume=True)
        assert f"(pid {holder.pid})" in str(info.value) and "in use by another gepa_lab process" in str(info.value)
        assert _tree(tmp_path) == before
    finally:
        holder.kill()
        holder.wait()
    # The kernel released the lock with the process: the resume now goes through.
    assert optimize(long_seed(), long_dataset(), HashEvaluator(), VaryingReflector(), CONFIG, run_dir=tmp_path,
                    resume=True).stop_reason == "max_iterations"


def test_the_lock_is_held_only_while_a_run_is_live(tmp_path):
    with RunLock(tmp_path):
        with pytest.raises(ResumeError, match=f"pid {os.getpid()}"):
            RunLock(tmp_path).__enter__()
    with RunLock(tmp_path):
        pass




# -- 3. interrupts and kills in the finish phase ------------------------------------------------------
class InterruptOnFinish:
    def __init__(self):
        self.calls = 0

    def finish(self, result: Result) -> None:
        self.calls += 1
        if self.calls == 1:
            raise KeyboardInterrupt


def test_an_interrupt_while_trackers_finish_leaves_a_resumable_run(tmp_path):
    tracker = InterruptOnFinish()
    with pytest.raises(KeyboardInterrupt):
        optimize(long_seed(), long_dataset(), HashEvaluator(), VaryingReflector(), CONFIG, run_dir=tmp_path,
                 trackers=[tracker])
    assert RunRecord(tmp_path).kinds()[-1] == "run_interrupted"
    resumed = optimize(long_seed(), long_dataset(), HashEvaluator(), VaryingReflector(), CONFIG, run_dir=tmp_path,
                       resume=True, trackers=[tracker])
    clean = optimize(long_seed(), long_dataset(), HashEvaluator(), VaryingReflector(), CONFIG)
    assert strip_volatile(resumed.to_dict()) == strip_volatile(clean.to_dict()) and tracker.calls == 2
    with pytest.raises(ResumeError, match="already finished"):
        optimize(long_seed(), long_dataset(), HashEvaluator(), VaryingReflector(), CONFIG, run_dir=tmp_path,
                 resume=True)


@pytest.mark.slow
def test_a_sigkill_while_trackers_finish_resumes_without_paying_again(tmp_path):
    run_dir, log = tmp_path / "run", tmp_path / "paid.jsonl"
    killed = subprocess.run([sys.executable, str(SCRIPT), str(run_dir), str(log), "0", "--kill-in-finish"],
                            capture_output=True, text=True, timeout=120)
    assert killed.returncode == -9, killed.stderr
    assert (run_dir / "result.json").exists()  # the recorder finished before the killer
    paid_before = len(log.read_text().splitlines())
    resumed = subprocess.run([sys.executable, str(SCRIPT), str(run_dir), str(log), "0", "--resume"],
                             capture_output=True, text=True, timeout=120)
    assert resumed.returncode == 0, resumed.stderr
    assert len(log.read_text().splitlines()) == paid_before  # everything came from the cache
    assert RunRecord(run_dir).kinds().count("run_resumed") == 1


# -- 4. money budgets ------------------------------------------------------------------------------
class Priced(HashEvaluator):
    def __init__(self, price: float, declare: bool = False):
        self.price = price
        self.paid = 0
        if declare:
            self.cost_per_case_usd = price

    def evaluate(self, artifact, cases, seed):
        self.paid += len(cases)
        return [Evaluation(ev.case_id, ev.score, objectives={"cost_usd": self.price})
                for ev in super().evaluate(artifact, cases, seed)]


def _priced_dataset(validation: int = 20) -> Dataset:
    cases = lambda p, n: [Case(f"{p}-{i}", f"task {p} {i}") for i in range(n)]  # noqa: E731
    return Dataset("priced", "v1", cases("fb", 6), cases("val", validation), cases("ho", 10))


def test_a_declared_price_refuses_an_unaffordable_run_before_spending():
    evaluator = Priced(0.1, declare=True)
    with pytest.raises(ValueError) as info:
        optimize(long_seed(), _priced_dataset(), evaluator, VaryingReflector(), SearchConfig(max_cost_usd=0.5))
    assert str(info.value) == ("cost budget $0.5 cannot cover the seed's validation and the holdout reserve: 40 cases "
                               "at the evaluator's declared $0.1 per case need $4 (raise search.max_cost_usd)")
    assert evaluator.paid == 0


def test_an_observed_price_stops_the_seed_after_one_case(tmp_path):
    evaluator = Priced(0.1)
    with pytest.raises(Exception, match=r"cost budget \$0.5 cannot cover scoring the seed on Validation"):
        optimize(long_seed(), _priced_dataset(), evaluator, VaryingReflector(), SearchConfig(max_cost_usd=0.5),
                 run_dir=tmp_path)
    assert evaluator.paid == 1  # one case showed the price; nothing more was bought
    assert RunRecord(tmp_path).kinds()[-1] == "run_failed"


@pytest.mark.parametrize("cap", [5.0, 6.3, 7.77])
def test_a_search_never_spends_past_its_cap_by_more_than_one_case(cap):
    evaluator = Priced(0.1)
    result = optimize(long_seed(), _priced_dataset(validation=5), evaluator, VaryingReflector(),
                      SearchConfig(max_cost_usd=cap, max_metric_calls=10_000, minibatch_size=2))
    assert result.stop_reason == "cost_budget"
    assert result.cost_usd["task"] <= cap + 0.1 + 1e-9
    assert result.baseline_holdout.cases == 10  # the holdout comparison was kept affordable


# -- 6. corrupt state --------------------------------------------------------------------------------
def _interrupted(tmp_path: Path) -> None:
    with pytest.raises(KeyboardInterrupt):
        optimize(long_seed(), long_dataset(), HashEvaluator(), InterruptingReflector(at=3), CONFIG, run_dir=tmp_path)


def test_a_torn_last_line_is_dropped_and_paid_again(tmp_path):
    _interrupted(tmp_path)
    path = tmp_path / "evaluations.jsonl"
    data = path.read_bytes()
    path.write_bytes(data[: len(data) - 40])  # a crash in the middle of writing the last reply
    resumed = optimize(long_seed(), long_dataset(), HashEvaluator(), VaryingReflector(), CONFIG, run_dir=tmp_path,
                       resume=True)
    clean = optimize(long_seed(), long_dataset(), HashEvaluator(), VaryingReflector(), CONFIG)
    assert strip_volatile(resumed.to_dict()) == strip_volatile(clean.to_dict())
    assert all(line.endswith(b"}") for line in path.read_bytes().splitlines())


@pytest.mark.parametrize("name, damage, message", [
    ("evaluations.jsonl", lambda lines: lines[:3] + [lines[3][:20]] + lines[4:],
     r"run record .*evaluations.jsonl line 4 is damaged"),
    ("events.jsonl", lambda lines: lines[:1] + [b"[1, 2]"] + lines[2:], r"run record .*events.jsonl line 2 is not a "),
    ("experiment.json", lambda lines: lines[:2], r"run record .*experiment.json is damaged .*; restore it or start"),
])
def test_a_damaged_record_is_one_line_naming_the_file_and_line(tmp_path, name, damage, message):
    _interrupted(tmp_path)
    path = tmp_path / name
    path.write_bytes(b"\n".join(damage(path.read_bytes().splitlines())) + b"\n")
    with pytest.raises(ResumeError, match=message) as info:
        optimize(long_seed(), long_dataset(), HashEvaluator(), VaryingReflector(), CONFIG, run_dir=tmp_path,
                 resume=True)
    assert "\n" not in str(info.value)


# -- 9. permissions -------------------------------------------------------------------------------------
def test_result_files_respect_the_umask(tmp_path):
    optimize(long_seed(), long_dataset(), HashEvaluator(), VaryingReflector(), CONFIG, run_dir=tmp_path)
    umask = os.umask(0)
    os.umask(umask)
    for name in ("result.json", "promotion.json", "experiment.json", "evaluations.jsonl", "events.jsonl"):
        assert stat.S_IMODE((tmp_path / name).stat().st_mode) == 0o666 & ~umask, name


# -- 10. honest output --------------------------------------------------------------------------------
def test_the_summary_counts_in_words_and_names_where_the_run_went():
    result = optimize(PromptArtifact("seed"), Dataset("d", "1", [Case("f", "x")], [Case("v", "x")], []),
                      _Constant(), _Same(), SearchConfig(max_iterations=1))
    result.links = {"mlflow_run_id": "abc123"}
    text = format_summary(result, "toy", Path("runs/x"))
    assert "1 candidate in the pool" in text and "1 proposal" in text and "1 case)" in text
    assert "mlflow_run_id abc123" in text and "record      runs/x" in text
    assert result.holdout_reuse is None and "looks" not in text  # no holdout: nothing was looked at


@pytest.mark.parametrize("reuse, said", [(0, None), (4, "4 earlier decisions on this holdout split\n"),
                                         (5, "5 earlier decisions on this holdout split: keeping the best")])
def test_the_summary_counts_the_earlier_decisions_on_its_holdout_split(reuse, said):
    result = optimize(PromptArtifact("seed"), Dataset("d", "1", [Case("f", "x")], [Case("v", "x")], [Case("h", "y")]),
                      _Constant(), _Same(), SearchConfig(max_iterations=1))
    assert result.holdout_reuse == 0  # the test's own look ledger: the first decision on this split
    result.holdout_reuse = reuse
    text = format_summary(result, "toy", None) + "\n"
    assert ("  looks       " + said in text) if said else "looks" not in text


class _Constant:
    def evaluate(self, artifact, cases, seed):
        return [Evaluation(c.id, 0.5) for c in cases]


class _Same:
    def reflect(self, artifact, component, records):
        return {"text": artifact.text}


# -- the command line ------------------------------------------------------------------------------------
def _gepa(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    return gepa("experiment=recipe", "tracking=none", "progress=log", *args, cwd=cwd)


@pytest.mark.slow
def test_cli_refuses_a_second_run_into_an_existing_run_dir_without_touching_it(tmp_path):
    first = _gepa("search.max_metric_calls=200", cwd=tmp_path)
    assert first.returncode == 0, first.stderr
    run_dir = next((tmp_path / "outputs").glob("*/*"))
    before = _tree(run_dir)
    again = _gepa("search.max_metric_calls=200", f"hydra.run.dir={run_dir}", cwd=tmp_path)
    assert again.returncode == 2
    assert again.stderr.strip() == (f"gepa_lab: error: {run_dir} already holds a run: resume it with resume={run_dir}, "
                                    "or choose a new hydra.run.dir")
    assert _tree(run_dir) == before  # .hydra/ included


@pytest.mark.slow
def test_cli_resume_logs_into_the_run_dir_and_keeps_its_hydra_files(tmp_path):
    args = ["search.max_metric_calls=4000"]
    proc = subprocess.Popen([sys.executable, "-m", "gepa_lab", "experiment=recipe", "tracking=none", "progress=log",
                             *args], cwd=tmp_path, stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            line = proc.stderr.readline()
            if "iteration 3:" in line or not line:
                break
        proc.terminate()
        proc.wait(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 130
    run_dir = next((tmp_path / "outputs").glob("*/*"))
    overrides = (run_dir / ".hydra" / "overrides.yaml").read_text()
    done = _gepa(*args, f"resume={run_dir}", "search.max_cost_usd=null", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert [p for p in (tmp_path / "outputs").glob("*/*")] == [run_dir]  # no stray dir
    assert (run_dir / ".hydra" / "overrides.yaml").read_text() == overrides
    assert len(list((run_dir / ".hydra").glob("resume-*/overrides.yaml"))) == 1
    log = (run_dir / "gepa_lab.log").read_text()
    assert "(resumed)" in log and log.count("pre-flight") == 2


@pytest.mark.slow
def test_cli_a_failed_run_keeps_its_error_in_its_log(tmp_path):
    done = _gepa("dataset.holdout=nope.jsonl", cwd=tmp_path)
    assert done.returncode == 1
    error = done.stderr.strip().splitlines()[-1]
    assert error.startswith("gepa_lab: error: dataset split file not found")
    log = next((tmp_path / "outputs").glob("*/*/gepa_lab.log")).read_text()
    assert error in log


def test_cli_an_unwritable_run_dir_is_one_line(tmp_path):
    done = _gepa("hydra.run.dir=/sys/gepa-lab-test", cwd=tmp_path)
    assert done.returncode == 1
    line = done.stderr.strip()
    assert "\n" not in line and line.startswith("gepa_lab: error: cannot write the run directory /sys/gepa-lab-test (")
    assert line.endswith("); run from a writable directory or set hydra.run.dir=<a writable path>")


def test_every_paid_evaluation_is_recorded_even_when_the_cap_cuts_a_batch(tmp_path):
    result = optimize(long_seed(), _priced_dataset(validation=5), Priced(0.1), VaryingReflector(),
                      SearchConfig(max_cost_usd=6.3, max_metric_calls=10_000, minibatch_size=2), run_dir=tmp_path)
    recorded = sum(len(b["results"]) for b in RunRecord(tmp_path).evaluations)
    assert result.stop_reason == "cost_budget" and recorded == result.metric_calls
    assert result.cost_usd["task"] == pytest.approx(0.1 * recorded)


def test_holdout_repeats_count_cases_not_evaluations():
    from gepa_lab import PromotionPolicy

    result = optimize(long_seed(), long_dataset(), HashEvaluator(), VaryingReflector(), CONFIG,
                      promotion=PromotionPolicy(holdout_repeats=3))
    assert result.candidate_holdout.cases == result.baseline_holdout.cases == len(long_dataset().holdout)
    assert len(result.seeds["holdout_seeds"]) == 3 and result.holdout_repeats == 3


# -- damaged in meaning: each line parses, but the record does not hold together -------------------------
def _drop_key(row: dict, key: str) -> dict:
    return {k: v for k, v in row.items() if k != key}


def _damage_evaluations_row(rows: list[dict]) -> tuple[int, str]:
    rows[1] = _drop_key(rows[1], "case_id")
    return 2, r"evaluations\.jsonl line 2 is damaged \(missing case_id\)"


def _damage_batch_cases(rows: list[dict]) -> tuple[int, str]:
    number = next(i for i, row in enumerate(rows) if row["kind"] == "batch")
    rows[number]["data"] = _drop_key(rows[number]["data"], "cases")
    return number + 1, rf"events\.jsonl line {number + 1} is damaged \(missing cases\)"


@pytest.mark.parametrize("name, damage", [("evaluations.jsonl", _damage_evaluations_row),
                                          ("events.jsonl", _damage_batch_cases)])
def test_a_record_row_missing_a_key_is_one_line_naming_file_line_and_key(tmp_path, name, damage):
    import json

    _interrupted(tmp_path)
    path = tmp_path / name
    rows = [json.loads(line) for line in path.read_text().splitlines()]
    _, message = damage(rows)
    path.write_text("".join(json.dumps(row) + "\n" for row in rows))
    with pytest.raises(ResumeError, match=rf"^run record .*{message}; the run cannot be continued from it: restore "
                                          "the file or start a new run$") as info:
        optimize(long_seed(), long_dataset(), HashEvaluator(), VaryingReflector(), CONFIG, run_dir=tmp_path,
                 resume=True)
    assert "\n" not in str(info.value)


def test_an_evaluation_an_event_refers_to_but_the_cache_lost_is_named(tmp_path):
    import json

    _interrupted(tmp_path)
    evaluations = tmp_path / "evaluations.jsonl"
    lines = evaluations.read_text().splitlines(keepends=True)
    lost = json.loads(lines[0])["key"]
    evaluations.write_text("".join(lines[1:]))
    events = [json.loads(line) for line in (tmp_path / "events.jsonl").read_text().splitlines()]
    number = next(i + 1 for i, e in enumerate(events) if e["kind"] == "batch" and lost in e["data"]["cases"])
    with pytest.raises(ResumeError) as info:
        optimize(long_seed(), long_dataset(), HashEvaluator(), VaryingReflector(), CONFIG, run_dir=tmp_path,
                 resume=True)
    assert str(info.value) == (f"run record {tmp_path / 'events.jsonl'} line {number} is damaged (missing evaluation "
                               f"{lost} (not in evaluations.jsonl)); the run cannot be continued from it: restore "
                               "the file or start a new run")


# -- a run dir that holds records but no run ----------------------------------------------------------------
def test_a_new_run_into_a_dir_holding_only_evaluations_says_to_use_another(tmp_path):
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    (run_dir / "evaluations.jsonl").write_text("{}\n")
    done = _gepa(f"hydra.run.dir={run_dir}", cwd=tmp_path)
    assert done.returncode == 1
    assert done.stderr.strip() == (f"gepa_lab: error: {run_dir} holds run records (evaluations.jsonl) but no "
                                   "gepa_lab run to continue (no experiment.json); use a new run directory, or "
                                   "delete evaluations.jsonl to reuse it")
    assert sorted(p.name for p in run_dir.iterdir()) == ["evaluations.jsonl"]  # nothing written


# -- a run dir that cannot be written, found before Hydra configures logging into it -------------------------
def _unfinished_run_dir(tmp_path: Path) -> Path:
    """What the command line checks before resuming: a run record of this format."""
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    (run_dir / "experiment.json").write_text('{"format": 3}\n')
    return run_dir


def test_cli_resume_into_a_run_dir_whose_log_cannot_be_opened_is_one_line(tmp_path):
    # Root-proof: a directory where the log file should be fails to open for anyone.
    run_dir = _unfinished_run_dir(tmp_path)
    (run_dir / "gepa_lab.log").mkdir()
    done = _gepa(f"resume={run_dir}", cwd=tmp_path)
    assert done.returncode == 1, done.stderr
    assert done.stderr.strip() == (f"gepa_lab: error: cannot write the run directory {run_dir} (gepa_lab.log: Is a "
                                   "directory); make it writable, then resume")


@pytest.mark.skipif(os.geteuid() == 0, reason="root writes into a read-only directory; the root-proof variant is "
                                              "test_cli_resume_into_a_run_dir_whose_log_cannot_be_opened_is_one_line")
def test_cli_resume_into_a_read_only_run_dir_is_one_line(tmp_path):
    run_dir = _unfinished_run_dir(tmp_path)
    (run_dir / "gepa_lab.log").write_text("")
    (run_dir / ".lock").write_text("")
    for path in (run_dir / "gepa_lab.log", run_dir / ".lock", run_dir):
        path.chmod(0o555)
    try:
        done = _gepa(f"resume={run_dir}", cwd=tmp_path)
    finally:
        run_dir.chmod(0o755)
    assert done.returncode == 1, done.stderr
    line = done.stderr.strip()
    assert "\n" not in line and line.startswith(f"gepa_lab: error: cannot write the run directory {run_dir} (")
    assert line.endswith("); make it writable, then resume")
