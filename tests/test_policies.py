"""Search policies (gepa_lab.search.policies): each alternative does what it says, the defaults
reproduce the classic loop, a resumed run is exact under every kind of policy, and a new policy
is one class plus one YAML file."""

from __future__ import annotations

import json
import os
import random
import subprocess
import sys
import textwrap
from collections import Counter
from dataclasses import replace
from pathlib import Path
from types import SimpleNamespace

import pytest
from conftest import ROOT, RunRecord, strip_volatile
from helpers_long import HashEvaluator, InterruptingReflector, VaryingReflector, long_dataset, long_seed

from gepa_lab import Case, Evaluation, PromptArtifact, SearchConfig, SkillSpec, optimize
from gepa_lab.search.policies import (
    AllComponents,
    AtLeast,
    ByMargin,
    CurrentBest,
    EpochShuffled,
    EpsilonGreedy,
    Hybrid,
    Instance,
    Merge,
    MostFailures,
    NoImprovement,
    Objective,
    Pareto,
    ScoreThreshold,
    StopFile,
    StrictImprovement,
    TopKPareto,
    Verdict,
)
from gepa_lab.search.policies.build import option_node
from gepa_lab.search.policies.sources import merged
from gepa_lab.search.policies.stop import SearchView
from gepa_lab.search.state import Candidate, Pool

P = "gepa_lab.search.policies."


def _candidate(cid: str, scores: list[float], parents: tuple[str, ...] = (), artifact=None, **objectives) -> Candidate:
    evals = tuple(Evaluation(f"v{i}", s, objectives={k: v[i] for k, v in objectives.items()})
                  for i, s in enumerate(scores))
    return Candidate(cid, artifact or PromptArtifact(cid), parents, (), None, 0, evals)


def _pool(*candidates: Candidate, frontier=None) -> Pool:
    pool = Pool(frontier)
    for cand in candidates:
        pool.add(cand)
    return pool


WORKED = (_candidate("A", [1, 1, 0.2]), _candidate("B", [0.2, 0.2, 1]), _candidate("C", [1, 1, 0]))


# -- parent selection ------------------------------------------------------------------------------
def test_pareto_draws_in_proportion_to_the_fronts_held():
    counts = Counter(Pareto().select(_pool(*WORKED), random.Random(i)).id for i in range(3000))
    assert counts["C"] == 0 and counts["A"] / 3000 == pytest.approx(2 / 3, abs=0.04)


def test_current_best_makes_no_draw():
    rng = random.Random(3)
    state = rng.getstate()
    assert CurrentBest().select(_pool(*WORKED), rng).id == "A" and rng.getstate() == state


def test_epsilon_greedy_explores_with_probability_epsilon():
    pool = _pool(*WORKED)
    assert {EpsilonGreedy(0.0).select(pool, random.Random(i)).id for i in range(200)} == {"A"}
    explored = Counter(EpsilonGreedy(1.0).select(pool, random.Random(i)).id for i in range(3000))
    assert set(explored) == {"A", "B", "C"} and explored["C"] / 3000 == pytest.approx(1 / 3, abs=0.04)
    with pytest.raises(ValueError, match="search.parent.epsilon must be a number between 0 and 1"):
        EpsilonGreedy(1.5)


def test_top_k_pareto_keeps_only_the_best_frontier_holders():
    pool = _pool(_candidate("A", [1, 0, 0]), _candidate("B", [0, 1, 0]), _candidate("D", [0.1, 0.1, 1]))
    assert {TopKPareto(k=1).select(pool, random.Random(i)).id for i in range(200)} == {"D"}
    assert {TopKPareto(k=3).select(pool, random.Random(i)).id for i in range(200)} == {"A", "B", "D"}


