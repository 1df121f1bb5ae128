"""The optimizer's submission step with the real store (`StoreSubmitter`), `promotion.json`, and
monitoring: only eligible winners reach the store, the request carries parent / action / evidence,
a refused submission is an outcome (result returned and recorded), a failure is an error."""

from __future__ import annotations

import json
import subprocess
import sys
from dataclasses import replace
from pathlib import Path

import pytest
from helpers import IMPROVED_STEP, ImprovingReflector, ToyEvaluator, attach, cases, seed_spec

from gepa_lab import Dataset, Evaluation, SearchConfig, optimize
from gepa_lab.core.artifacts import artifact_dict, artifact_id
from gepa_lab.core.submission import Evidence, SubmissionRequest
from gepa_lab.revisions import service
from gepa_lab.revisions.errors import InvalidRequest, RevisionStoreError
from gepa_lab.revisions.monitor import monitor
from gepa_lab.revisions.store import RevisionStore
from gepa_lab.revisions.submitter import StoreSubmitter, active_seed
from gepa_lab.runs.record import load_experiment

HERE = Path(__file__).resolve().parent


class StepEvaluator:
    """Importable by `_target_` (monitoring rebuilds it from experiment.json): 0.8 with the
    improved step, 0.2 without; `invert` swaps them (an environment that drifted)."""

    def __init__(self, invert: bool = False):
        self.invert = invert

    def evaluate(self, artifact, cases, seed):
        improved = IMPROVED_STEP in artifact.steps
        return [Evaluation(case_id=c.id, score=0.2 if improved == self.invert else 0.8,
                           objectives={"cost_usd": 0.001}) for c in cases]


EVALUATOR_CONFIG = {"_target_": f"{__name__}.StepEvaluator", "invert": False}


def dataset(n=10):
    return Dataset("toy", "v1", cases("fb", n), cases("val", n), cases("ho", n))


def run(tmp_path, submitter, *, seed=None, improve=True, name="run", evaluator_config=None, iterations=1,
        trackers=()):
    ev = StepEvaluator(**{k: v for k, v in (evaluator_config or EVALUATOR_CONFIG).items() if k != "_target_"})
    if not improve:
        ev = ToyEvaluator(lambda a, c, s: 0.2)
    ev, rf = attach(ev, ImprovingReflector()) if isinstance(ev, ToyEvaluator) else (ev, ImprovingReflector())
    return optimize(seed or seed_spec(), dataset(), ev, rf, SearchConfig(max_iterations=iterations, minibatch_size=2),
                    submit=True, submitter=submitter, run_dir=tmp_path / name,
                    run_config={"evaluator": evaluator_config or EVALUATOR_CONFIG}, trackers=list(trackers))


def test_an_eligible_winner_is_submitted_with_full_evidence(tmp_path, url):
    result = run(tmp_path, StoreSubmitter(url))
    assert result.promotion_eligible
    assert result.submission_reason == "revision submitted with status pending_approval"
    assert result.revision["status"] == "pending_approval" and result.revision["action"] == "create"
    with RevisionStore(url) as store:
        rev = store.get(result.revision["revision_id"])
    assert rev.body == artifact_dict(result.best) and rev.artifact_hash == result.best_id
    assert (rev.source, rev.parent_revision_id, rev.action) == (f"optimization/gepa:{result.experiment_id}", None,
                                                               "create")
    assert rev.evidence == {
        "experiment_id": result.experiment_id, "dataset_id": "toy", "dataset_version": "v1",
        "digests": dataset().digests(), "baseline_score": pytest.approx(0.2), "candidate_score": pytest.approx(0.8),
        "delta": pytest.approx(0.6), "case_count": 10, "objectives": {"cost_usd": pytest.approx(0.001)},
        "mlflow_run_id": None, "seed_artifact_id": result.seed_id, "mlflow_run_url": None, "mlflow_ui_command": None}
    promotion = json.loads((tmp_path / "run" / "promotion.json").read_text())
    assert promotion == {"experiment_id": result.experiment_id, "decision": 1, "eligible": True,
                         "reason": "holdout requirements satisfied", "submit": True,
                         "submission_reason": result.submission_reason, "revision_id": rev.id,
                         "revision_status": "pending_approval", "artifact_id": result.best_id,
                         "holdout_delta": pytest.approx(0.6)}
    assert json.loads((tmp_path / "run" / "result.json").read_text())["revision"]["revision_id"] == rev.id


def test_an_ineligible_winner_never_reaches_the_store(tmp_path, url):
    result = run(tmp_path, StoreSubmitter(url), improve=False)
    assert not result.promotion_eligible and result.revision is None
    assert not (tmp_path / "revisions.db").exists()  # the store was not even opened
    promotion = json.loads((tmp_path / "run" / "promotion.json").read_text())
    assert (promotion["eligible"], promotion["revision_id"], promotion["revision_status"]) == (False, None, None)
    assert promotion["submission_reason"] == promotion["reason"] == "no accepted candidate improved validation"


