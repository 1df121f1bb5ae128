"""The side-by-side benchmarks in experiments/: each --quick mode runs and writes its Markdown report
and CSV with the expected columns (structure only: quick numbers are smoke, not measurements), a
quick mode without --out-dir writes nothing into the checkout, and the reference is driven as the
scripts claim (gepa-lab's paired seeds through its callback, reflections of a round concurrently)."""

from __future__ import annotations

import csv
import os
import subprocess
import sys
import threading
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[1]
ENV_COLUMNS = {"date", "machine", "cpu", "cpus", "python", "gepa_version", "gepa_lab_version", "gepa_lab_commit",
               "gepa_lab_tree", "evaluators_tree"}
SCRIPTS = {
    "overhead_vs_gepa": {"scenario", "mode", "gepa_ms_per_call", "lab_ms_per_call", "ratio_lab_over_gepa", "target",
                         "verdict", "repeats", "lab_batched_ms_per_call"},
    "scaling": {"kind", "engine", "budget", "metric_calls", "proposals", "wall_s", "evaluator_s", "reflector_s",
                "harness_ms_per_call", "harness_ms_per_proposal", "window_end_calls"},
    "parallel_speedup": {"kind", "engine", "workers", "k", "reflect_ms", "case_ms", "seed", "wall_s", "metric_calls",
                         "ms_per_call", "speedup", "lab_over_ref", "holdout_delta", "gain_per_1k_calls",
                         "fingerprint"},
    "quality_vs_gepa": {"label", "engine", "family", "seed", "budget", "search_calls", "accepted", "eligible",
                        "holdout_delta", "worse", "winner_is_seed"},
    "mlflow_logging_cost": {"kind", "repeat", "position", "wall_s", "cpu_s", "engine_cpu_s", "rss_mib", "pss_mib"},
}


def _run(name: str, *args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "LITELLM_LOCAL_MODEL_COST_MAP": "True", "MLFLOW_DISABLE_TELEMETRY": "true", **(env or {})}
    proc = subprocess.run([sys.executable, str(ROOT / "experiments" / f"{name}.py"), "--quick", *args], cwd=ROOT,
                          env=env, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return proc


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(SCRIPTS))
def test_quick_mode_writes_report_and_csv(name: str, tmp_path: Path) -> None:
    _run(name, "--out-dir", str(tmp_path))
    md = (tmp_path / f"{name}.md").read_text()
    assert md.startswith("# ")
    for field in ("- date:", "- machine:", "- load:", "- code measured: gepa-lab", "- reproduce: `python experiments/"):
        assert field in md, f"{name}.md lacks {field!r}"
    assert "QUICK MODE" in md
    assert str(tmp_path) not in md  # the reproduce line names no temporary directory
    with (tmp_path / f"{name}.csv").open(newline="") as fh:
        reader = csv.DictReader(fh)
        columns, rows = set(reader.fieldnames or ()), list(reader)
    missing = (SCRIPTS[name] | ENV_COLUMNS) - columns
    assert not missing, f"{name}.csv lacks columns {sorted(missing)}"
    assert rows and all(row["gepa_version"] and row["date"] for row in rows)


def _checkout_files() -> dict[str, float]:
    return {str(p.relative_to(ROOT)): p.stat().st_mtime for p in (ROOT / "experiments").rglob("*") if p.is_file()
            and "__pycache__" not in p.parts}


@pytest.mark.slow
def test_quick_mode_without_out_dir_writes_to_a_temporary_folder(tmp_path: Path) -> None:
    before = _checkout_files()
    proc = _run("overhead_vs_gepa", env={"TMPDIR": str(tmp_path)})
    assert _checkout_files() == before  # no committed report overwritten, no new file in the checkout
    written = [p for p in tmp_path.rglob("overhead_vs_gepa.*")]
    assert sorted(p.suffix for p in written) == [".csv", ".md"]
    assert str(written[0].parent) in proc.stdout


@pytest.fixture(scope="module")
def bench() -> Any:
    sys.path[:0] = [str(ROOT / "experiments")]
    try:
        import _bench
    finally:
        sys.path.remove(str(ROOT / "experiments"))
    return _bench


def test_reference_gets_gepa_labs_paired_seeds_through_its_callback(bench: Any, monkeypatch: Any) -> None:
    seen: list[tuple[str, int]] = []
    evaluate = bench.TimedEvaluator.evaluate

    def spy(self: Any, artifact: Any, cases: list[Any], seed: int) -> Any:
        seen.extend((case.id, seed) for case in cases)
        return evaluate(self, artifact, cases, seed)

    monkeypatch.setattr(bench.TimedEvaluator, "evaluate", spy)
    task = bench.skillcraft_task("recipe")
    feedback = {case.id for case in task.dataset.feedback}
    counts = {}
    for policy in ("paired", "unpaired", "fixed", "fresh"):
        seen.clear()
        out = bench.run_reference(task, 150, 1, seed_policy=policy)
        counts[policy] = (Counter(s for c, s in seen if c in feedback), Counter(s for c, s in seen if c not in feedback),
                          out.proposals)
    minibatch, validation, proposals = counts["paired"]
    # one seed per iteration, shared by the parent's and the child's 3-case minibatch; one validation seed
    assert len(minibatch) == proposals > 1 and set(minibatch.values()) == {6}
    assert len(validation) == 1 and not set(validation) & set(minibatch)
    assert len(counts["fixed"][0]) == 1 and set(counts["fixed"][0]) == set(counts["fixed"][1])
    for policy in ("unpaired", "fresh"):  # a new seed per minibatch evaluation: parent and child differ
        policy_minibatch, policy_validation, policy_proposals = counts[policy]
        assert set(policy_minibatch.values()) == {3} and len(policy_minibatch) > policy_proposals
        assert (len(policy_validation) == 1) == (policy == "unpaired")


def test_reference_reflects_the_tasks_of_an_iteration_concurrently(bench: Any, monkeypatch: Any) -> None:
    """The first iteration's 3 reflections meet at a barrier: it only opens if they run at once."""
    barrier, calls, lock = threading.Barrier(3, timeout=60), [], threading.Lock()
    reflect = bench.TimedReflector.reflect

    def spy(self: Any, *args: Any) -> Any:
        with lock:
            calls.append(threading.current_thread().name)
            first_three = len(calls) <= 3
        if first_three:
            barrier.wait()  # raises BrokenBarrierError (a failed reflection) if the tasks ran one by one
        return reflect(self, *args)

    monkeypatch.setattr(bench.TimedReflector, "reflect", spy)
    out = bench.run_reference(bench.skillcraft_task("recipe"), 200, 1, k=3)
    assert out.proposals >= 3 and not barrier.broken
    assert len(set(calls[:3])) == 3
