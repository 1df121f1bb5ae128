"""Studies are Hydra sweeps; `report --compare KEY` pairs their runs by the sweep's other axes, with
intervals over clusters and holdout cases; the look ledger counts every decision on a holdout split;
the confirmation split is opened once per winner."""

from __future__ import annotations

import csv
import json
import math
import shutil
import subprocess
import sys
import threading
from pathlib import Path

import pytest
from test_data import make_dir, seal

from gepa_lab.runs.looks import looks, record_look
from gepa_lab.study import (
    StudyError,
    StudyRun,
    compare,
    holdout_looks,
    load_study,
    opposite_signs,
    pair_key,
    seed_noise,
    value_of,
)


def _run(job: int, parent: str, seed: int, cases: list[float], *, family: str = "recipe", merge: str = "none",
         seed_won: bool = False, eligible: bool = True, confirmed: float | None = None,
         seed_score: float = 0.5) -> StudyRun:
    """A finished job: its winner's per-case holdout deltas over the seed (`cases`)."""
    result = {"best_id": "s" if seed_won else f"w{job}", "seed_id": "s", "holdout_delta": sum(cases) / len(cases),
              "holdout_cases": [{"case_id": f"{family}-{i}", "delta": d} for i, d in enumerate(cases)],
              "promotion_eligible": eligible, "metric_calls": 100, "cost_usd": {"task": 1.0, "reflection": 0.5},
              "dataset": {"id": family, "digests": {"holdout": f"digest-{family}"}}, "decision_number": 1,
              "seeds": {"random_seed": seed}, "baseline_holdout": {"score": seed_score}}
    overrides = (f"experiment={family}", f"search.random_seed={seed}", f"search/parent={parent}",
                 f"search/merge={merge}")
    return StudyRun(Path(f"/sweep/{job}"), overrides, {"hydra_choices": {"search/parent": parent}}, result,
                    None if confirmed is None else {"delta": confirmed, "openings_before": 1}, name=family)


RUNS = [_run(0, "pareto", 1, [0.1, 0.1]), _run(1, "best", 1, [0.3, 0.1]), _run(2, "pareto", 2, [0.1, 0.1]),
        _run(3, "best", 2, [0.05, 0.05]), _run(4, "pareto", 3, [0.2, 0.0], seed_won=True),
        _run(5, "best", 3, [0.3, 0.3], confirmed=-0.01), _run(6, "pareto", 4, [0.2, 0.2], confirmed=0.1),
        _run(7, "best", 5, [0.1, 0.1])]


def test_runs_are_paired_by_every_other_axis_and_compared():
    assert value_of(RUNS[1], "search/parent") == "best"
    assert pair_key(RUNS[0], "search/parent") == pair_key(RUNS[1], "search/parent")
    [row] = compare(RUNS, "search/parent")
    assert (row["value"], row["baseline"], row["group"], row["pairs"]) == ("best", "pareto", "all", 3)  # 4, 5 unpaired
    # The seed won job 4: its gain is 0, not its delta.
    assert row["difference"] == pytest.approx(((0.2 - 0.1) + (0.05 - 0.1) + (0.3 - 0.0)) / 3)
    assert (row["better"], row["tied"], row["worse"]) == (2, 0, 1)
    assert row["low"] is None and row["p"] is None and "3 clusters of pairs: an interval needs at least 5" in \
        row["why no interval"]  # three pairs: no interval, and why
    assert row["false promotions"] == "1/1 confirmed (1 on a split opened before)"
    assert row["baseline false promotions"] == "-"
    assert row["cost usd"] == pytest.approx(1.5)
    pairs = {p["random seed"]: p for p in row["pairs_data"]}
    assert json.loads(pairs[1]["case differences"]) == pytest.approx([0.2, 0.0])
    assert pairs[3]["baseline gain"] == 0.0 and pairs[3]["run"] == "5"


def _factorial(effect: dict[str, float], seeds: int = 6) -> list[StudyRun]:
    """family x seed x parent x merge; a pair's merge twin is a near-duplicate of it."""
    runs, job = [], 0
    for family, shift in effect.items():
        for seed in range(1, seeds + 1):
            for merge in ("none", "on"):
                base = [0.1 * (seed % 3), 0.05 * seed, 0.0, 0.02]
                add = [shift + 0.004 * (seed - 3.5) + p * (seed % 3 - 1) for p in (0.03, -0.03, 0.02, -0.02)]
                for parent, adds in (("pareto", [0.0] * 4), ("best", add)):
                    runs.append(_run(job, parent, seed, [b + a + (0.001 if merge == "on" else 0.0)
                                                         for b, a in zip(base, adds, strict=True)],
                                     family=family, merge=merge, seed_score=0.5 + 0.01 * seed))
                    job += 1
    return runs