def test_a_run_seeded_from_the_store_names_the_active_revision_as_parent(tmp_path, url, store):
    v1 = service.submit(store, _request(seed_spec())).revision
    service.approve(store, v1.id, "alice", publish_root=tmp_path / "published")
    seeded = active_seed("Benchmark Skill", url)  # what seed.from_store=... runs from
    assert artifact_id(seeded) == v1.artifact_hash
    result = run(tmp_path, StoreSubmitter(url), seed=seeded)
    rev = store.get(result.revision["revision_id"])
    assert (rev.parent_revision_id, rev.action, rev.version, rev.status) == (v1.id, "update", 2, "pending_approval")
    assert result.revision["parent_revision_id"] == v1.id


def test_a_hand_edited_seed_of_a_live_artifact_is_refused(tmp_path, url, store):
    v1 = service.submit(store, _request(seed_spec())).revision
    service.approve(store, v1.id, "alice", publish_root=tmp_path / "published")
    handmade = replace(seed_spec(), description="A hand-edited description.")
    result = run(tmp_path, StoreSubmitter(url), seed=handmade)
    assert result.promotion_eligible and result.revision is None
    assert result.submission_reason == (
        f"revision submission refused: artifact 'Benchmark Skill' already has an active revision ({v1.id[:12]}) "
        "and the run's seed is not it; start the run from it (seed.from_store='Benchmark Skill')")
    assert [r.id for r in store.revisions()] == [v1.id]


def test_a_stale_parent_is_refused_but_the_run_succeeds_and_is_recorded(tmp_path, url, store):
    v1 = service.submit(store, _request(seed_spec())).revision
    service.approve(store, v1.id, "alice", publish_root=tmp_path / "published")
    v2 = service.submit(store, _request(replace(seed_spec(), steps=(*seed_spec().steps, "Other.")),
                                        parent=v1.id)).revision
    service.approve(store, v2.id, "bob", publish_root=tmp_path / "published")
    before = store.revisions()
    result = run(tmp_path, StoreSubmitter(url))  # seeded with v1's body, which is now archived
    assert result.promotion_eligible and result.revision is None
    assert result.submission_reason == (
        f"revision submission refused: parent revision {v1.id[:12]} of 'Benchmark Skill' is no longer active "
        f"(active: {v2.id[:12]}); re-run from the active revision (seed.from_store='Benchmark Skill')")
    assert store.revisions() == before
    promotion = json.loads((tmp_path / "run" / "promotion.json").read_text())
    assert promotion["eligible"] and promotion["revision_id"] is None
    assert promotion["submission_reason"] == result.submission_reason


def test_a_store_that_cannot_be_opened_is_found_before_anything_is_paid(tmp_path):
    store_dir = tmp_path / "gone"
    store_dir.mkdir()
    submitter = StoreSubmitter(f"sqlite:///{store_dir / 'revisions.db'}")
    store_dir.rmdir()
    with pytest.raises(RevisionStoreError, match="does not exist"):
        run(tmp_path, submitter)
    assert not (tmp_path / "run").exists()  # nothing recorded, nothing paid


@pytest.mark.parametrize("kwargs, message", [
    ({"url": "revisions.db"}, "submitter.url 'revisions.db' is not a database URL"),
    ({"url": "sqlite://"}, "names no database file"),
    ({"url": "sqlite:///:memory:"}, "in-memory database"),
    ({"url": "sqlite:///no/such/dir/r.db"}, "does not exist"),
    ({"min_holdout_score": 1.5}, "submitter.min_holdout_score must be a number between 0 and 1"),
    ({"min_holdout_score": True}, "submitter.min_holdout_score"),
    ({"artifact_name": " "}, "submitter.artifact_name must be a non-empty name"),
])
def test_bad_submitter_config_is_a_value_error(tmp_path, monkeypatch, kwargs, message):
    monkeypatch.chdir(tmp_path)
    with pytest.raises(ValueError, match=message):
        StoreSubmitter(**kwargs)
    assert list(tmp_path.iterdir()) == []  # nothing created


