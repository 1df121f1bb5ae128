"""`python -m gepa_lab.revisions` (in process, through `main`) and the CI flow end to end
(subprocesses): `submit=true` -> pending_approval -> CLI approve -> SKILL.md equals the winner."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from datetime import timedelta
from pathlib import Path

import pytest
from test_revisions_messages import documented

from gepa_lab.core.artifacts import artifact_from_dict
from gepa_lab.core.submission import Evidence, SubmissionRequest
from gepa_lab.revisions import service
from gepa_lab.revisions.cli import main
from gepa_lab.revisions.store import RevisionStore, utcnow
from gepa_lab.revisions.submitter import StoreSubmitter
from gepa_lab.tracking import mlflow_links

NAME = "Weather Monitor"


def body(*extra: str, name: str = NAME) -> dict:
    return {"kind": "skill", "name": name, "description": "Reports the weather of a city.",
            "when_to_use": "Use when a task asks for current weather.",
            "steps": ["Call get_weather for the city.", "Write the report with write_file.", *extra], "pitfalls": []}


def submit(store, artifact, parent=None, candidate=0.9):
    ev = Evidence("exp", "d", "v1", {"holdout": "h"}, 0.7, candidate, candidate - 0.7, 10)
    req = SubmissionRequest("optimization/gepa:exp", artifact, "update" if parent else "create", parent, ev)
    return service.submit(store, req).revision


@pytest.fixture
def cwd(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    return tmp_path


@pytest.fixture
def store(cwd):
    with RevisionStore("sqlite:///revisions.db") as s:  # the CLI's default store, in the working directory
        yield s


def cli(capsys, *args):
    code = main(list(args))
    out, err = capsys.readouterr()
    return code, out, err


def test_list_show_diff_and_json(capsys, store):
    v1 = submit(store, body())
    service.approve(store, v1.id, "alice", publish_root="published")
    v2 = submit(store, body("Convert units to metric."), parent=v1.id)
    code, out, _ = cli(capsys, "list")
    assert code == 0
    lines = out.splitlines()
    assert lines[0].split()[:4] == ["REVISION", "ARTIFACT", "VER", "STATUS"]
    assert v1.id[:12] in lines[1] and "active" in lines[1] and "alice" in lines[1]
    assert v2.id[:12] in lines[2] and "pending_approval" in lines[2] and "0.9000" in lines[2]
    code, out, _ = cli(capsys, "list", "--status", "pending_approval", "--json")
    assert [r["id"] for r in json.loads(out)] == [v2.id]
    code, out, _ = cli(capsys, "show", v2.id[:10])
    assert f"revision   {v2.id}" in out and f"parent     {v1.id}" in out and "--- SKILL.md" in out
    assert "gate       SafetyGate passed" in out and "3. Convert units to metric." in out
    code, out, _ = cli(capsys, "diff", v2.id)
    assert code == 0 and "+3. Convert units to metric." in out and out.startswith(f"--- {v1.id[:12]}/SKILL.md")
    # A first revision has no parent: it is compared with the seed file its run started from.
    code, _, err = cli(capsys, "diff", f"{NAME}@v1")
    documented(err.strip())
    assert code == 2 and err.strip() == (f"gepa_lab.revisions: error: revision {v1.id[:12]} is {NAME}'s first: it has "
                                         "no parent; compare it with the seed file its run started from: --against "
                                         "<seed file>")
    seed = Path("seed_skill.json")
    seed.write_text(json.dumps({**body(), "steps": ["Call get_weather for the city."]}))
    code, out, _ = cli(capsys, "diff", f"{NAME}@v1", "--against", str(seed), "--json")
    assert code == 0 and json.loads(out)["from"] == "seed_skill.json"
    assert "+2. Write the report" in json.loads(out)["diff"] and "# Weather Monitor" not in json.loads(out)["diff"]
    seed.write_text("{not json")
    code, _, err = cli(capsys, "diff", f"{NAME}@v1", "--against", str(seed))
    assert code == 2 and "--against seed_skill.json: not a seed artifact file" in err
    documented(err.strip())


def test_approve_prints_the_published_path_then_rollback_and_audit(capsys, store, cwd):
    v1 = submit(store, body())
    code, out, _ = cli(capsys, "approve", v1.id, "--actor", "alice", "--comment", "ship it")
    published = (cwd / "published" / "weather-monitor" / "SKILL.md").resolve()
    assert code == 0 and f"published {published}" in out.splitlines()
    assert published.read_text() == artifact_from_dict(body()).render_markdown()  # type: ignore[attr-defined]
    v2 = submit(store, body("Convert units."), parent=v1.id)
    code, out, _ = cli(capsys, "approve", v2.id[:8], "--actor", "bob", "--publish-dir", "agents/skills", "--json")
    data = json.loads(out)
    assert data["archived"] == v1.id
    assert data["published"] == str((cwd / "agents/skills/weather-monitor/SKILL.md").resolve())
    assert "Convert units." in Path(data["published"]).read_text()
    code, out, _ = cli(capsys, "rollback", NAME, "--actor", "carol", "--comment", "bad week", "--publish-dir",
                       "agents/skills")
    assert code == 0 and out.startswith(f"re-activated {v1.id[:12]}") and f"archived {v2.id[:12]}" in out
    assert "Convert units." not in (cwd / "agents/skills/weather-monitor/SKILL.md").read_text()
    code, out, _ = cli(capsys, "audit", "--artifact", NAME)
    rows = [line.split() for line in out.splitlines()[1:]]
    assert [r[2] for r in rows] == ["submitted", "approved", "submitted", "archived", "approved", "archived",
                                    "rolled_back"]
    assert "ship it" in out and "bad week" in out
    code, out, _ = cli(capsys, "audit", "--revision", v2.id, "--limit", "1", "--json")
    assert [(e["action"], e["actor"]) for e in json.loads(out)] == [("archived", "carol")]


def test_reject_and_decision_errors(capsys, store):
    v1 = submit(store, body())
    code, out, _ = cli(capsys, "reject", v1.id, "--actor", "alice", "--comment", "no")
    assert code == 0 and out.startswith(f"rejected {v1.id[:12]}")
    code, _, err = cli(capsys, "approve", v1.id, "--actor", "bob")
    assert code == 1 and err.strip().splitlines() == [
        f"gepa_lab.revisions: error: revision {v1.id[:12]} (Weather Monitor v1) is already rejected by alice at "
        f"{store.get(v1.id).to_dict()['decided_at']} (no); it cannot be approved"]
    assert cli(capsys, "show", "nope")[0] == 1
    code, _, err = cli(capsys, "approve", v1.id, "--actor", "auto-expire")
    assert code == 2 and "reserved for automatic decisions" in err


def test_stale_approval_exits_1_and_leaves_the_revision_rejected(capsys, store, cwd):
    a, b = submit(store, body("A")), submit(store, body("B"))
    assert cli(capsys, "approve", a.id, "--actor", "alice")[0] == 0
    code, _, err = cli(capsys, "approve", b.id, "--actor", "alice")
    assert code == 1 and "is now rejected: stale parent" in err and len(err.strip().splitlines()) == 1
    assert store.get(b.id).status == "rejected"
    assert "1. Call get_weather" in (cwd / "published/weather-monitor/SKILL.md").read_text()
    assert "B" not in (cwd / "published/weather-monitor/SKILL.md").read_text().split("## Steps")[1]


def test_sweep_is_opt_in(capsys, store, monkeypatch):
    v1 = submit(store, body())
    code, _, err = cli(capsys, "sweep")
    assert code == 2 and "off by default; pass --approval-timeout" in err
    assert store.get(v1.id).status == "pending_approval"
    code, out, _ = cli(capsys, "sweep", "--approval-timeout", "72h")
    assert code == 0 and out.strip() == "nothing pending past the timeout"
    monkeypatch.setattr(service, "utcnow", lambda: utcnow() + timedelta(days=4))
    code, out, _ = cli(capsys, "sweep", "--approval-timeout", "3d", "--json")
    assert [(o["revision_id"], o["outcome"]) for o in json.loads(out)] == [(v1.id, "approved")]
    assert store.get(v1.id).decided_by == "auto-expire"


@pytest.mark.parametrize("args, code, message", [
    (["approve", "x"], 2, "the following arguments are required: --actor"),
    (["sweep", "--approval-timeout", "soon"], 2, "'soon' is not a duration"),
    (["sweep", "--approval-timeout", "0h"], 2, "the approval timeout must be positive"),
    (["sweep", "--approval-timeout", "99999999999d"], 2, "the approval timeout must be at most 3650d"),  # overflows
    (["sweep", "--approval-timeout", "3651d"], 2, "the approval timeout must be at most 3650d"),
    (["list", "--status", "live"], 2, "invalid choice: 'live'"),
    (["frobnicate"], 2, "invalid choice: 'frobnicate'"),
    (["show", "abcd", "--store", "sqlite:///elsewhere.db"], 1, "no revision store at"),
    (["list", "--store", "not a url"], 1, "is not a database URL"),
    (["audit", "--limit", "0"], 2, "--limit must be at least 1"),
])
def test_bad_arguments_are_one_line(capsys, store, args, code, message):
    got, _, err = cli(capsys, *args)
    assert got == code
    assert len(err.strip().splitlines()) == 1 and message in err, err
    assert not Path("elsewhere.db").exists()


@pytest.mark.parametrize("unwritable", ["a file", "read-only"])
def test_a_publish_dir_that_cannot_be_written_changes_nothing(capsys, store, cwd, monkeypatch, unwritable):
    """Agents load the published directory: a decision that cannot be published is not taken (the
    store stays as it was, the revision can be approved once the directory is fixed)."""
    if unwritable == "read-only" and os.geteuid() == 0:
        pytest.skip("root writes into a read-only directory (the 'a file' case fails for root too)")
    bad = cwd / "bad"
    bad.write_text("not a directory\n") if unwritable == "a file" else bad.mkdir(mode=0o555)
    v1 = submit(store, body())
    service.approve(store, v1.id, "alice", publish_root="published")
    v2 = submit(store, body("Convert units."), parent=v1.id)
    v3 = submit(store, body("Add a forecast."), parent=v1.id)
    monkeypatch.setattr(service, "utcnow", lambda: utcnow() + timedelta(days=4))
    before = (store.revisions(), store.audit())
    for args, still in ((["approve", v2.id, "--actor", "bob"], "pending_approval"),
                        (["sweep", "--approval-timeout", "3d"], "pending_approval"),
                        (["rollback", NAME, "--actor", "bob"], None)):
        if still is None:  # a rollback needs an archived revision: approve v2 where it can be published
            service.approve(store, v2.id, "bob", publish_root="published")
            before, target, still = (store.revisions(), store.audit()), v1, "archived"
        else:
            target = v2
        code, out, err = cli(capsys, *args, "--publish-dir", "bad")
        lines = err.strip().splitlines()
        assert (code, out, len(lines)) == (1, "", 1), err
        assert lines[0].startswith(f"gepa_lab.revisions: error: cannot publish {NAME} v{target.version} "
                                   f"({target.id[:12]}) in {bad.resolve()} (")
        assert f"the revision is still {still}: make that a writable directory or pass --publish-dir DIR" in lines[0]
        documented(lines[0])
        assert (store.revisions(), store.audit()) == before  # nothing committed, nothing audited
    assert store.get(v3.id).status == "pending_approval"
    published = (cwd / "published" / "weather-monitor" / "SKILL.md").read_text()
    assert "Convert units." in published and bad.is_dir() == (unwritable == "read-only")
    assert cli(capsys, "rollback", NAME, "--actor", "bob")[0] == 0  # once it can be written, it goes through
    assert "Convert units." not in (cwd / "published" / "weather-monitor" / "SKILL.md").read_text()


def test_show_links_the_runs_mlflow_page(capsys, store):
    """As the run stored them (the local store's `mlflow ui` command with it), else built from the
    run id and --tracking-uri."""
    ev = Evidence("exp", "d", "v1", {"holdout": "h"}, 0.7, 0.9, 0.2, 10, mlflow_run_id="ab" * 16,
                  mlflow_run_url="http://127.0.0.1:5000/#/experiments/3/runs/" + "ab" * 16,
                  mlflow_ui_command="mlflow ui --backend-store-uri sqlite:////runs/mlflow.db")
    stored = service.submit(store, SubmissionRequest("optimization/gepa:exp", body(), "create", None, ev)).revision
    out = cli(capsys, "show", stored.id)[1]
    assert (f"mlflow     {ev.mlflow_run_url} (serve it first: mlflow ui --backend-store-uri sqlite:////runs/mlflow.db)"
            in out.splitlines())
    only_id = service.submit(store, SubmissionRequest("optimization/gepa:e2", body(name="Other Skill"), "create", None,
                                                      Evidence("e2", "d", "v1", {"holdout": "h"}, 0.7, 0.9, 0.2, 10,
                                                               mlflow_run_id="cd" * 16))).revision
    assert f"mlflow     run {'cd' * 16} (pass --tracking-uri URI for its link)" in cli(capsys, "show", only_id.id)[1]
    out = cli(capsys, "show", only_id.id, "--tracking-uri", "https://ci:s3cret@mlflow.example:8443/")[1]
    assert f"mlflow     https://mlflow.example:8443/#/runs/{'cd' * 16}?workflowType=machine_learning" in out
    assert "s3cret" not in out
    out = cli(capsys, "show", only_id.id, "--tracking-uri", "sqlite:///mlflow.db")[1]
    assert f"/#/runs/{'cd' * 16}?workflowType=machine_learning (serve it first: mlflow ui --backend-store-uri " \
           f"sqlite:///mlflow.db --port {mlflow_links.ui_port()})" in out
    assert "mlflow     " not in cli(capsys, "show", submit(store, body(name="No Tracking")).id)[1]


def test_a_run_stores_its_links_with_the_revision(capsys, cwd, mlflow_env):
    """A tracked run's winner carries the run's page and `mlflow ui` command into the store."""
    from test_revisions_submission import run

    from gepa_lab.tracking.mlflow_tracker import MlflowTracker

    tracker = MlflowTracker(uri=f"sqlite:///{cwd / 'mlflow.db'}")
    result = run(cwd, StoreSubmitter("sqlite:///revisions.db"), trackers=[tracker])
    url, command = result.links["mlflow_run_url"], result.links["mlflow_ui_command"]
    assert url.endswith("/runs?viewStateShareKey=gepa-lab-decisions&workflowType=machine_learning"), url
    with RevisionStore("sqlite:///revisions.db") as store:
        evidence = store.get(result.revision["revision_id"]).evidence
    assert (evidence["mlflow_run_url"], evidence["mlflow_ui_command"]) == (url, command)
    assert f"mlflow     {url} (serve it first: {command})" in cli(capsys, "show", result.revision["revision_id"])[1]


@pytest.mark.parametrize("command", [["list"], ["show", f"{NAME}@v1", "--json"]])
def test_a_reader_that_leaves_early_ends_quietly(store, cwd, command):
    """`python -m gepa_lab.revisions list | head -1`: exit 141, no BrokenPipeError traceback."""
    submit(store, body())
    proc = subprocess.Popen([sys.executable, "-m", "gepa_lab.revisions", *command], cwd=cwd,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    proc.stdout.close()  # the reader is gone before the first line
    stderr = proc.stderr.read()
    assert proc.wait(timeout=120) == 141, stderr
    assert "Traceback" not in stderr and "BrokenPipeError" not in stderr and "Exception ignored" not in stderr


# -- end to end, as CI and a reviewer run it ----------------------------------------------------
ROOT = Path(__file__).resolve().parents[1]


def python(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    return subprocess.run([sys.executable, "-m", *args], cwd=cwd, env=env, capture_output=True, text=True,
                          timeout=180)


# An eligible recipe run (seed 2, 10 iterations; eligible again when started from its own
# approved winner). The EffectivenessGate bar is lowered so that the test does not
# depend on how far the simulator's holdout mean gets: the winner lands in pending_approval.
RUN = ["gepa_lab", "experiment=recipe", "tracking=none", "progress=off", "search.random_seed=2",
       "search.max_iterations=10", "submitter.min_holdout_score=0"]


@pytest.mark.slow
def test_ci_flow_submit_approve_publish_and_run_again_from_the_store(tmp_path):
    done = python(*RUN, "submit=true", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    run_dir = Path(next(x for x in done.stdout.splitlines() if x.strip().startswith("record")).split(None, 1)[1])
    promotion = json.loads((run_dir / "promotion.json").read_text())
    result = json.loads((run_dir / "result.json").read_text())
    assert promotion["eligible"] is True, promotion
    assert promotion["revision_status"] == "pending_approval"
    assert (tmp_path / "revisions.db").is_file() and not (tmp_path / "published").exists()  # not published

    approved = python("gepa_lab.revisions", "approve", promotion["revision_id"], "--actor", "ci-reviewer",
                      cwd=tmp_path)
    assert approved.returncode == 0, approved.stderr
    path = Path(next(x for x in approved.stdout.splitlines() if x.startswith("published ")).split(None, 1)[1])
    winner = artifact_from_dict(result["best"])
    assert path == tmp_path / "published" / "recipe-cookbook-builder" / "SKILL.md"
    assert path.read_text() == winner.render_markdown()  # type: ignore[attr-defined]

    again = python(*RUN, "submit=true", "seed.from_store=recipe-cookbook-builder", cwd=tmp_path)
    assert again.returncode == 0, again.stderr
    run2 = Path(next(x for x in again.stdout.splitlines() if x.strip().startswith("record")).split(None, 1)[1])
    experiment = json.loads((run2 / "experiment.json").read_text())
    assert experiment["seed"]["id"] == result["best_id"]  # the active revision was the seed
    second = json.loads((run2 / "result.json").read_text())
    assert second["promotion_eligible"], "this seed's second run must be eligible for the test to mean anything"
    assert (second["revision"]["parent_revision_id"], second["revision"]["action"], second["revision"]["version"]) \
        == (promotion["revision_id"], "update", 2)


@pytest.mark.slow
def test_ci_exit_codes_and_config_errors(tmp_path):
    not_eligible = python("gepa_lab", "experiment=recipe", "tracking=none", "progress=off", "submit=true",
                          "search.max_iterations=0", cwd=tmp_path)
    assert not_eligible.returncode == 0, not_eligible.stderr  # a finished run is a success, eligible or not
    run_dir = Path(next(x for x in not_eligible.stdout.splitlines() if x.strip().startswith("record")).split()[1])
    assert json.loads((run_dir / "promotion.json").read_text())["eligible"] is False
    bad = python("gepa_lab", "experiment=recipe", "submit=true", "submitter.min_holdout_score=2", cwd=tmp_path)
    assert bad.returncode == 2
    assert bad.stderr.strip().splitlines() == [
        "gepa_lab: error: submitter: ValueError: submitter.min_holdout_score must be a number between 0 and 1 "
        "(got 2)"]
    missing = python("gepa_lab", "experiment=recipe", "tracking=none", "seed.from_store=nothing-here", cwd=tmp_path)
    assert missing.returncode == 1 and "no revision store at" in missing.stderr
    no_store = python("gepa_lab", "experiment=recipe", "tracking=none", "submitter=none", "submit=true", cwd=tmp_path)
    assert no_store.returncode == 1 and "without a revision submitter" in no_store.stderr