# -- minibatches -----------------------------------------------------------------------------------
def test_the_epoch_sampler_sees_every_case_once_per_epoch_and_never_twice_in_a_batch():
    cases = [Case(f"c{i}", f"task {i}") for i in range(7)]
    sampler, rng = EpochShuffled(), random.Random(1)
    batches = [sampler.sample(cases, 3, rng) for _ in range(7)]  # 21 draws = 3 epochs
    assert all(len({c.id for c in b}) == 3 for b in batches)
    assert Counter(c.id for b in batches for c in b) == Counter({c.id: 3 for c in cases})
    saved = sampler.state()
    again = EpochShuffled()
    again.restore(saved)
    state = rng.getstate()
    follow = sampler.sample(cases, 3, rng)
    rng.setstate(state)
    assert again.sample(cases, 3, rng) == follow


# -- components ------------------------------------------------------------------------------------
def _skill_candidate() -> Candidate:
    return Candidate("s", SkillSpec("S", "d", "w", ["one"]), (), (), None, 0, ())


def test_all_components_rewrites_every_component():
    assert AllComponents().choose(_skill_candidate(), ()) == ("steps", "pitfalls", "when_to_use", "description")


def test_most_failures_follows_the_feedback_and_falls_back_to_round_robin():
    cand = _skill_candidate()
    failing = [Evaluation("a", 0.2, feedback="the pitfalls miss pagination"),
               Evaluation("b", 0.4, feedback="pitfalls: no retry; when to use is vague"),
               Evaluation("c", 1.0, feedback="steps fine")]
    assert MostFailures().choose(cand, failing) == ("pitfalls",)
    assert cand.cursor == 0  # no round-robin move when the feedback decided
    assert MostFailures().choose(cand, [Evaluation("a", 0.0, feedback="wrong")]) == ("steps",)
    assert cand.cursor == 1


# -- acceptance ------------------------------------------------------------------------------------
def _evals(*scores: float, tokens: float = 10.0) -> list[Evaluation]:
    return [Evaluation(f"c{i}", s, objectives={"tokens": tokens}) for i, s in enumerate(scores)]


def test_acceptance_rules_give_their_verdict_with_its_reason_and_gain():
    assert StrictImprovement().judge(_evals(0.5, 0.5), _evals(0.5, 0.5)) == Verdict(
        False, "strict_minibatch_improvement", 0.0)
    assert StrictImprovement().judge(_evals(0.5, 0.5), _evals(0.5, 0.75)).gain == 0.25
    assert AtLeast().judge(_evals(0.5, 0.5), _evals(0.5, 0.5, tokens=8.0)) == Verdict(True, "minibatch_at_least", 0.0)
    assert not AtLeast().judge(_evals(0.5, 0.5), _evals(0.5, 0.5, tokens=12.0)).accepted
    assert AtLeast(tie_break=None).judge(_evals(0.5), _evals(0.5)).accepted
    assert not AtLeast().judge(_evals(0.5, 0.5), _evals(0.4, 0.5, tokens=1.0)).accepted
    assert not ByMargin(0.1).judge(_evals(0.5, 0.5), _evals(0.6, 0.5)).accepted
    verdict = ByMargin(0.1).judge(_evals(0.5, 0.5), _evals(0.8, 0.5))
    assert verdict.accepted and verdict.reason == "minibatch_margin" and verdict.gain == pytest.approx(0.15)


# -- stop conditions -------------------------------------------------------------------------------
def test_stop_conditions(tmp_path):
    seed, better = _candidate("seed", [0.5, 0.5]), _candidate("b", [0.9, 1.0])
    better.joined_after = 4
    pool = _pool(seed, better)
    assert NoImprovement(10).reason(SearchView(pool, 13, None)) is None
    assert NoImprovement(10).reason(SearchView(pool, 14, None)) == "no_improvement"
    assert ScoreThreshold(0.95).reason(SearchView(pool, 0, None)) == "score_threshold"
    assert ScoreThreshold(0.99).reason(SearchView(pool, 0, None)) is None
    assert StopFile().reason(SearchView(pool, 0, tmp_path)) is None
    (tmp_path / "STOP").touch()
    assert StopFile().reason(SearchView(pool, 0, tmp_path)) == "stop_file"


