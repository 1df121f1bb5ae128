"""Each benchmark script's --quick mode runs and writes its Markdown report and CSV with the
expected columns (structure only: quick numbers are smoke, not measurements)."""

from __future__ import annotations

import csv
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
ENV_COLUMNS = {"date", "machine", "cpu", "cpus", "python", "gepa_version", "gepa_lab_version", "gepa_lab_commit",
               "gepa_lab_tree", "evaluators_tree"}

SCRIPTS = {
    "overhead_vs_gepa": {"scenario", "mode", "gepa_ms_per_call", "lab_ms_per_call", "ratio_lab_over_gepa", "target",
                         "verdict", "repeats"},
    "scaling": {"kind", "engine", "budget", "metric_calls", "proposals", "wall_s", "evaluator_s", "reflector_s",
                "harness_ms_per_call", "harness_ms_per_proposal", "window_end_calls"},
    "parallel_speedup": {"kind", "engine", "workers", "k", "reflect_ms", "case_ms", "seed", "wall_s", "metric_calls",
                         "ms_per_call", "speedup", "holdout_delta", "gain_per_1k_calls", "fingerprint"},
    "quality_vs_gepa": {"label", "engine", "family", "seed", "budget", "search_calls", "accepted", "eligible",
                        "holdout_delta", "worse", "winner_is_seed"},
    "round_acceptance": {"label", "family", "seed", "search_calls", "accepted", "dropped_by_round_acceptance",
                         "calls_per_accepted", "holdout_delta", "gain_per_1k_calls", "holdout_delta_at_100"},
    "ablations": {"label", "family", "seed", "search_calls", "accepted", "calls_per_accepted", "holdout_delta",
                  "worse", "eligible"},
    "mlflow_logging_cost": {"kind", "repeat", "wall_s", "cpu_s", "search_wait_ms_per_proposal",
                            "total_wait_ms_per_proposal"},
}


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(SCRIPTS))
def test_quick_mode_writes_report_and_csv(name: str, tmp_path: Path) -> None:
    env = {**os.environ, "LITELLM_LOCAL_MODEL_COST_MAP": "True", "MLFLOW_DISABLE_TELEMETRY": "true"}
    proc = subprocess.run([sys.executable, str(ROOT / "experiments" / f"{name}.py"), "--quick", "--out-dir",
                           str(tmp_path)], cwd=ROOT, env=env, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]

    md = (tmp_path / f"{name}.md").read_text()
    assert md.startswith("# ")
    for field in ("- date:", "- machine:", "- load:", "- versions: gepa", "- reproduce: `python experiments/"):
        assert field in md, f"{name}.md lacks {field!r}"
    assert "QUICK MODE" in md
    assert str(tmp_path) not in md  # the reproduce line names no temporary directory

    with (tmp_path / f"{name}.csv").open(newline="") as fh:
        reader = csv.DictReader(fh)
        columns = set(reader.fieldnames or ())
        rows = list(reader)
    missing = (SCRIPTS[name] | ENV_COLUMNS) - columns
    assert not missing, f"{name}.csv lacks columns {sorted(missing)}"
    assert rows, f"{name}.csv has no rows"
    assert all(row["gepa_version"] and row["date"] for row in rows)
