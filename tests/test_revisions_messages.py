"""What the revision store says is true (issue: "honest messages"): a winner identical to another
run's revision is reported as that revision, with who decided what and when, never as this run's
result; names stay true after a rollback; `list` says what its holdout figures compare; monitor
results show in `show` and the text audit; an empty store is not an error; hints name the flags
of the command at hand; no "-0.0000"; short id prefixes say how many characters are needed.
Each error message is checked against its row in docs/errors.md (`documented`)."""

from __future__ import annotations

import re

import pytest
from conftest import ROOT

from gepa_lab.core.artifacts import SkillSpec, artifact_from_dict
from gepa_lab.core.errors import ConfigError
from gepa_lab.core.submission import Evidence, SubmissionRefused, SubmissionRequest
from gepa_lab.revisions import service
from gepa_lab.revisions.cli import main
from gepa_lab.revisions.errors import AlreadySubmitted, RevisionNotFound, RevisionStoreError
from gepa_lab.revisions.store import MonitoringRow, RevisionStore, fmt_score, iso, utcnow
from gepa_lab.revisions.submitter import StoreSubmitter, active_seed

NAME = "Weather Monitor"
ERRORS = (ROOT / "docs" / "errors.md").read_text(encoding="utf-8")


def documented(message: str) -> None:
    """`message` (with or without its `gepa_lab: error: ` / `gepa_lab.revisions: error: ` prefix)
    matches a row of docs/errors.md's revision-store table (… stands for any text)."""
    message = re.sub(r"^gepa_lab(\.revisions)?: error: ", "", message)
    table = ERRORS.split("## The revision store")[1]
    patterns = [m.group(1) for m in re.finditer(r"^\|[^|]*\| [^|]* \| `(.+?)` \|", table, re.M)]
    assert patterns, "no rows in docs/errors.md's revision-store table"
    regexes = [re.escape(p).replace("…", ".+") for p in patterns]
    assert any(re.fullmatch(r, message) for r in regexes), f"not in docs/errors.md: {message}"


def body(*steps: str) -> dict:
    return {"kind": "skill", "name": NAME, "description": "Reports the weather of a city.",
            "when_to_use": "Use when a task asks for current weather.",
            "steps": ["Call get_weather for the city.", "Write the report.", *steps], "pitfalls": []}


def request(artifact, parent=None, experiment="exp-1", candidate=0.9, baseline=0.7):
    ev = Evidence(experiment, "d", "v1", {"holdout": "h"}, baseline, candidate, candidate - baseline, 10)
    return SubmissionRequest(f"optimization/gepa:{experiment}", artifact, "update" if parent else "create", parent, ev)