def test_a_stop_condition_ends_a_run_with_its_reason(tmp_path):
    config = SearchConfig(max_metric_calls=400, minibatch_size=2, random_seed=5,
                          stop={"no_improvement": {"_target_": P + "NoImprovement", "proposals": 3}})
    result = optimize(long_seed(), long_dataset(), HashEvaluator(), VaryingReflector(), config)
    assert result.stop_reason == "no_improvement" and result.baseline_holdout.cases == 4


# -- frontiers -------------------------------------------------------------------------------------
def test_objective_and_hybrid_frontiers():
    cheap = _candidate("cheap", [0.5, 0.5], tokens=[10, 10])
    good = _candidate("good", [0.9, 0.9], tokens=[50, 50])
    instance = _pool(cheap, good, frontier=Instance())
    assert instance.survivors() == {"good"}
    objective = _pool(cheap, good, frontier=Objective({"score": "max", "tokens": "min"}))
    assert objective.survivors() == {"cheap", "good"}
    assert Hybrid({"tokens": "min"}).values(cheap.validation) == [0.5, 0.5, -10.0]
    with pytest.raises(ValueError, match="must be 'max' or 'min'"):
        Objective({"tokens": "least"})


# -- merge -----------------------------------------------------------------------------------------
def test_a_merge_takes_each_descendant_s_own_change_from_the_common_ancestor():
    base = SkillSpec("S", "desc", "when", ["one"], ["p"])
    ancestor = Candidate("anc", base, (), (), None, 0, (Evaluation("v1", 0.1), Evaluation("v2", 0.1)))
    a = Candidate("a", SkillSpec("S", "desc", "when", ["one", "two"], ["p"]), ("anc",), (), 1, 0,
                  (Evaluation("v1", 0.9), Evaluation("v2", 0.2)))  # each holds one front
    b = Candidate("b", SkillSpec("S", "desc", "when", ["one"], ["p", "q"]), ("anc",), (), 2, 0,
                  (Evaluation("v1", 0.2), Evaluation("v2", 0.8)))
    child = merged(ancestor, a, b)
    assert child == SkillSpec("S", "desc", "when", ["one", "two"], ["p", "q"])
    assert merged(ancestor, a, a) is None  # nothing new from a second copy
    merge, planned = Merge(max_merges=2), _Round(_pool(ancestor, a, b))
    merge.plan(planned)
    assert planned.added == []  # nothing due yet
    merge.observe([SimpleNamespace(status="accepted", kind="reflection"),
                   SimpleNamespace(status="accepted", kind="merge")])  # merges make no merge due
    merge.plan(planned)
    [(parents, got, components)] = planned.added
    assert [p.id for p in parents] == ["a", "b"] and got == child and components == ("pitfalls",)
    assert merge.tried == 1 and merge.state()["due"] == 0
    merge.plan(planned)
    assert len(planned.added) == 1  # one attempt per accepted child


class _Round:
    """A round to plan in (the `Round` protocol), recording what a proposal source adds."""

    def __init__(self, pool: Pool):
        self.pool, self.rng, self.open, self.added = pool, random.Random(0), True, []

    def fits(self, parents: int) -> bool:
        return True

    def parent(self) -> Candidate:
        return self.pool.members[0]

    def add(self, parents, child=None, components=(), kind="reflection"):
        self.added.append((parents, child, components))


# -- whole runs ------------------------------------------------------------------------------------
SKIP = SearchConfig(max_iterations=12, minibatch_size=2, random_seed=5, skip_perfect_parents=True)


class _Perfect(HashEvaluator):
    def evaluate(self, artifact, cases, seed):
        return [Evaluation(ev.case_id, 1.0) for ev in super().evaluate(artifact, cases, seed)]


