"""MLflow's prompt registry as a publish target (gepa_lab/revisions/registry.py).

Against a real `mlflow server` (started as tests/test_shared_services.py starts it, SQLite
backend): a CI run logged to the server submits its winner; the reviewer pastes the summary's
approve command (it names the server) and `mlflow.genai.load_prompt("prompts:/<name>@production")`
returns the winner's text, tagged with its revision, evidence and approver; the next approval
moves the alias, a rollback moves it back; `sync-registry` rebuilds what an approval without the
registry left out, and registers nothing twice. Without a server: a registry that fails leaves
the decision committed and says how to catch up.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from test_revisions_ci import ARTIFACT, Reviewer, Workflow, pasted
from test_revisions_messages import documented
from test_shared_services import start_mlflow, stop

from gepa_lab.core.submission import Evidence, SubmissionRequest
from gepa_lab.revisions import service
from gepa_lab.revisions.errors import RegistryNotUpdated
from gepa_lab.revisions.publish import render
from gepa_lab.revisions.registry import REVISION_TAG
from gepa_lab.revisions.store import RevisionStore

PROMPT = f"prompts:/{ARTIFACT}@production"


def production(uri: str, monkeypatch: pytest.MonkeyPatch) -> Any:
    """What an agent loads, the way the docs tell it to (alias lookups uncached here, so that a
    move shows at once; agents see it within MLFLOW_ALIAS_PROMPT_CACHE_TTL_SECONDS)."""
    import mlflow

    monkeypatch.setenv("MLFLOW_ALIAS_PROMPT_CACHE_TTL_SECONDS", "0")
    mlflow.set_tracking_uri(uri)
    try:
        return mlflow.genai.load_prompt(PROMPT)
    finally:
        mlflow.set_tracking_uri(None)


def update(store: RevisionStore, parent_id: str, step: str) -> str:
    """A reviewer-approvable update of the active revision (as a later CI run would submit)."""
    parent = store.get(parent_id)
    body = {**parent.body, "steps": [*parent.body["steps"], step]}
    ev = Evidence(f"exp-{step[:8]}", "d", "v1", {"holdout": "h"}, 0.7, 0.9, 0.9 - 0.7, 20)
    return service.submit(store, SubmissionRequest(f"optimization/gepa:exp-{step[:8]}", body, "update", parent_id,
                                                   ev)).revision.id


@pytest.mark.slow
def test_approved_revisions_are_served_from_the_prompt_registry(tmp_path, monkeypatch):
    env = {**os.environ, "MLFLOW_DISABLE_TELEMETRY": "true"}
    env.pop("MLFLOW_TRACKING_URI", None)
    monkeypatch.delenv("MLFLOW_TRACKING_URI", raising=False)
    server_dir = tmp_path / "server"
    server_dir.mkdir()
    base, server, _ = start_mlflow(server_dir, f"sqlite:///{server_dir / 'mlflow.db'}", env)
    try:
        (tmp_path / "team").mkdir()
        store_url = f"sqlite:///{tmp_path / 'team' / 'revisions.db'}"
        workspace = tmp_path / "runner"
        workspace.mkdir()
        ci = Workflow(workspace, store_url, tracking_uri=base,
                      overrides="search.max_iterations=6 promotion=lenient submitter.min_holdout_score=0 "
                                "tracking.plots=false")
        week = ci.run(2)
        assert week.code == 0, week.log[-3000:]
        promotion, result = week.json("promotion.json"), week.json("result.json")
        revision_id = promotion["revision_id"]
        assert revision_id, promotion
        run_id = result["links"]["mlflow_run_id"]
        assert f"- **MLflow run**: [{run_id}]({base}/#/experiments/" in week.summary

        alice = Reviewer(tmp_path / "alice", store_url, "")
        approve = pasted(week.summary, "approve", "alice")
        assert approve.endswith(f"--tracking-uri {base}")
        done = alice.paste(approve)
        assert done.returncode == 0, done.stderr
        assert (f"alias production -> prompts:/{ARTIFACT}/1 (MLflow prompt version 1 is revision v1)"
                in done.stdout.splitlines())
        with RevisionStore(store_url) as store:
            v1 = store.get(revision_id)
        text_v1 = render(v1.body)[1]
        assert text_v1 == (alice.home / "published" / ARTIFACT / "SKILL.md").read_text()
        served = production(base, monkeypatch)
        assert served.template == text_v1 and served.version == 1
        tags = served.tags
        assert tags[REVISION_TAG] == revision_id and tags["gepa_lab.approved_by"] == "alice"
        assert tags["gepa_lab.mlflow_run_id"] == run_id == v1.evidence["mlflow_run_id"]
        # A server's run page, kept with the revision (no `mlflow ui` command: the server serves it).
        assert v1.evidence["mlflow_run_url"] == result["links"]["mlflow_run_url"]
        assert v1.evidence["mlflow_run_url"].startswith(f"{base}/#/experiments/")
        assert v1.evidence["mlflow_ui_command"] is None
        assert tags["gepa_lab.holdout_score"] == f"{v1.evidence['candidate_score']:.4f}"
        assert tags["gepa_lab.holdout_delta"] == f"{v1.evidence['delta']:+.4f}"

        # The next approval moves the alias; a rollback moves it back.
        with RevisionStore(store_url) as store:
            v2_id = update(store, revision_id, "Double-check the servings.")
        bob = Reviewer(tmp_path / "bob", store_url, "")
        bob.env["MLFLOW_TRACKING_URI"] = base  # the default of --tracking-uri
        assert bob.revisions("approve", v2_id[:12], "--actor", "bob").returncode == 0
        served = production(base, monkeypatch)
        assert served.version == 2 and "Double-check the servings." in served.template
        assert served.tags["gepa_lab.approved_by"] == "bob"
        rolled = bob.revisions("rollback", ARTIFACT, "--actor", "carol", "--comment", "servings went wrong")
        assert rolled.returncode == 0 and "registered" not in rolled.stdout  # it only moved the alias
        assert f"alias production -> prompts:/{ARTIFACT}/1 (MLflow prompt version 1 is revision v1)" in rolled.stdout
        served = production(base, monkeypatch)
        assert (served.version, served.template, served.tags["gepa_lab.approved_by"]) == (1, text_v1, "alice")

        # An approval without the registry leaves it behind; sync-registry catches up, once.
        with RevisionStore(store_url) as store:
            v3_id = update(store, revision_id, "Scale every ingredient.")
        assert alice.revisions("approve", v3_id[:12], "--actor", "alice").returncode == 0  # no tracking URI
        assert production(base, monkeypatch).version == 1
        synced = alice.revisions("sync-registry", "--tracking-uri", base, "--json")
        assert synced.returncode == 0, synced.stderr
        import json

        assert json.loads(synced.stdout) == [{"artifact_name": ARTIFACT, "prompt": ARTIFACT, "registered": 1,
                                              "production": 3}]
        served = production(base, monkeypatch)
        assert "Scale every ingredient." in served.template and served.tags[REVISION_TAG] == v3_id
        again = alice.revisions("sync-registry", "--tracking-uri", base, "--json")
        assert json.loads(again.stdout)[0]["registered"] == 0
        from mlflow import MlflowClient

        versions = MlflowClient(tracking_uri=base).search_prompt_versions(ARTIFACT)
        assert sorted(v.tags[REVISION_TAG] for v in versions) == sorted([revision_id, v2_id, v3_id])
    finally:
        stop(server)


class BrokenRegistry:
    uri = "http://127.0.0.1:9/"

    def publish(self, revision: Any) -> str:
        raise ConnectionError("connection refused")


def test_a_registry_failure_leaves_the_decision_committed(tmp_path):
    body = {"kind": "skill", "name": "Weather Monitor", "description": "Reports the weather of a city.",
            "when_to_use": "Use when a task asks for current weather.",
            "steps": ["Call get_weather for the city.", "Write the report."], "pitfalls": []}
    ev = Evidence("e", "d", "v1", {"holdout": "h"}, 0.7, 0.9, 0.9 - 0.7, 10)
    with RevisionStore(f"sqlite:///{tmp_path / 'r.db'}") as store:
        v1 = service.submit(store, SubmissionRequest("optimization/gepa:e", body, "create", None, ev)).revision
        with pytest.raises(RegistryNotUpdated) as failed:
            service.approve(store, v1.id, "alice", publish_root=tmp_path / "published", registry=BrokenRegistry())
        assert str(failed.value) == (
            f"Weather Monitor v1 ({v1.id[:12]}) is active and published, but the MLflow prompt registry at "
            "http://127.0.0.1:9/ was not updated (ConnectionError: connection refused); bring it in line with: "
            "python -m gepa_lab.revisions sync-registry")
        documented(str(failed.value))
        assert store.get(v1.id).status == "active" and (tmp_path / "published/weather-monitor/SKILL.md").is_file()


def test_sync_registry_needs_a_tracking_uri(tmp_path, monkeypatch):
    monkeypatch.delenv("MLFLOW_TRACKING_URI", raising=False)
    RevisionStore(f"sqlite:///{tmp_path / 'r.db'}").close()
    done = subprocess.run([sys.executable, "-m", "gepa_lab.revisions", "sync-registry", "--store",
                           f"sqlite:///{tmp_path / 'r.db'}"], capture_output=True, text=True, cwd=Path(tmp_path),
                          env={k: v for k, v in os.environ.items() if k != "MLFLOW_TRACKING_URI"})
    assert done.returncode == 2 and done.stderr.strip() == (
        "gepa_lab.revisions: error: sync-registry needs the MLflow server: pass --tracking-uri URI or set "
        "MLFLOW_TRACKING_URI")
    documented(done.stderr.strip())