@pytest.fixture
def cwd(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    return tmp_path


def cli(capsys, *args):
    code = main(list(args))
    out, err = capsys.readouterr()
    return code, out, err


# -- resubmissions ------------------------------------------------------------------------------
def test_another_runs_rejected_winner_is_refused_saying_who_rejected_it_when_and_why(store, url, tmp_path):
    v1 = service.submit(store, request(body())).revision
    service.approve(store, v1.id, "alice", publish_root=tmp_path / "p")
    v2 = service.submit(store, request(body("Add a forecast."), v1.id, "exp-2", candidate=0.95)).revision
    rejected = service.reject(store, v2.id, "bob", "the forecast is not asked for").revision
    before = (store.revisions(), store.audit())
    with pytest.raises(AlreadySubmitted) as refused:  # a later run, same parent, same winner
        StoreSubmitter(url).submit(request(body("Add a forecast."), v1.id, "exp-9", candidate=0.91).to_dict())
    message = str(refused.value)
    assert message == (
        f"this run's winner was already submitted as revision {v2.id[:12]} ({NAME} v2) by optimization/gepa:exp-2 at "
        f"{iso(v2.submitted_at)}, and was rejected by bob at {iso(rejected.decided_at)}: the forecast is not asked "
        "for; nothing new was stored")
    assert isinstance(refused.value, SubmissionRefused)  # an outcome for the run (exit 0), not an error
    assert "0.95" not in message and "0.91" not in message  # no other run's score presented as this one's
    assert (store.revisions(), store.audit()) == before  # nothing stored, nothing audited
    documented(f"revision submission refused: {message}")


def test_an_archived_or_active_winner_is_refused_with_its_history(store, tmp_path):
    v1 = service.submit(store, request(body())).revision
    service.approve(store, v1.id, "alice", publish_root=tmp_path / "p")
    v2 = service.submit(store, request(body("Check units."), v1.id, "exp-2")).revision
    service.approve(store, v2.id, "bob", publish_root=tmp_path / "p")
    with pytest.raises(AlreadySubmitted) as archived:  # a late run seeded from v0's parent: v1's body again
        service.submit(store, request(body(), None, "exp-3"))
    v1 = store.get(v1.id)
    assert str(archived.value) == (
        f"this run's winner was already submitted as revision {v1.id[:12]} ({NAME} v1) by optimization/gepa:exp-1 at "
        f"{iso(v1.submitted_at)}, and was approved by alice at {iso(v1.decided_at)}, then archived by bob at "
        f"{iso(v1.status_at)} (replaced by {v2.id[:12]} (v2)); to bring it back: python -m gepa_lab.revisions "
        f"rollback '{NAME}' --to {v1.id[:12]} --actor NAME; nothing new was stored")
    with pytest.raises(AlreadySubmitted, match=r"and is the active revision \(approved by bob at "):
        service.submit(store, request(body("Check units."), v1.id, "exp-4"))
    documented(f"revision submission refused: {archived.value}")


def test_a_pending_winner_of_another_run_comes_back_as_that_runs_not_this_ones(store, url):
    first = StoreSubmitter(url).submit(request(body(), candidate=0.85).to_dict())
    again = StoreSubmitter(url).submit(request(body(), experiment="exp-2", candidate=0.97).to_dict())
    v1 = store.get(first["revision_id"])
    assert (again["revision_id"], again["status"], again["resubmitted"]) == (v1.id, "pending_approval", True)
    assert again["reasons"] == [
        f"resubmission: identical to revision {v1.id[:12]} (v1) submitted by optimization/gepa:exp-1 at "
        f"{iso(v1.submitted_at)}; its evidence (holdout 0.8500, delta +0.1500) is that run's, not this one's"]
    own = StoreSubmitter(url).submit(request(body(), candidate=0.85).to_dict())  # the same run, retried
    assert (own["revision_id"], own["resubmitted"], own["reasons"]) == (v1.id, True, [])
    assert [(e.action, e.detail["experiment_id"]) for e in store.audit() if e.action == "resubmitted"] == [
        ("resubmitted", "exp-2"), ("resubmitted", "exp-1")]


def test_a_pending_eval_resubmission_says_whose_gate_verdict_it_is(store):
    low = service.submit(store, request(body(), candidate=0.75)).revision
    again = service.submit(store, request(body(), experiment="exp-2", candidate=0.99)).to_dict()
    assert again["status"] == "pending_eval" and again["reasons"][0].startswith(
        f"resubmission: identical to revision {low.id[:12]} (v1)")
    assert again["reasons"][1] == "holdout score 0.7500 is below 0.8000; held for more evaluation"


# -- names after decisions ----------------------------------------------------------------------
def test_names_stay_true_after_a_rollback(capsys, cwd):
    with RevisionStore("sqlite:///revisions.db") as store:
        v1 = service.submit(store, request(body())).revision
        service.approve(store, v1.id, "alice", "first", publish_root="published")
        v2 = service.submit(store, request(body("Check units."), v1.id, "exp-2")).revision
        service.approve(store, v2.id, "bob", publish_root="published")
        service.rollback(store, NAME, "carol", "units broke")
        v1, v2 = store.get(v1.id), store.get(v2.id)
    assert (v1.status, v1.decided_by, v1.decision_comment, v1.status_by) == ("active", "alice", "first", "carol")
    assert (v2.status, v2.decided_by, v2.status_by) == ("archived", "bob", "carol")
    code, out, _ = cli(capsys, "list")
    rows = {line.split()[0]: line.split() for line in out.splitlines()[1:-1]}
    assert rows[v1.id[:12]][-1] == "alice" and rows[v2.id[:12]][-1] == "bob"  # DECIDED BY: the approvers
    code, out, _ = cli(capsys, "show", v1.id[:8])
    assert f"status     active by carol at {v1.status_at:%Y-%m-%d %H:%M} UTC: re-activated by rollback, replacing " \
           f"{v2.id[:12]} (v2)" in out
    assert f"decided    by alice at {v1.decided_at:%Y-%m-%d %H:%M} UTC: first" in out
    code, _, err = cli(capsys, "approve", v2.id, "--actor", "dave")
    line = err.strip()
    assert code == 1 and line == (
        f"gepa_lab.revisions: error: revision {v2.id[:12]} ({NAME} v2) is already archived by carol at "
        f"{iso(v2.status_at)} (replaced by {v1.id[:12]} (v1)); it cannot be approved")
    documented(line)
    meta = (cwd / "published" / "weather-monitor" / "revision.json").read_text()
    assert '"decided_by": "alice"' in meta and '"activated_by": "carol"' in meta


# -- list, show, audit ----------------------------------------------------------------------------
def test_list_says_what_its_holdout_figures_compare_and_never_prints_minus_zero(capsys, cwd):
    with RevisionStore("sqlite:///revisions.db") as store:
        v1 = service.submit(store, request(body(), candidate=0.9, baseline=0.9 + 4e-9)).revision
    assert v1.evidence["delta"] < 0
    code, out, _ = cli(capsys, "list")
    header, row, note = out.splitlines()
    assert "HOLDOUT" in header and "0.9000->0.9000" in row and "+0.0000" in row and "-0.0000" not in out
    assert note == ("(HOLDOUT is each run's seed -> winner on that run's own holdout draw (DELTA is that pair's "
                    "difference): compare deltas, or `monitor` revisions on one seed, not scores across rows)")
    code, out, _ = cli(capsys, "show", v1.id)
    assert "holdout 0.9000 -> 0.9000 (delta +0.0000, 10 cases)" in out and "-0.0000" not in out


@pytest.mark.parametrize("value, signed, text", [
    (-1e-9, True, "+0.0000"), (-0.0, False, "0.0000"), (-0.00004, True, "+0.0000"), (-0.00005, True, "-0.0001"),
    (0.12345, True, "+0.1235"), (None, True, "-"), (True, False, "-")])
def test_fmt_score(value, signed, text):
    assert fmt_score(value, signed=signed) == text


def test_monitor_results_show_in_show_and_in_the_text_audit(capsys, cwd):
    with RevisionStore("sqlite:///revisions.db") as store:
        v1 = service.submit(store, request(body())).revision
        service.approve(store, v1.id, "alice", publish_root="published")
        v2 = service.submit(store, request(body("Check units."), v1.id, "exp-2")).revision
        service.approve(store, v2.id, "bob", publish_root="published")
        with store.transaction() as session:  # what `monitor` records (its own test runs the evaluator)
            row = MonitoringRow(at=utcnow(), revision_id=v2.id, parent_revision_id=v1.id, experiment_id="exp-2",
                                run_dir="/runs/x", split="holdout", seed=3, cases=20, active_mean=0.81234,
                                parent_mean=0.81234 + 3e-9, delta=-3e-9, evaluator="E", actor="nightly")
            session.add(row)
            session.flush()
            store.audit_entry(session, artifact=NAME, revision_id=v2.id, action="monitored", actor="nightly",
                              detail={"split": "holdout", "seed": 3, "cases": 20, "active_mean": 0.81234,
                                      "parent_mean": 0.81234 + 3e-9, "delta": -3e-9})
    expected = "holdout seed 3, 20 cases: active 0.8123 vs parent 0.8123 (delta +0.0000)"
    code, out, _ = cli(capsys, "show", v2.id)
    assert f"UTC by nightly: {expected}" in out and out.count("monitored  ") == 1
    code, out, _ = cli(capsys, "audit")
    assert re.search(rf"monitored\s+{NAME}\s+{v2.id[:12]}\s+nightly\s+{re.escape(expected)}$", out.splitlines()[-1])
    code, out, _ = cli(capsys, "show", v2.id, "--json")
    assert '"seed": 3' in out and '"monitoring"' in out


# -- empty stores, hints, prefixes ----------------------------------------------------------------
def test_an_empty_store_is_not_an_error(capsys, cwd):
    code, out, err = cli(capsys, "list")
    assert (code, err) == (0, "")
    assert out.strip() == (f"no revisions yet: no revision store at sqlite:///{cwd.resolve() / 'revisions.db'} (the "
                           "first run with submit=true creates it)")
    assert cli(capsys, "list", "--json")[:2] == (0, "[]\n")
    assert cli(capsys, "audit")[0] == 0
    assert not (cwd / "revisions.db").exists()
    code, _, err = cli(capsys, "show", "abcd")
    assert code == 1
    documented(err.strip())


def test_a_short_prefix_says_how_many_characters_it_needs(capsys, store):
    v1 = service.submit(store, request(body())).revision
    with pytest.raises(RevisionNotFound) as short:
        store.get(v1.id[:3])
    assert str(short.value) == (f"revision prefix {v1.id[:3]!r} is too short: give at least 4 characters of the id, "
                                "or <artifact>@v<version>")
    assert store.get(v1.id[:4]).id == v1.id
    documented(f"gepa_lab.revisions: error: {short.value}")


def test_seed_from_the_store_hints_at_the_run_settings(tmp_path, url):
    missing = f"sqlite:///{tmp_path / 'none.db'}"
    with pytest.raises(RevisionStoreError) as no_store:
        active_seed(NAME, missing)
    assert str(no_store.value) == (
        f"seed.from_store='{NAME}': no revision store at {missing}; point seed.store=URL or submitter.url=URL at the "
        "team's store (or use seed.prefer_store=true to start from the seed file while it has none)")
    assert "--store" not in str(no_store.value)
    documented(f"gepa_lab: error: {no_store.value}")
    RevisionStore(url).close()
    with pytest.raises(ConfigError) as none_active:
        active_seed(NAME, url)
    documented(f"gepa_lab: error: {none_active.value}")


def test_prefer_store_takes_the_active_revision_else_the_seed_file(tmp_path, url):
    seed_file = artifact_from_dict(body())
    missing = f"sqlite:///{tmp_path / 'none.db'}"
    assert active_seed(None, missing, fallback=seed_file) is seed_file  # no store yet
    assert not (tmp_path / "none.db").exists()
    with RevisionStore(url) as store:
        assert active_seed(None, url, fallback=seed_file) is seed_file  # a store without that artifact
        v1 = service.submit(store, request(body())).revision
        assert active_seed(None, url, fallback=seed_file) is seed_file  # pending is not active
        service.approve(store, v1.id, "alice", publish_root=tmp_path / "p")
        v2 = service.submit(store, request(body("Check units."), v1.id, "exp-2")).revision
        service.approve(store, v2.id, "bob", publish_root=tmp_path / "p")
    seeded = active_seed(None, url, fallback=seed_file)
    assert isinstance(seeded, SkillSpec) and seeded.steps[-1] == "Check units."
    submitter = StoreSubmitter(url)  # seed.store unset: the submitter's store
    assert active_seed(None, None, submitter, fallback=seed_file) == seeded
    nameless = artifact_from_dict({"kind": "prompt", "text": "Answer briefly."})
    with pytest.raises(ConfigError) as no_name:
        active_seed(None, url, fallback=nameless)
    documented(f"gepa_lab: error: {no_name.value}")
    assert active_seed(None, url, StoreSubmitter(url, artifact_name="Briefly"), fallback=nameless) is nameless


def test_a_missing_driver_names_psycopg_3(tmp_path):
    with pytest.raises(RevisionStoreError) as missing:
        RevisionStore("postgresql+nosuchdriver://gepa@db.internal/revisions")
    assert str(missing.value).endswith("(postgresql:// uses psycopg 3: pip install 'psycopg[binary]')")
    documented(f"gepa_lab.revisions: error: {missing.value}")