class _CountingReflector(VaryingReflector):
    calls = 0

    def reflect(self, artifact, component, records):
        self.calls += 1
        return super().reflect(artifact, component, records)


def test_a_parent_already_perfect_on_its_minibatch_is_skipped_and_counted():
    reflector = _CountingReflector()
    result = optimize(long_seed(), long_dataset(), _Perfect(), reflector, SKIP)
    assert reflector.calls == 0 and result.skipped_proposals == result.proposals == 12
    assert result.metric_calls == 4 + 12 * 2 + 4  # seed validation, parent minibatches, the seed on holdout


def test_skipping_perfect_parents_asks_the_acceptance_rule():
    """Under a rule that accepts a tie, a perfect parent can still have an accepted child: no skip."""
    reflector = _CountingReflector()
    at_least = replace(SKIP, acceptance={"_target_": P + "AtLeast", "tie_break": None})
    result = optimize(long_seed(), long_dataset(), _Perfect(), reflector, at_least)
    assert result.skipped_proposals == 0 and reflector.calls == 12


@pytest.mark.parametrize("option, rule", [("strict", "strict_minibatch_improvement"),
                                          ("at_least", "minibatch_at_least"), ("margin", "minibatch_margin")])
def test_an_accepted_child_s_reason_names_the_configured_rule(tmp_path, option, rule):
    config = SearchConfig(max_iterations=10, minibatch_size=2, random_seed=5,
                          acceptance=option_node("acceptance", option))
    optimize(long_seed(), long_dataset(), HashEvaluator(), VaryingReflector(), config, run_dir=tmp_path)
    judged = [p for p in RunRecord(tmp_path).proposals if p["status"] in ("accepted", "rejected")]
    accepted = [p["reason"] for p in judged if p["status"] == "accepted"]
    assert accepted and all(reason.startswith(f"{rule}: minibatch gain +") for reason in accepted), accepted
    assert all(p["reason"] == rule for p in judged if p["status"] == "rejected")


EVERY_KIND = SearchConfig(
    max_iterations=14, minibatch_size=2, random_seed=5, parallel_proposals=2,
    parent={"_target_": P + "EpsilonGreedy", "epsilon": 0.3},
    batch={"_target_": P + "EpochShuffled"},
    component={"_target_": P + "MostFailures"},
    acceptance={"_target_": P + "AtLeast", "tie_break": "cost_usd"},
    frontier={"_target_": P + "Hybrid", "objectives": {"cost_usd": "min"}},
    merge={"_target_": P + "Merge", "max_merges": 4},
    stop={"threshold": {"_target_": P + "ScoreThreshold", "threshold": 0.999}},
)




@pytest.mark.parametrize("kill_at", [2, 5, 9])
def test_a_resume_is_exact_under_non_default_policies_of_every_kind(tmp_path, kill_at):
    clean = optimize(long_seed(), long_dataset(), HashEvaluator(), VaryingReflector(), EVERY_KIND,
                     run_dir=tmp_path / "clean")
    with pytest.raises(KeyboardInterrupt):
        optimize(long_seed(), long_dataset(), HashEvaluator(), InterruptingReflector(kill_at), EVERY_KIND,
                 run_dir=tmp_path / "run")
    resumed = optimize(long_seed(), long_dataset(), HashEvaluator(), VaryingReflector(), EVERY_KIND,
                       run_dir=tmp_path / "run", resume=True)
    assert strip_volatile(resumed.to_dict()) == strip_volatile(clean.to_dict())
    assert RunRecord(tmp_path / "run").comparable() == RunRecord(tmp_path / "clean").comparable()
    merges = [p for p in RunRecord(tmp_path / "clean").proposals if p["kind"] == "merge"]
    judged = [p for p in merges if p["status"] in ("accepted", "rejected")]  # by the configured rule, too
    assert judged and all(p["reason"].startswith("minibatch_at_least") for p in judged)


