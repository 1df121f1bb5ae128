"""The CI flow (.github/workflows/optimize.yml) as a team runs it for a year.

`Workflow` runs the workflow's own steps (their `run:` scripts, read from the YAML, under `bash -e`
as GitHub's runner does, with the job's environment) against one persistent store. The year: a
run per week with a new `search.random_seed`, reviewers approving, rejecting, letting two
revisions of one parent wait (the second goes stale), monitoring and rolling back in between,
and a re-run of a week whose winner a reviewer had rejected. After every run the test predicts
from the store's state before it where the run's winner must land (docs/revisions.md §The CI
flow) and checks the store, the run record and the job summary against that prediction; the
reviewer commands are pasted from the summary into a shell in another directory.
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import re
import shlex
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import yaml
from conftest import ROOT
from test_revisions_messages import documented
from test_shared_services import postgres  # noqa: F401  (the PostgreSQL server fixture)

from gepa_lab.core.artifacts import artifact_from_dict
from gepa_lab.revisions.ci import mlflow_link, summary
from gepa_lab.revisions.cli import main
from gepa_lab.revisions.errors import StoreMissing
from gepa_lab.revisions.store import RevisionRow, RevisionStore
from gepa_lab.tracking.mlflow_links import run_url, ui_command

WORKFLOW = ROOT / ".github" / "workflows" / "optimize.yml"
STEPS = ("Check the store is configured", "Optimize and submit (never publishes)", "Job summary")
# What CI's variables, secrets and inputs provide; the test supplies each (see Workflow.env).
EXPRESSIONS = {"REVISIONS_URL", "PGPASSWORD", "MLFLOW_TRACKING_URI", "MLFLOW_TRACKING_USERNAME",
               "MLFLOW_TRACKING_PASSWORD", "EXPERIMENT", "RANDOM_SEED", "OVERRIDES", "RUN_DIR"}
# Small budgets (a workflow_dispatch `overrides` input): each run takes seconds. The lenient
# promotion policy and a zero EffectivenessGate bar make enough weeks eligible and approvable for
# the year to hold every kind of decision; tracking=none, as MLflow is not what this test is about.
OVERRIDES = "tracking=none search.max_iterations=10 promotion=lenient submitter.min_holdout_score=0"
ARTIFACT = "recipe-cookbook-builder"
PYTHON_BIN = str(Path(sys.executable).parent)


def job() -> dict[str, Any]:
    return yaml.safe_load(WORKFLOW.read_text(encoding="utf-8"))["jobs"]["optimize"]


def step(name: str) -> dict[str, Any]:
    return next(s for s in job()["steps"] if s.get("name") == name)


# -- fast checks of the workflow and the summary -------------------------------------------------
def test_the_workflow_runs_one_command_for_every_week():
    steps = job()["steps"]
    assert [s.get("name") for s in steps if "run" in s] == ["Install", *STEPS]
    optimize = step("Optimize and submit (never publishes)")["run"]
    # One seed setting for the first run and every later one: no branching in the script.
    assert "seed.prefer_store=true" in optimize and "seed.from_store" not in optimize
    assert not re.search(r"\b(if|then|case|elif)\b|&&|\|\|", optimize)
    assert "submit=true" in optimize and "approve" not in optimize and "sweep" not in optimize
    assert optimize.startswith("set -o pipefail") and optimize.rstrip().endswith("| tee optimize.log")
    assert step("Job summary")["if"] == "always()"
    env = job()["env"]
    assert {k for k, v in env.items() if "${{" in str(v)} == EXPRESSIONS
    assert "secrets." in env["PGPASSWORD"] and "secrets." not in env["REVISIONS_URL"]
    assert "[postgres]" in step("Install")["run"]


def commands(script: str) -> list[str]:
    joined = script.replace("\\\n", " ")
    return [" ".join(line.split("#")[0].split()) for line in joined.splitlines() if line.strip().startswith("python")]


def test_docs_show_the_workflows_commands():
    doc = (ROOT / "docs" / "revisions.md").read_text(encoding="utf-8").split("## The CI flow")[1]
    documented = commands(doc.split("```bash")[1].split("```")[0])
    run, report = (commands(step(name)["run"]) for name in STEPS[1:])
    assert documented == [c.replace(' "${extra[@]}"', "") for c in run + report]


def test_without_the_store_variable_the_job_fails_saying_which_variable(tmp_path):
    env = {**os.environ, "REVISIONS_URL": ""}
    done = subprocess.run(["bash", "-e", "-c", step("Check the store is configured")["run"]], cwd=tmp_path, env=env,
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 1 and done.stdout.strip().startswith("::error::set the repository variable")
    documented(done.stdout.strip())


def test_the_repository_names_no_driver_but_psycopg_3():
    needle = "psycopg" + "2"  # psycopg 3 is the driver (SQLAlchemy's default for postgresql://)
    tracked = subprocess.run(["git", "ls-files"], cwd=ROOT, capture_output=True, text=True, check=True).stdout.split()
    found = [p for p in tracked if (ROOT / p).is_file() and needle.encode() in (ROOT / p).read_bytes()]
    assert found == []
    from sqlalchemy.engine import make_url

    assert make_url("postgresql://db.internal/revisions").get_dialect().driver == "psycopg"


def record(run_dir: Path, promotion: dict[str, Any], result: dict[str, Any] | None = None,
           experiment: dict[str, Any] | None = None) -> Path:
    run_dir.mkdir(parents=True)
    (run_dir / "promotion.json").write_text(json.dumps(promotion))
    (run_dir / "result.json").write_text(json.dumps(result or {}))
    (run_dir / "experiment.json").write_text(json.dumps(experiment or {
        "config": {"experiment_name": "recipe", "search": {"random_seed": 7},
                   "evaluator": {"_target_": "evaluators.skillcraft.SkillCraftEvaluator"},
                   "submitter": {"url": "postgresql://gepa:hunter2@db.internal/revisions"}}}))
    return run_dir


def test_summary_of_each_outcome(tmp_path):
    not_eligible = summary(record(tmp_path / "a", {
        "eligible": False, "submit": True, "reason": "holdout delta -0.0000 is below required 0.0000",
        "submission_reason": "holdout delta -0.0000 is below required 0.0000", "revision_id": None,
        "holdout_delta": -1e-9}))
    assert not_eligible.startswith("## gepa-lab recipe, search.random_seed 7: not eligible: nothing submitted")
    assert "delta +0.0000" in not_eligible and "SkillCraft-sim: these scores calibrate the harness" in not_eligible
    assert "hunter2" not in not_eligible and "`postgresql://gepa:***@db.internal/revisions`" in not_eligible
    assert "revisions list --store 'postgresql://gepa:***@db.internal/revisions'" in not_eligible

    refused = summary(record(tmp_path / "b", {
        "eligible": True, "submit": True, "reason": "holdout requirements satisfied", "revision_id": None,
        "submission_reason": "revision submission refused: this run's winner was already submitted as revision "
                             "0123456789ab (x v2) by optimization/gepa:e at T, and was rejected by bob at T: no"}))
    assert "refused by the revision store: nothing stored" in refused.splitlines()[0]
    assert "was rejected by bob" in refused and "approve" not in refused

    links = {"mlflow_run_id": "r1", "mlflow_experiment_id": "3", "mlflow_tracking_uri": "http://mlflow.internal:5000",
             "mlflow_run_url": run_url("http://mlflow.internal:5000", "3", "r1")}
    submitted = summary(record(tmp_path / "c", {
        "eligible": True, "submit": True, "reason": "holdout requirements satisfied",
        "submission_reason": "revision submitted with status pending_approval",
        "revision_id": "5cb2ff892933454c81f0297c9965b830", "revision_status": "pending_approval", "holdout_delta": 0.2},
        {"revision": {"store": "postgresql://gepa@db.internal/revisions", "resubmitted": False,
                      "parent_revision_id": "0f" * 16}, "links": links,
         "baseline_holdout": {"score": 0.6, "cases": 20}, "candidate_holdout": {"score": 0.8, "cases": 20}}))
    assert "revision 5cb2ff892933 is pending_approval" in submitted.splitlines()[0]
    assert ("- **MLflow run**: [r1](http://mlflow.internal:5000/#/experiments/3/runs/r1?workflowType=machine_learning)"
            in submitted)
    assert ("python -m gepa_lab.revisions show 5cb2ff892933 --store postgresql://gepa@db.internal/revisions"
            in submitted.splitlines())
    assert ("python -m gepa_lab.revisions approve 5cb2ff892933 --actor YOUR_NAME --store "
            "postgresql://gepa@db.internal/revisions --tracking-uri http://mlflow.internal:5000") in submitted
    assert "holdout**: seed 0.6000 -> winner 0.8000 (delta +0.2000, 20 cases)" in submitted

    first = summary(record(tmp_path / "d", {
        "eligible": True, "submit": True, "reason": "holdout requirements satisfied", "revision_id": "ab" * 16,
        "submission_reason": "revision submitted with status pending_approval", "revision_status": "pending_approval"},
        {"revision": {"store": "sqlite:///r.db", "parent_revision_id": None}},
        {"config": {"dataset": {"path": "datasets/skillcraft/recipe", "seed_artifact": "seed_skill.json"}}}))
    assert (f"python -m gepa_lab.revisions diff {'ab' * 6} --against datasets/skillcraft/recipe/seed_skill.json "
            "--store sqlite:///r.db") in first.splitlines()
    assert "--against" not in submitted  # a revision with a parent is compared with it

    assert summary(tmp_path / "never-ran").startswith("## gepa-lab: the run failed before a decision")
    log = tmp_path / "optimize.log"
    log.write_text("[INFO] composing\ngepa_lab: error: seed artifact file not found: /x/seed.json\nTraceback ...\n")
    failed = summary(tmp_path / "never-ran", log)
    assert "```text\ngepa_lab: error: seed artifact file not found: /x/seed.json\n```" in failed
    log.write_text("Traceback (most recent call last):\n  ...\nRuntimeError: password=hunter2 boom\n")
    assert "```text\nRuntimeError: password=[REDACTED] boom\n```" in summary(tmp_path / "never-ran", log)


@pytest.mark.slow
def test_a_failed_runs_job_summary_quotes_its_one_line_error(tmp_path):
    """The workflow's own steps, with an override the run refuses: the job fails with the run's
    exit code (not tee's) and its summary quotes the error line, which names the fix."""
    (tmp_path / "runner").mkdir()
    week = Workflow(tmp_path / "runner", f"sqlite:///{tmp_path / 'revisions.db'}",
                    overrides=OVERRIDES + " search.max_metric_calls=0").run(1)
    error = "gepa_lab: error: search.max_metric_calls must be an integer >= 1 (got 0)"
    assert week.code == 2 and error in week.log
    assert week.summary.startswith("## gepa-lab: the run failed before a decision")
    assert f"```text\n{error}\n```" in week.summary


def test_mlflow_link_only_for_a_run_tracked_on_a_server():
    def links(uri: str) -> dict[str, str]:  # as the MLflow tracker writes them into result.json
        out = {"mlflow_run_id": "r", "mlflow_experiment_id": "1", "mlflow_run_url": run_url(uri, "1", "r")}
        command = ui_command(uri)
        return {**out, "mlflow_ui_command": command} if command else out

    assert mlflow_link(links("https://m.example/")) == "https://m.example/#/experiments/1/runs/r?workflowType=machine_learning"
    assert mlflow_link(links("https://u:p@m.example")) == "https://m.example/#/experiments/1/runs/r?workflowType=machine_learning"
    assert mlflow_link(links("sqlite:////w/mlflow.db")) is None
    assert mlflow_link({"mlflow_tracking_uri": "https://m.example"}) is None


# -- the year -----------------------------------------------------------------------------------
@dataclass
class Week:
    seed: int
    code: int
    run_dir: Path
    summary: str
    log: str

    def json(self, name: str) -> dict[str, Any]:
        return json.loads((self.run_dir / name).read_text())


@dataclass
class Workflow:
    """The workflow's steps, run as GitHub's runner runs them, in `workspace` (a fresh checkout
    each week would do as well: everything that lasts is in the store)."""

    workspace: Path
    store_url: str
    password: str = ""
    tracking_uri: str | None = None  # GEPA_LAB_TRACKING_URI (unset: mlflow.db in the workspace)
    overrides: str = OVERRIDES
    runs: int = 0

    def environment(self, seed: int) -> dict[str, str]:
        self.runs += 1
        provided = {"REVISIONS_URL": self.store_url, "PGPASSWORD": self.password,
                    "MLFLOW_TRACKING_URI": self.tracking_uri or f"sqlite:///{self.workspace}/mlflow.db",
                    "MLFLOW_TRACKING_USERNAME": "", "MLFLOW_TRACKING_PASSWORD": "", "EXPERIMENT": "recipe",
                    "RANDOM_SEED": str(seed), "OVERRIDES": self.overrides, "RUN_DIR": f"outputs/ci-{self.runs}-1"}
        literal = {k: str(v) for k, v in job()["env"].items() if "${{" not in str(v)}
        path = f"{PYTHON_BIN}{os.pathsep}{os.environ['PATH']}"  # the Install step's $GITHUB_PATH line
        return {**{k: v for k, v in os.environ.items() if k not in ("MLFLOW_TRACKING_URI", "PGPASSWORD")},
                **literal, **provided, "PATH": path, "GITHUB_STEP_SUMMARY": str(self.workspace / "summary.md")}

    def run(self, seed: int) -> Week:
        env = self.environment(seed)
        (self.workspace / "summary.md").write_text("")
        code, log = 0, ""
        for name in STEPS:
            if code != 0 and step(name).get("if") != "always()":
                continue
            script = self.workspace / "step.sh"
            script.write_text(step(name)["run"])
            done = subprocess.run(["bash", "-e", str(script)], cwd=self.workspace, env=env, capture_output=True,
                                  text=True, timeout=600)
            log += done.stdout + done.stderr
            code = code or done.returncode
        return Week(seed, code, self.workspace / env["RUN_DIR"], (self.workspace / "summary.md").read_text(), log)


def setenv(values: dict[str, str | None]) -> None:
    for name, value in values.items():
        if value is None:
            os.environ.pop(name, None)
        else:
            os.environ[name] = value


@dataclass
class Done:
    returncode: int
    stdout: str
    stderr: str


class Reviewer:
    """A person in their own checkout, pasting commands. `shell` runs one in bash, as typed;
    `paste` runs the pasted line's `python -m gepa_lab.revisions` in this process (same argument
    split as the shell's, without a new interpreter per command), in the reviewer's directory and
    environment (`env`: variables set for the reviewer, None: unset)."""

    def __init__(self, home: Path, store_url: str, password: str):
        self.home, self.store_url = home, store_url
        self.env: dict[str, str | None] = {"PGPASSWORD": password or None, "MLFLOW_TRACKING_URI": None}
        home.mkdir()

    def shell(self, command: str) -> subprocess.CompletedProcess[str]:
        env = {**os.environ, "PATH": f"{PYTHON_BIN}{os.pathsep}{os.environ['PATH']}"}
        env.update({k: v for k, v in self.env.items() if v is not None})
        for name in (k for k, v in self.env.items() if v is None):
            env.pop(name, None)
        return subprocess.run(["bash", "-c", command], cwd=self.home, env=env, capture_output=True, text=True,
                              timeout=300)

    def paste(self, command: str) -> Done:
        argv = shlex.split(command)
        assert argv[:3] == ["python", "-m", "gepa_lab.revisions"], command
        out, err = io.StringIO(), io.StringIO()
        saved = {k: os.environ.get(k) for k in self.env}
        try:
            setenv(self.env)
            with contextlib.chdir(self.home), contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
                code = main(argv[3:])
        finally:
            setenv(saved)
        return Done(code, out.getvalue(), err.getvalue())

    def revisions(self, *args: str) -> Done:
        return self.paste(shlex.join(["python", "-m", "gepa_lab.revisions", *args, "--store", self.store_url]))


def snapshot(store_url: str) -> dict[str, RevisionRow]:
    try:
        store = RevisionStore(store_url, create=False)
    except StoreMissing:  # before the first submission
        return {}
    with store:
        return {r.id: r for r in store.revisions()}


def active(revisions: dict[str, RevisionRow]) -> RevisionRow | None:
    return next((r for r in revisions.values() if r.status == "active"), None)


def check_landing(week: Week, before: dict[str, RevisionRow], after: dict[str, RevisionRow], seed_file_id: str) -> str:
    """Where the week's winner landed, checked against what docs/revisions.md says it must be:
    'not eligible', 'new', 'pending again' or 'refused'."""
    assert week.code == 0, week.log[-3000:]  # a finished run is a success, whatever its outcome
    assert "alembic" not in week.log  # the store's migrations keep out of the run's log
    promotion, result, experiment = week.json("promotion.json"), week.json("result.json"), week.json("experiment.json")
    parent = active(before)
    assert experiment["seed"]["id"] == (parent.artifact_hash if parent else seed_file_id)  # seed.prefer_store
    headline = week.summary.splitlines()[0]
    assert headline.startswith(f"## gepa-lab recipe, search.random_seed {week.seed}: ")
    new = [after[i] for i in after.keys() - before.keys()]
    if not promotion["eligible"]:
        assert new == [] and headline.endswith("not eligible: nothing submitted")
        assert {i: r.status for i, r in after.items()} == {i: r.status for i, r in before.items()}
        return "not eligible"
    same = [r for r in before.values() if r.artifact_hash == result["best_id"]
            and r.parent_revision_id == (parent.id if parent else None)]
    if not same:
        (revision,) = new
        assert (revision.parent_revision_id, revision.action) == ((parent.id, "update") if parent else (None, "create"))
        assert revision.version == max((r.version for r in before.values()), default=0) + 1
        assert revision.status == promotion["revision_status"] == "pending_approval"
        assert revision.id == promotion["revision_id"] and revision.evidence["experiment_id"] == result["experiment_id"]
        assert revision.artifact_hash == result["best_id"] and revision.source.endswith(result["experiment_id"])
        assert headline.endswith(f"revision {revision.id[:12]} is pending_approval")
        return "new"
    (earlier,) = same
    assert new == []
    if earlier.status in ("pending_approval", "pending_eval"):
        assert promotion["revision_id"] == earlier.id and result["revision"]["resubmitted"] is True
        assert headline.endswith("(already submitted by another run)")
        assert "resubmission: identical to revision" in promotion["submission_reason"]
        return "pending again"
    assert promotion["revision_id"] is None
    reason = promotion["submission_reason"]
    assert reason.startswith(f"revision submission refused: this run's winner was already submitted as revision "
                             f"{earlier.id[:12]} ({ARTIFACT} v{earlier.version}) by {earlier.source}"), reason
    if earlier.status == "rejected":
        assert f"was rejected by {earlier.decided_by} at " in reason
    assert headline.endswith("refused by the revision store: nothing stored") and reason in week.summary
    return "refused"


def pasted(summary_text: str, verb: str, actor: str, comment: str = "") -> str:
    line = next(x for x in summary_text.splitlines() if x.startswith(f"python -m gepa_lab.revisions {verb} "))
    line = line.replace("YOUR_NAME", actor)
    return line.replace("WHY", comment) if comment else line


def year(tmp_path: Path, store_url: str, password: str = "") -> None:
    workspace = tmp_path / "runner"
    workspace.mkdir()
    ci = Workflow(workspace, store_url, password)
    alice, bob = Reviewer(tmp_path / "alice", store_url, password), Reviewer(tmp_path / "bob", store_url, password)
    seed_file_id = None
    outcomes: list[tuple[int, str]] = []
    events: list[str] = []
    held: list[str] = []  # pending revisions the reviewers let wait
    weeks: list[Week] = []
    seeds = list(range(1, 13))  # week n runs with search.random_seed n (the workflow's run number)
    while seeds:
        seed = seeds.pop(0)
        before = snapshot(store_url)
        week = ci.run(seed)
        weeks.append(week)
        seed_file_id = seed_file_id or week.json("experiment.json")["seed"]["id"]  # week 1: no store yet
        outcome = check_landing(week, before, snapshot(store_url), seed_file_id)
        outcomes.append((seed, outcome))
        if outcome != "new":
            continue
        revision_id = week.json("promotion.json")["revision_id"]
        # Pasted from the summary in another checkout (the first into a real shell).
        show = pasted(week.summary, "show", "alice")
        shown = alice.paste(show) if events else alice.shell(show)
        assert shown.returncode == 0 and f"revision   {revision_id}" in shown.stdout, shown.stderr
        if "approved" not in events:
            decide(alice, week, revision_id, events)
        elif "rejected" not in events:
            done = bob.paste(pasted(week.summary, "reject", "bob", "'steps got vaguer'"))
            assert done.returncode == 0 and snapshot(store_url)[revision_id].decided_by == "bob", done.stderr
            events.append("rejected")
            seeds.insert(0, seed)  # someone re-runs that week (workflow_dispatch, same seed): refused
        elif "stale" not in events and not held:
            held.append(revision_id)  # waits while the next week's run starts from the same parent
        elif held:
            decide(alice, None, held.pop(), events)  # the older one first ...
            stale = alice.paste(pasted(week.summary, "approve", "alice"))  # ... so this one's parent is stale
            assert stale.returncode == 1 and "is now rejected: stale parent" in stale.stderr, stale.stderr
            assert len(stale.stderr.strip().splitlines()) == 1
            documented(stale.stderr.strip())
            assert snapshot(store_url)[revision_id].status == "rejected"
            events.append("stale")
        elif "rolled back" not in events:
            decide(alice, week, revision_id, events)
            roll_back(bob, week, store_url, events)
        else:
            decide(alice, week, revision_id, events)

    # The year held every kind of week, and the store agrees with the runs.
    kinds = [o for _, o in outcomes]
    assert len(weeks) >= 10 and len({w.seed for w in weeks}) >= 10
    assert {"approved", "rejected", "stale", "rolled back"} <= set(events), (events, outcomes)
    assert kinds.count("new") >= 5 and "not eligible" in kinds, outcomes
    assert "refused" in kinds, outcomes  # the re-run of the rejected week
    final = snapshot(store_url)
    submitted = {w.json("promotion.json")["revision_id"] for w in weeks} - {None}
    assert submitted == set(final)  # every revision came from a CI run, and every CI revision is there
    listed = alice.revisions("list")
    assert listed.returncode == 0 and len(listed.stdout.splitlines()) == len(final) + 2  # header, rows, note
    assert "HOLDOUT is each run's seed -> winner on that run's own holdout draw" in listed.stdout
    assert password == "" or all(password not in w.summary + w.log for w in weeks)


def decide(reviewer: Reviewer, week: Week | None, revision_id: str, events: list[str]) -> None:
    command = (pasted(week.summary, "approve", "alice") if week is not None
               else f"python -m gepa_lab.revisions approve {revision_id[:12]} --actor alice --store {reviewer.store_url}")
    before = snapshot(reviewer.store_url)
    done = reviewer.paste(command)
    assert done.returncode == 0, done.stderr
    after = snapshot(reviewer.store_url)
    assert after[revision_id].status == "active" and after[revision_id].decided_by == "alice"
    previous = active(before)
    if previous is not None:
        assert after[previous.id].status == "archived" and after[previous.id].status_by == "alice"
    published = reviewer.home / "published" / ARTIFACT / "SKILL.md"
    assert published.read_text() == artifact_from_dict(after[revision_id].body).render_markdown()  # type: ignore[attr-defined]
    events.append("approved")


def roll_back(reviewer: Reviewer, week: Week, store_url: str, events: list[str]) -> None:
    """bob monitors the new active revision on the week's run, then rolls back to the one before it."""
    before = snapshot(store_url)
    current = active(before)
    assert current is not None and current.parent_revision_id is not None
    monitored = reviewer.revisions("monitor", ARTIFACT, "--run-dir", str(week.run_dir), "--seed", "3")
    assert monitored.returncode == 0 and "monitored" in monitored.stdout, monitored.stderr
    done = reviewer.revisions("rollback", ARTIFACT, "--actor", "bob", "--comment", "regressed in production")
    assert done.returncode == 0 and done.stdout.startswith(f"re-activated {current.parent_revision_id[:12]}"), done.stderr
    after = snapshot(store_url)
    back = after[current.parent_revision_id]
    assert back.status == "active" and back.status_by == "bob" and back.decided_by == before[back.id].decided_by
    assert after[current.id].status == "archived" and after[current.id].status_by == "bob"
    assert after[current.id].decided_by == "alice"  # its approver, still
    again = reviewer.revisions("approve", current.id[:12], "--actor", "carol")
    assert again.returncode == 1 and again.stderr.strip() == (
        f"gepa_lab.revisions: error: revision {current.id[:12]} ({ARTIFACT} v{current.version}) is already archived "
        f"by bob at {after[current.id].to_dict()['status_at']} (replaced by {back.id[:12]} (v{back.version})); it "
        "cannot be approved")
    shown = reviewer.revisions("show", current.id[:12])
    assert "decided    by alice" in shown.stdout and "status     archived by bob" in shown.stdout
    assert "monitored " in shown.stdout and "holdout seed 3, 20 cases: active" in shown.stdout
    events.append("rolled back")


@pytest.mark.slow
def test_a_year_of_weekly_ci_runs_on_sqlite(tmp_path):
    (tmp_path / "team").mkdir()  # the team's store, outside every checkout
    year(tmp_path, f"sqlite:///{tmp_path / 'team' / 'revisions.db'}")


@pytest.mark.slow
def test_a_year_of_weekly_ci_runs_on_postgresql(tmp_path, postgres, monkeypatch):  # noqa: F811
    postgres.execute("postgres", "create database revisions")
    monkeypatch.setenv("PGPASSWORD", postgres.password)  # this process reads the store too
    year(tmp_path, postgres.url("revisions"), postgres.password)