def test_the_default_url_is_revisions_db_in_the_working_directory(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert StoreSubmitter().url == f"sqlite:///{tmp_path.resolve() / 'revisions.db'}"
    assert not (tmp_path / "revisions.db").exists()  # building it opens nothing


def test_active_seed_errors(tmp_path, url, store):
    from gepa_lab.core.errors import ConfigError, GepaLabError

    with pytest.raises(ConfigError, match=r"seed.from_store='Nope': no active revision .* \(artifacts: none\)"):
        active_seed("Nope", url)
    with pytest.raises(GepaLabError, match="no revision store at"):
        active_seed("Nope", f"sqlite:///{tmp_path / 'other.db'}")


# -- monitoring ---------------------------------------------------------------------------------
def _request(artifact, parent=None, candidate=0.8, baseline=0.2):
    ev = Evidence(experiment_id="manual", dataset_id="toy", dataset_version="v1", digests=dataset().digests(),
                  baseline_score=baseline, candidate_score=candidate, delta=candidate - baseline, case_count=10)
    return SubmissionRequest(source="manual", artifact=artifact_dict(artifact), action="update" if parent else "create",
                             parent_revision_id=parent, evidence=ev)


def test_monitor_compares_the_active_revision_with_its_parent_and_never_rolls_back(tmp_path, url, store):
    v1 = service.submit(store, _request(seed_spec())).revision
    service.approve(store, v1.id, "alice", publish_root=tmp_path / "published")
    result = run(tmp_path, StoreSubmitter(url))
    v2 = service.approve(store, result.revision["revision_id"], "alice", publish_root=tmp_path / "published").revision
    healthy = monitor(store, "Benchmark Skill", tmp_path / "run", seed=7)
    assert (healthy.revision_id, healthy.parent_revision_id, healthy.cases, healthy.seed) == (v2.id, v1.id, 10, 7)
    assert (healthy.active_mean, healthy.parent_mean, healthy.delta) == pytest.approx((0.8, 0.2, 0.6))
    # A run on the same frozen data whose evaluator now behaves differently: the active revision
    # regresses against its parent. The monitor records it and leaves the pointer alone.
    drifted = {**EVALUATOR_CONFIG, "invert": True}
    run(tmp_path, StoreSubmitter(url), name="drifted", evaluator_config=drifted, iterations=0)
    regressed = monitor(store, "Benchmark Skill", tmp_path / "drifted", actor="nightly")
    assert regressed.delta == pytest.approx(-0.6)
    assert store.active("Benchmark Skill").id == v2.id
    assert [m.delta for m in store.monitoring(v2.id)] == pytest.approx([0.6, -0.6])
    audit = [(e.action, e.actor) for e in store.audit("Benchmark Skill")][-2:]
    assert audit == [("monitored", "monitor"), ("monitored", "nightly")]


def test_monitor_refuses_other_data_and_runs_without_an_evaluator_config(tmp_path, url, store):
    v1 = service.submit(store, _request(seed_spec())).revision
    service.approve(store, v1.id, "alice", publish_root=tmp_path / "published")
    ev, rf = attach(ToyEvaluator(), ImprovingReflector())
    other = Dataset("toy", "v2", cases("fb", 10), cases("val", 10), cases("ho", 10))
    optimize(seed_spec(), other, ev, rf, SearchConfig(max_iterations=0), run_dir=tmp_path / "other")
    with pytest.raises(InvalidRequest, match="other split digests than revision"):
        monitor(store, "Benchmark Skill", tmp_path / "other")
    optimize(seed_spec(), dataset(), ev, rf, SearchConfig(max_iterations=0), run_dir=tmp_path / "library")
    with pytest.raises(InvalidRequest, match="recorded no evaluator `_target_`"):
        monitor(store, "Benchmark Skill", tmp_path / "library")
    with pytest.raises(InvalidRequest, match="cannot read the run record"):
        monitor(store, "Benchmark Skill", tmp_path / "nowhere")
    assert store.monitoring() == []


def test_load_experiment_reads_the_frozen_dataset_and_refuses_an_edited_record(tmp_path):
    ev, rf = attach(ToyEvaluator(), ImprovingReflector())
    optimize(seed_spec(), dataset(), ev, rf, SearchConfig(max_iterations=0), run_dir=tmp_path / "r",
             run_config={"evaluator": EVALUATOR_CONFIG})
    recorded = load_experiment(tmp_path / "r")
    assert recorded.dataset.digests() == dataset().digests() == recorded.digests
    assert recorded.config["evaluator"] == EVALUATOR_CONFIG
    path = tmp_path / "r" / "experiment.json"
    data = json.loads(path.read_text())
    data["dataset"]["holdout"][0]["input"] = "edited"
    path.write_text(json.dumps(data))
    with pytest.raises(ValueError, match=r"does not match its recorded digests \(holdout\)"):
        load_experiment(tmp_path / "r")


def test_the_default_submitter_costs_no_database_import():
    # Every run builds `submitter=store`, submit=false included: SQLAlchemy must wait for a submission.
    code = ("import sys; from gepa_lab.revisions.submitter import StoreSubmitter; StoreSubmitter(); "
            "print('sqlalchemy' in sys.modules)")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=HERE, timeout=60)
    assert done.returncode == 0 and done.stdout.strip() == "False", done.stderr


def test_the_revision_package_sits_beside_the_engine_not_inside_it():
    from test_architecture import ENGINE, GRAPH

    users = {m for m, deps in GRAPH.items() if not m.startswith("gepa_lab.revisions")
             and any(d.startswith("gepa_lab.revisions") for d in deps)}
    # The entry points that build the store submitter (cli also for seed.from_store); the engine
    # only sees the RevisionSubmitter protocol.
    assert users == {"gepa_lab.cli", "gepa_lab.dspy"}
    assert not any(ENGINE in deps for m, deps in GRAPH.items() if m.startswith("gepa_lab.revisions"))