KILLABLE = Path(__file__).parent / "scripts" / "killable_run.py"
BANDIT = SearchConfig(max_iterations=8, minibatch_size=2, random_seed=5, parent={"_target_": "helpers_long.BanditParent"})


def test_a_stateful_parent_selector_resumes_exactly_after_sigkill(tmp_path):
    """A bandit parent selector (helpers_long.BanditParent: one class, one config value) learns from
    every round's outcomes; SIGKILLed mid-search and resumed, the run is the uninterrupted one."""
    clean = optimize(long_seed(), long_dataset(), HashEvaluator(), VaryingReflector(), BANDIT, run_dir=tmp_path / "clean")
    run_dir = tmp_path / "run"
    for kill, resume in ((41, []), (0, ["--resume"])):  # killed before its 41st paid evaluation
        done = subprocess.run([sys.executable, str(KILLABLE), str(run_dir), str(tmp_path / "paid.jsonl"), str(kill),
                               "--parent", "helpers_long.BanditParent", *resume],
                              capture_output=True, text=True, timeout=120)
        assert done.returncode == (-9 if kill else 0), done.stderr
    assert strip_volatile(json.loads((run_dir / "result.json").read_text())) == strip_volatile(
        json.loads(json.dumps(clean.to_dict())))
    assert RunRecord(run_dir).comparable() == RunRecord(tmp_path / "clean").comparable()
    parents = [p["parent_id"] for p in RunRecord(run_dir).proposals]
    assert len(set(parents)) > 1  # it does choose: a selector that always took the seed would prove nothing
    # The same selector without its state in the snapshots resumes into other choices.
    forgetful = replace(BANDIT, parent={"_target_": "helpers_long.ForgetfulBandit"})
    with pytest.raises(KeyboardInterrupt):
        optimize(long_seed(), long_dataset(), HashEvaluator(), InterruptingReflector(5), forgetful,
                 run_dir=tmp_path / "forgetful")
    optimize(long_seed(), long_dataset(), HashEvaluator(), VaryingReflector(), forgetful,
             run_dir=tmp_path / "forgetful", resume=True)
    assert [p["parent_id"] for p in RunRecord(tmp_path / "forgetful").proposals] != parents


PLUGIN = '''
class Youngest:
    """Always the newest pool member (a new parent selector: one class, one YAML file)."""

    draws = "none"

    def select(self, pool, rng):
        return pool.members[-1]
'''


@pytest.mark.slow
def test_a_new_policy_is_one_class_and_one_yaml_file(tmp_path):
    (tmp_path / "my_policies.py").write_text(textwrap.dedent(PLUGIN))
    conf = tmp_path / "conf" / "search" / "parent"
    conf.mkdir(parents=True)
    (conf / "youngest.yaml").write_text("_target_: my_policies.Youngest\n")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(tmp_path), str(ROOT)])}
    done = subprocess.run([sys.executable, "-m", "gepa_lab", "experiment=recipe", "tracking=none", "progress=off",
                           f"hydra.searchpath=[file://{tmp_path / 'conf'}]", "search/parent=youngest",
                           "search.max_iterations=6"], cwd=tmp_path, env=env, capture_output=True, text=True,
                          timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    run_dir = Path(next(x for x in done.stdout.splitlines() if x.strip().startswith("record")).split()[1])
    record = RunRecord(run_dir)
    assert record.json("experiment.json")["identity"]["search"]["parent"] == {"_target_": "my_policies.Youngest"}
    accepted, parents = [], []
    for p in record.proposals:  # every proposal's parent is the newest pool member at the time
        parents.append(p["parent_id"])
        assert p["parent_id"] == (accepted[-1] if accepted else record.candidates[0]["id"])
        if p["status"] == "accepted":
            accepted.append(p["candidate_id"])
    assert accepted
