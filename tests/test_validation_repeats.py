"""`search.validation_repeats`: Validation (the Pareto frontier's data) scored under r evaluation
seeds, each case's score the mean; every repeat a metric call; exact after a kill; part of the
run's identity."""

from __future__ import annotations

import json
import math
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest
from conftest import RunRecord, strip_volatile
from helpers import ImprovingReflector, ToyEvaluator, dataset, is_improved, seed_spec
from helpers_long import HashEvaluator, InterruptingReflector, VaryingReflector, long_dataset, long_seed

from gepa_lab import EvaluationSettings, SearchConfig, optimize
from gepa_lab.core.errors import ConfigError, ResumeError
from gepa_lab.search.state import validation_seeds

SCRIPT = Path(__file__).parent / "scripts" / "killable_run.py"


def seeded_score(artifact, case, seed) -> float:
    """A score that moves with the evaluation seed (and is higher for the improved artifact)."""
    return (0.5 if is_improved(artifact) else 0.1) + (seed % 1000) / 4000


def _run(repeats: int):
    evaluator = ToyEvaluator(seeded_score)
    config = SearchConfig(max_iterations=3, minibatch_size=2, random_seed=3, validation_repeats=repeats)
    result = optimize(seed_spec(), dataset(feedback=3, validation=4, holdout=2), evaluator, ImprovingReflector(),
                      config)
    return result, evaluator


def test_three_repeats_score_each_validation_case_under_three_seeds_and_keep_the_mean():
    result, evaluator = _run(3)
    seeds = result.seeds["validation_seeds"]
    assert seeds == validation_seeds(result.seeds["validation_seed"], 3) and len(set(seeds)) == 3
    validation = [b for b in evaluator.batches() if b.case_ids[0].startswith("val")]
    by_artifact: dict[str, list[int]] = {}
    for batch in validation:
        assert batch.case_ids == ["val-1", "val-2", "val-3", "val-4"]
        by_artifact.setdefault(batch.artifact_id, []).append(batch.seed)
    assert len(by_artifact) == len(result.pool) >= 2  # the seed and at least one accepted child
    assert all(used == seeds for used in by_artifact.values())
    assert sum(len(b.case_ids) for b in validation) == 3 * 4 * len(result.pool)
    for entry in result.pool:  # the frontier's per-case scores are the means over the three seeds
        artifact = next(b.artifact for b in validation if b.artifact_id == entry.id)
        mean = math.fsum(seeded_score(artifact, None, s) for s in seeds) / 3
        assert entry.validation_scores == pytest.approx([mean] * 4, abs=1e-12)
    # The budget is honest: every repeat is a metric call.
    assert result.metric_calls == evaluator.cases_evaluated


def test_one_repeat_scores_validation_once_under_the_validation_seed():
    result, evaluator = _run(1)
    assert "validation_seeds" not in result.seeds
    validation = [b for b in evaluator.batches() if b.case_ids[0].startswith("val")]
    assert [b.seed for b in validation] == [result.seeds["validation_seed"]] * len(result.pool)
    assert sum(len(b.case_ids) for b in validation) == 4 * len(result.pool)
    assert result.metric_calls == evaluator.cases_evaluated
    three, _ = _run(3)  # the repeats draw nothing from the run's RNG: the holdout seeds are those of r = 1
    assert three.seeds["holdout_seed"] == result.seeds["holdout_seed"]


@pytest.mark.parametrize("value", [0, -1, 1.5, True])
def test_a_bad_repeat_count_is_refused_with_one_line(value):
    with pytest.raises(ConfigError, match=r"^search.validation_repeats must be an integer >= 1") as info:
        SearchConfig(validation_repeats=value)
    assert "\n" not in str(info.value)


def test_a_sigkill_mid_repeats_resumes_to_the_uninterrupted_run_without_paying_twice(tmp_path):
    clean = optimize(long_seed(), long_dataset(), HashEvaluator(), VaryingReflector(),
                     SearchConfig(max_iterations=8, minibatch_size=2, random_seed=5, validation_repeats=3),
                     run_dir=tmp_path / "clean")
    paid = tmp_path / "paid.jsonl"
    run_dir = tmp_path / "run"
    # Killed in the seed's second validation repeat, then mid-search.
    for kill, resume in ((7, []), (30, ["--resume"]), (0, ["--resume"])):
        done = subprocess.run([sys.executable, str(SCRIPT), str(run_dir), str(paid), str(kill),
                               "--validation-repeats", "3", *resume], capture_output=True, text=True, timeout=120)
        assert done.returncode == (-9 if kill else 0), done.stderr
    assert strip_volatile(json.loads((run_dir / "result.json").read_text())) == strip_volatile(
        json.loads(json.dumps(clean.to_dict())))
    assert RunRecord(run_dir).comparable() == RunRecord(tmp_path / "clean").comparable()
    lines = [tuple(json.loads(line)) for line in paid.read_text().splitlines()]
    assert max(Counter(lines).values()) == 1  # no (artifact, case, seed) was paid twice
    assert len({seed for _, case, seed in lines if case.startswith("val")}) == 3


def test_repeats_give_the_same_run_whatever_the_number_of_workers():
    config = SearchConfig(max_iterations=6, minibatch_size=2, random_seed=4, parallel_proposals=2, validation_repeats=3)
    one, many = (optimize(long_seed(), long_dataset(), HashEvaluator(), VaryingReflector(), config,
                          evaluation=EvaluationSettings(workers=workers)) for workers in (1, 3))
    assert strip_volatile(one.to_dict()) == strip_volatile(many.to_dict())
    assert len(one.pool) >= 2 and one.seeds["validation_seeds"] == many.seeds["validation_seeds"]


def test_a_run_recorded_before_the_setting_existed_resumes_with_one_repeat_only(tmp_path):
    config = SearchConfig(max_iterations=8, minibatch_size=2, random_seed=5)
    clean = optimize(long_seed(), long_dataset(), HashEvaluator(), VaryingReflector(), config)
    with pytest.raises(KeyboardInterrupt):
        optimize(long_seed(), long_dataset(), HashEvaluator(), InterruptingReflector(3), config, run_dir=tmp_path)
    path = tmp_path / "experiment.json"
    experiment = json.loads(path.read_text())
    del experiment["identity"]["search"]["validation_repeats"]  # as a record written before it
    path.write_text(json.dumps(experiment))
    with pytest.raises(ResumeError, match=r"search setting validation_repeats changed \(1 → 3\)"):
        optimize(long_seed(), long_dataset(), HashEvaluator(), VaryingReflector(),
                 SearchConfig(max_iterations=8, minibatch_size=2, random_seed=5, validation_repeats=3),
                 run_dir=tmp_path, resume=True)
    resumed = optimize(long_seed(), long_dataset(), HashEvaluator(), VaryingReflector(), config, run_dir=tmp_path,
                       resume=True)
    assert strip_volatile(resumed.to_dict()) == strip_volatile(clean.to_dict())