def test_the_comparison_clusters_near_duplicate_pairs_resamples_cases_and_tests():
    runs = _factorial({"recipe": 0.05, "weather": -0.02})
    rows = compare(runs, "search/parent", by="experiment")
    assert [(r["group"], r["pairs"], r["clusters"]) for r in rows] == [("all", 24, 12), ("recipe", 12, 6),
                                                                         ("weather", 12, 6)]
    pooled, recipe, weather = rows
    assert recipe["difference"] == pytest.approx(0.05) and weather["difference"] == pytest.approx(-0.02)
    assert recipe["low"] < recipe["difference"] < recipe["high"] and recipe["low"] > 0 and weather["high"] < 0
    # Six clusters all one way: the exact sign-flip p-value is 2 / 2**6.
    assert recipe["p"] == pytest.approx(2 / 64) and weather["p"] == pytest.approx(2 / 64)
    assert opposite_signs(rows) == [
        "best: the groups' effects differ in sign (recipe +0.0500, weather -0.0200); the pooled row averages "
        "opposite effects: read the rows, not the pool"]
    assert seed_noise(runs) == pytest.approx(math.sqrt(0.01 ** 2 * 3.5))  # sd of 0.51 .. 0.56
    # Clusters: the merge twins count once; treated as independent pairs the interval would be narrower.
    from gepa_lab.comparison import paired_comparison

    diffs = [p["difference"] for p in recipe["pairs_data"]]
    cases = [json.loads(p["case differences"]) for p in recipe["pairs_data"]]
    seeds = [p["random seed"] for p in recipe["pairs_data"]]
    naive = paired_comparison(diffs, list(range(len(diffs))))
    one_way = paired_comparison(diffs, seeds)
    two_way = paired_comparison(diffs, seeds, cases)
    assert (two_way.low, two_way.high) == (recipe["low"], recipe["high"])
    assert naive.high - naive.low < one_way.high - one_way.low < two_way.high - two_way.low


def test_ties_are_judged_per_case_by_the_score_s_resolution():
    from gepa_lab.comparison import paired_comparison

    # Pair 1 differs by token efficiency on every case (within 0.01): a tie, whatever its mean; pair 2
    # gains one case's check: better, though its mean moves less than pair 1's.
    cases = [[0.008, 0.009, 0.007, 0.008], [0.012, 0.0, 0.0, 0.0], [-0.2, 0.0, 0.0, 0.0]]
    diffs = [sum(c) / 4 for c in cases]
    result = paired_comparison(diffs, [1, 2, 3], cases)
    assert (result.better, result.tied, result.worse, result.tolerance) == (1, 1, 1, 0.01)
    assert (paired_comparison(diffs, [1, 2, 3], cases, tolerance=0.001).tied,
            paired_comparison(diffs, [1, 2, 3]).tied) == (0, 2)  # without cases: the mean within 0.01
    with pytest.raises(ValueError, match="each averaging to its pair's difference"):
        paired_comparison([0.5, 0.1, 0.1, 0.1, 0.1], [1, 2, 3, 4, 5], [[0.1, 0.1]] * 5)
    with pytest.raises(ValueError, match="need as many cluster labels"):
        paired_comparison([0.1, 0.2], [1])


def test_a_bad_comparison_says_why():
    with pytest.raises(StudyError, match="no such configuration key"):
        compare(RUNS, "search.nothing")
    with pytest.raises(StudyError, match="--baseline 'greedy' is not a value of search/parent"):
        compare(RUNS, "search/parent", baseline="greedy")
    with pytest.raises(StudyError, match="only one value of search/parent .pareto.; sweep it over two or more"):
        compare([r for r in RUNS if "pareto" in r.overrides[2]], "search/parent")
    # A killed sweep is not "one value": the unfinished jobs are counted.
    killed = [r for r in RUNS if "pareto" in r.overrides[2]] + [StudyRun(Path("/sweep/9"), RUNS[1].overrides, {},
                                                                          None, None)]
    with pytest.raises(StudyError, match="1 run of the sweep have no decision yet: complete it"):
        compare(killed, "search/parent")
    # Different holdout splits are not pairs.
    with pytest.raises(StudyError, match="--compare experiment is refused: recipe and weather are judged on "
                                         "different holdout splits"):
        compare(_factorial({"recipe": 0.0, "weather": 0.0}, seeds=1), "experiment")


