"""Studies are Hydra sweeps; `report --compare KEY` pairs their runs by the sweep's other axes."""

from __future__ import annotations

import csv
import math
import subprocess
import sys
from pathlib import Path

import pytest

from gepa_lab.study import StudyError, StudyRun, compare, holdout_reuse, pair_key, value_of


def _run(job: int, parent: str, seed: int, delta: float, eligible: bool = True, seed_won: bool = False,
         confirmed: float | None = None) -> StudyRun:
    result = {"best_id": "s" if seed_won else f"w{job}", "seed_id": "s", "holdout_delta": delta,
              "holdout_cases": [{}], "promotion_eligible": eligible, "metric_calls": 100,
              "cost_usd": {"task": 1.0, "reflection": 0.5}, "dataset": {"digests": {"holdout": "h"}},
              "decision_number": 1}
    overrides = ("experiment=recipe", f"search.random_seed={seed}", f"search/parent={parent}")
    confirmation = None if confirmed is None else {"delta": confirmed}
    return StudyRun(Path(f"/sweep/{job}"), overrides, {"hydra_choices": {"search/parent": parent}}, result,
                    confirmation)


RUNS = [_run(0, "pareto", 1, 0.10), _run(1, "best", 1, 0.20), _run(2, "pareto", 2, 0.10), _run(3, "best", 2, 0.05),
        _run(4, "pareto", 3, 0.10, seed_won=True), _run(5, "best", 3, 0.30, confirmed=-0.01),
        _run(6, "pareto", 4, 0.2, confirmed=0.1)]


def test_runs_are_paired_by_every_other_axis_and_compared():
    assert value_of(RUNS[1], "search/parent") == "best"
    assert pair_key(RUNS[0], "search/parent") == pair_key(RUNS[1], "search/parent")
    [row] = compare(RUNS, "search/parent")
    assert (row["value"], row["baseline"], row["pairs"]) == ("best", "pareto", 3)  # seed 4 has no partner
    # The seed won run 4: its gain is 0, not its delta.
    assert row["difference"] == pytest.approx(((0.2 - 0.1) + (0.05 - 0.1) + (0.3 - 0.0)) / 3)
    assert (row["better"], row["tied"], row["worse"]) == (2, 0, 1)
    assert row["low"] <= row["difference"] <= row["high"]
    assert row["false promotions"] == "1/1 confirmed" and row["baseline false promotions"] == "-"
    assert row["cost usd"] == pytest.approx(1.5)
    assert holdout_reuse(RUNS) == {"h": 7}


def test_a_bad_comparison_says_why():
    with pytest.raises(StudyError, match="no such configuration key"):
        compare(RUNS, "search.nothing")
    with pytest.raises(StudyError, match="--baseline 'greedy' is not a value of search/parent"):
        compare(RUNS, "search/parent", baseline="greedy")
    with pytest.raises(StudyError, match="only one value of search/parent"):
        compare([r for r in RUNS if "pareto" in r.overrides[-1]], "search/parent")


@pytest.mark.slow
def test_a_study_config_sweeps_and_the_report_compares_it(tmp_path):
    sweep = tmp_path / "sweep"
    done = subprocess.run([sys.executable, "-m", "gepa_lab", "-m", "study=policies", "experiment=recipe",
                           "search.random_seed=1,2", "search.max_metric_calls=130", "progress=off",
                           f"hydra.sweep.dir={sweep}"], cwd=tmp_path, capture_output=True, text=True, timeout=900)
    assert done.returncode == 0, done.stderr[-2000:]
    assert len([p for p in sweep.iterdir() if p.is_dir()]) == 2 * 3 * 2
    for key, values in (("search/parent", {"current_best", "epsilon_greedy"}), ("search/merge", {"on"})):
        report = subprocess.run([sys.executable, "-m", "gepa_lab.report", "--sweep", str(sweep), "--compare", key,
                                 "--out", str(tmp_path / "report")], cwd=tmp_path, capture_output=True, text=True,
                                timeout=300)
        assert report.returncode == 0, report.stderr
        assert "Holdout reuse: 12 decisions were taken on one holdout split" in report.stdout
        slug = key.replace("/", ".")
        with open(tmp_path / "report" / f"compare-{slug}.csv", encoding="utf-8") as fh:
            rows = list(csv.DictReader(fh))
        assert {r["value"] for r in rows} == values
        assert all(int(r["pairs"]) == 12 // (len(values) + 1) for r in rows)
        assert all(math.isfinite(float(r["low"])) and float(r["low"]) <= float(r["high"]) for r in rows)
        assert (tmp_path / "report" / f"compare-{slug}.png").stat().st_size > 0
        assert "MLflow, this comparison" not in report.stdout  # the sweep was not tracked: nothing logged

    from mlflow import MlflowClient

    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    client = MlflowClient(uri)
    client.search_experiments()  # creates the store: the report logs into an existing one only
    report = subprocess.run([sys.executable, "-m", "gepa_lab.report", "--sweep", str(sweep), "--compare",
                             "search/parent", "--tracking-uri", uri, "--out", str(tmp_path / "logged")],
                            cwd=tmp_path, capture_output=True, text=True, timeout=300)
    assert report.returncode == 0, report.stderr
    assert "MLflow, this comparison: " in report.stdout
    [run] = client.search_runs([client.get_experiment_by_name("gepa-lab-studies").experiment_id])
    with open(tmp_path / "logged" / "compare-search.parent.csv", encoding="utf-8") as fh:
        baseline = next(csv.DictReader(fh))["baseline"]
    assert baseline == "pareto"
    assert (run.data.tags["compare_key"], run.data.tags["baseline"]) == ("search/parent", "pareto")
    assert {a.path for a in client.list_artifacts(run.info.run_id)} >= {
        "compare-search.parent.json", "compare-search.parent.csv", "compare-search.parent.md",
        "compare-search.parent.png"}
