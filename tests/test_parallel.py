"""Concurrent proposals: a round of k proposals drawn from one state, run concurrently, applied in
proposal order. Same config and k give the same result for any worker count and any timing."""

from __future__ import annotations

import random
import threading
import time

import pytest
from conftest import PROPOSAL_KINDS, RunRecord, strip_volatile
from helpers_long import HashEvaluator, VaryingReflector, long_dataset, long_seed
from hypothesis import given, settings
from hypothesis import strategies as st

from gepa_lab import Case, Dataset, EvaluationSettings, PromptArtifact, SearchConfig, optimize

K4 = SearchConfig(max_iterations=16, minibatch_size=2, random_seed=5, parallel_proposals=4)


class JitterEvaluator(HashEvaluator):
    """Same results as HashEvaluator, but each call sleeps a random moment so threads interleave
    differently on every run."""

    def evaluate(self, artifact, cases, seed):
        time.sleep(random.random() / 2000)
        return super().evaluate(artifact, cases, seed)


class JitterReflector(VaryingReflector):
    def reflect(self, artifact, component, records):
        time.sleep(random.random() / 1000)
        return super().reflect(artifact, component, records)


@pytest.mark.parametrize("workers", [1, 3, 8])
def test_a_round_gives_the_same_run_for_any_worker_count_and_timing(tmp_path, workers):
    reference = optimize(long_seed(), long_dataset(), HashEvaluator(), VaryingReflector(), K4, run_dir=tmp_path / "a")
    jittered = optimize(long_seed(), long_dataset(), JitterEvaluator(), JitterReflector(), K4, run_dir=tmp_path / "b",
                        evaluation=EvaluationSettings(workers=workers))
    assert strip_volatile(jittered.to_dict()) == strip_volatile(reference.to_dict())
    a, b = RunRecord(tmp_path / "a").comparable(), RunRecord(tmp_path / "b").comparable()
    for side in (a, b):  # the jittering reflector is another class with the same replies
        side["experiment.json"]["config"].pop("evaluation")
        side["experiment.json"]["identity"].pop("reflector")
    assert a == b
    assert reference.proposals == 16 and len({p["iteration"] for p in RunRecord(tmp_path / "a").proposals}) == 16


def test_proposals_really_run_concurrently():
    active, peak, lock = [0], [0], threading.Lock()

    class Slow(HashEvaluator):
        def evaluate(self, artifact, cases, seed):
            with lock:
                active[0] += 1
                peak[0] = max(peak[0], active[0])
            time.sleep(0.01)
            with lock:
                active[0] -= 1
            return super().evaluate(artifact, cases, seed)

    optimize(long_seed(), long_dataset(), Slow(), VaryingReflector(), K4)
    assert peak[0] >= 3  # several proposals' evaluations overlapped


def test_k_1_is_the_classic_loop():
    classic = optimize(long_seed(), long_dataset(), HashEvaluator(), VaryingReflector(),
                       SearchConfig(max_iterations=8, minibatch_size=2, random_seed=5))
    k1 = optimize(long_seed(), long_dataset(), HashEvaluator(), VaryingReflector(),
                  SearchConfig(max_iterations=8, minibatch_size=2, random_seed=5, parallel_proposals=1))
    assert strip_volatile(k1.to_dict()) == strip_volatile(classic.to_dict())


class _InterruptAt(VaryingReflector):
    def __init__(self, at: int):
        self.at, self.calls, self.lock = at, 0, threading.Lock()

    def reflect(self, artifact, component, records):
        with self.lock:
            self.calls += 1
            hit = self.calls == self.at
        if hit:
            raise KeyboardInterrupt
        return super().reflect(artifact, component, records)


def test_an_interrupt_mid_round_resumes_to_the_same_result(tmp_path):
    clean = optimize(long_seed(), long_dataset(), HashEvaluator(), VaryingReflector(), K4)
    with pytest.raises(KeyboardInterrupt):
        optimize(long_seed(), long_dataset(), HashEvaluator(), _InterruptAt(at=7), K4, run_dir=tmp_path)
    resumed = optimize(long_seed(), long_dataset(), HashEvaluator(), VaryingReflector(), K4, run_dir=tmp_path,
                       resume=True)
    assert strip_volatile(resumed.to_dict()) == strip_volatile(clean.to_dict())


def test_accept_top_keeps_only_the_largest_gains_of_a_round(tmp_path):
    config = SearchConfig(max_iterations=12, minibatch_size=2, random_seed=5, parallel_proposals=4, accept_top=1)
    result = optimize(long_seed(), long_dataset(), HashEvaluator(), VaryingReflector(), config, run_dir=tmp_path)
    events = [e for e in RunRecord(tmp_path).events if e["kind"] in PROPOSAL_KINDS]
    for start in range(0, 12, 4):
        round_ = [e for e in events if start <= e["data"]["iteration"] < start + 4]
        accepted = [e for e in round_ if e["kind"] == "candidate_accepted"]
        losers = [e for e in round_ if e["data"]["reason"].startswith("round_acceptance")]
        assert len(accepted) <= 1
        gain = lambda e: e["data"]["child_sum"] - e["data"]["parent_sum"]  # noqa: E731
        assert all(gain(loser) > 0 and gain(loser) <= gain(accepted[0]) for loser in losers)
    assert result.candidate_count == 1 + sum(e["kind"] == "candidate_accepted" for e in events)


def test_same_parent_mode_uses_one_parent_per_round(tmp_path):
    config = SearchConfig(max_iterations=8, minibatch_size=2, random_seed=5, parallel_proposals=4,
                          proposal_parents="same")
    optimize(long_seed(), long_dataset(), HashEvaluator(), VaryingReflector(), config, run_dir=tmp_path)
    events = [e for e in RunRecord(tmp_path).events if e["kind"] in PROPOSAL_KINDS]
    for start in (0, 4):
        assert len({e["data"]["parent_id"] for e in events if start <= e["data"]["iteration"] < start + 4}) == 1


class Appending:

    def reflect(self, artifact, component, records):
        # Depends only on its inputs (required when reflections run concurrently).
        return {"text": f"{artifact.text} +{len(artifact.text) % 7}{records[0]['score']:.3f}"}


class Random01:
    def evaluate(self, artifact, cases, seed):
        from gepa_lab import Evaluation
        from gepa_lab.core.artifacts import artifact_id

        return [Evaluation(c.id, random.Random(f"{artifact_id(artifact)}|{c.id}|{seed}").random()) for c in cases]


@settings(max_examples=30, deadline=None)
@given(k=st.integers(1, 5), feedback=st.integers(1, 6), validation=st.integers(1, 5), holdout=st.integers(0, 4),
       slack=st.integers(0, 90), seed=st.integers(0, 100))
def test_rounds_never_exceed_the_metric_budget(k, feedback, validation, holdout, slack, seed):
    cases = lambda p, n: [Case(f"{p}{i}", f"t{p}{i}") for i in range(n)]  # noqa: E731
    ds = Dataset("d", "1", cases("f", feedback), cases("v", validation), cases("h", holdout))
    budget = validation + 2 * holdout + slack
    result = optimize(PromptArtifact("seed"), ds, Random01(), Appending(),
                      SearchConfig(max_metric_calls=budget, minibatch_size=2, random_seed=seed, parallel_proposals=k))
    assert result.metric_calls <= budget and result.stop_reason == "metric_budget"