def test_the_ledger_counts_concurrent_looks_once_each_and_a_repeated_key_once(look_ledger):
    counts: list[int] = []
    threads = [threading.Thread(target=lambda n=n: counts.append(len(record_look("holdout", "d", f"run{n}/1"))))
               for n in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert sorted(counts) == list(range(8))
    keys = [row["key"] for row in looks("holdout", "d")]
    assert len(record_look("holdout", "d", "run3/1")) == keys.index("run3/1")  # a resumed decision: same count
    assert len(looks("holdout", "d")) == 8 and looks("holdout", "other") == []
    with open(look_ledger, "a", encoding="utf-8") as fh:
        fh.write('{"split": "holdout", "dig')  # a line torn by a crash: that look is lost, not the ledger
    assert len(record_look("holdout", "d", "run9/1")) == 8


def test_six_decisions_on_one_holdout_are_counted_wherever_they_happen(tmp_path):
    """Tracking off and two MLflow stores: one ledger counts 0..5; a finished run decided again
    under another policy is one more look."""
    from fixtures_mlflow import ToyEvaluator, ToyReflector, toy_dataset, toy_run, toy_seed

    from gepa_lab import PromotionPolicy, SearchConfig, optimize

    def untracked(n: int, **kwargs: object) -> object:
        return optimize(toy_seed(), toy_dataset(), ToyEvaluator(), ToyReflector(),
                        SearchConfig(max_iterations=2, minibatch_size=2, random_seed=n), run_dir=tmp_path / f"run{n}",
                        **kwargs)  # type: ignore[arg-type]

    counts = []
    for n, store in enumerate(("none", "a", "b", "none", "a", "b")):
        if store == "none":
            untracked(n)
        else:
            toy_run(f"sqlite:///{tmp_path / store}.db", tmp_path / f"run{n}", random_seed=n, iterations=2)
        counts.append(json.loads((tmp_path / f"run{n}" / "result.json").read_text())["holdout_reuse"])
    assert counts == [0, 1, 2, 3, 4, 5]
    again = untracked(0, resume=True, promotion=PromotionPolicy(min_holdout_improvement=0.5))
    assert again.holdout_reuse == 6  # type: ignore[attr-defined]
    # A study reads each job's own (first) decision, and says which were decided again.
    runs = load_study(tmp_path)
    assert [(r.run_dir.name, r.result["decision_number"], r.decisions) for r in runs][0] == ("run0", 1, 2)
    assert runs[0].latest["decision_number"] == 2  # type: ignore[index]
    record_look("holdout", runs[0].holdout, "elsewhere/1")
    lines = holdout_looks(runs)
    assert lines[0].startswith(f"holdout split toy ({runs[0].holdout[:12]}): 7 decisions in this study, 8 in the "
                               "look ledger")
    assert lines[1] == "decided again later (the study uses each job's own first decision): run0"


# -- the confirmation split ------------------------------------------------------------------------
def _confirmable(tmp_path: Path, name: str, random_seed: int = 1) -> Path:
    from helpers import ImprovingReflector, ToyEvaluator, seed_spec

    from gepa_lab import SearchConfig, optimize
    from gepa_lab.data import load_dataset_dir

    data = tmp_path / "data"
    run_config = {"evaluator": {"_target_": "helpers.ToyEvaluator"}, "dataset": {"path": str(data)}}
    optimize(seed_spec(), load_dataset_dir(data, id="d", version="1"), ToyEvaluator(), ImprovingReflector(),
             SearchConfig(max_metric_calls=40, random_seed=random_seed), run_dir=tmp_path / name,
             run_config=run_config)
    return tmp_path / name


def test_the_confirmation_split_is_opened_once_per_winner_whatever_the_run_dir(tmp_path, capsys):
    from gepa_lab import report
    from gepa_lab.core.contracts import split_digest
    from gepa_lab.data import load_split

    (tmp_path / "data").mkdir()
    make_dir(tmp_path / "data")
    seal(tmp_path / "data", [{"id": f"c-{i}", "input": f"unseen task {i}"} for i in range(3)])
    digest = split_digest(load_split(tmp_path / "data" / "confirmation.jsonl"))
    run_dir = _confirmable(tmp_path, "run")
    shutil.copytree(run_dir, tmp_path / "copy")  # a copy made before confirming
    record_look("confirmation", digest, "another-winner", run_dir="elsewhere")  # someone looked already
    assert report.main(["--confirm", str(run_dir)]) == 0
    out = capsys.readouterr().out
    assert "confirmation delta +0.6000 over 3 cases" in out
    assert "NOT a first look: the split was opened 1 time before (for other winners)" in out
    data = json.loads((run_dir / "confirmation.json").read_text())
    assert (data["openings_before"], data["digest"]) == (1, digest)
    for again in (run_dir, tmp_path / "copy"):
        assert report.main(["--confirm", str(again)]) == 1
        err = capsys.readouterr().err
        assert f"the confirmation split {digest[:12]} was already opened for winner" in err
        assert f"(from {run_dir.resolve()})" in err
    assert not (tmp_path / "copy" / "confirmation.json").exists()
    assert [row["key"] for row in looks("confirmation", digest)] == [
        "another-winner", json.loads((run_dir / "result.json").read_text())["best_id"]]


def test_a_confirmation_split_without_its_manifest_digest_is_refused_before_anything_is_scored(tmp_path, capsys):
    from gepa_lab import report

    (tmp_path / "data").mkdir()
    make_dir(tmp_path / "data")
    run_dir = _confirmable(tmp_path, "run")
    (tmp_path / "data" / "confirmation.jsonl").write_text('{"id": "c-1", "input": "unseen"}\n')
    paid = (run_dir / "evaluations.jsonl").read_text()
    assert report.main(["--confirm", str(run_dir)]) == 1
    err = capsys.readouterr().err
    assert "has no digest for its confirmation split" in err and len(err.strip().splitlines()) == 1
    assert (run_dir / "evaluations.jsonl").read_text() == paid and not (run_dir / "confirmation.json").exists()


# -- a sweep, end to end ---------------------------------------------------------------------------
@pytest.mark.slow
def test_a_factorial_sweep_is_compared_with_clusters_cases_families_and_ties(tmp_path):
    sweep = tmp_path / "sweep"
    done = subprocess.run([sys.executable, "-m", "gepa_lab", "-m", "experiment=recipe,weather",
                           "search.random_seed=range(1,6)", "search/parent=pareto,current_best",
                           "search/merge=none,on", "search.max_metric_calls=130", "tracking=none", "progress=off",
                           f"hydra.sweep.dir={sweep}"], cwd=tmp_path, capture_output=True, text=True, timeout=1800)
    assert done.returncode == 0, done.stderr[-2000:]
    assert len([p for p in sweep.iterdir() if p.is_dir()]) == 2 * 5 * 2 * 2

    def report(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([sys.executable, "-m", "gepa_lab.report", "--sweep", str(sweep), *args,
                               "--out", str(tmp_path / "report")], cwd=tmp_path, capture_output=True, text=True,
                              timeout=300)

    compared = report("--compare", "search/parent")
    assert compared.returncode == 0, compared.stderr
    assert "resampling clusters (pairs of one holdout split and random seed) and holdout cases" in compared.stdout
    assert "tied: every holdout case within +-0.01" in compared.stdout
    with open(tmp_path / "report" / "compare-search.parent.csv", encoding="utf-8") as fh:
        rows = list(csv.DictReader(fh))
    assert [(r["experiment"], r["pairs"], r["clusters"]) for r in rows] == [("all", "20", "10"), ("recipe", "10", "5"),
                                                                           ("weather", "10", "5")]
    for row in rows:
        assert float(row["low"]) <= float(row["difference"]) <= float(row["high"]) and 0 <= float(row["p"]) <= 1
        assert int(row["better"]) + int(row["tied"]) + int(row["worse"]) == int(row["pairs"])
        assert float(row["noise"]) > 0
    with open(tmp_path / "report" / "pairs-search.parent.csv", encoding="utf-8") as fh:
        assert len(list(csv.DictReader(fh))) == 20
    assert "holdout split skillcraft-sim/recipe" in compared.stdout and "20 in the look ledger" in compared.stdout

    refused = report("--compare", "experiment")
    assert refused.returncode == 1
    assert "--compare experiment is refused: recipe and weather are judged on different holdout splits" in \
        refused.stderr

    plain = report()  # tracking=none: the run records are the report's source
    assert plain.returncode == 0, plain.stderr
    lines = plain.stdout.splitlines()
    assert lines[0].split()[:4] == ["experiment", "seed", "job", "status"] and len(lines) > 40
    assert "recipe: 20 runs, 20 finished" in plain.stdout


def test_the_plain_report_has_the_same_numbers_from_the_run_records_as_from_mlflow(tmp_path):
    import pandas as pd
    from fixtures_mlflow import toy_run
    from mlflow import MlflowClient

    from gepa_lab import report

    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    for n in (1, 2):
        toy_run(uri, tmp_path / "sweep" / f"{n - 1}_seed={n}", random_seed=n, iterations=2)
    from_mlflow = report.frame_of(report.parent_runs(MlflowClient(uri), "gepa-lab", ""), uri)
    from_records = report.records_frame(load_study(tmp_path / "sweep"))
    columns = ["experiment", "seed", "status", "winner", "holdout_delta", "holdout_delta_low", "holdout_delta_high",
               "eligible", "metric_calls", "cost_usd", "holdout_reuse", "stop_reason", "reason", "run_id",
               "gepa_experiment_id", "run_dir", "run_url"]
    assert from_records["holdout_reuse"].tolist() == [0, 1]
    pd.testing.assert_frame_equal(from_mlflow[columns], from_records[columns], check_dtype=False)
