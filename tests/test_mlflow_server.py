"""A real `mlflow server` on loopback: the tracker logs a run through it (`tracking.uri=http://...`)
and the parent run, decision tags, pool members and the tables read back through the REST API
only (what `mlflow ui` and other tools see)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from fixtures_mlflow import free_port, get, post, proposal_events, stop, toy_run, wait_ready

pytestmark = [pytest.mark.slow, pytest.mark.usefixtures("mlflow_env")]


def test_tracker_logs_through_a_server_over_rest(tmp_path: Path) -> None:
    """`tracking.uri=http://...`: the logging thread talks REST only (artifacts proxied by the
    server), and everything reads back through REST."""
    port = free_port()
    base = f"http://127.0.0.1:{port}"
    log = tmp_path / "server.log"
    env = {**os.environ, "MLFLOW_DISABLE_TELEMETRY": "true", "LITELLM_LOCAL_MODEL_COST_MAP": "True"}
    env.pop("MLFLOW_TRACKING_URI", None)
    with open(log, "wb") as out:
        proc = subprocess.Popen(
            [sys.executable, "-m", "mlflow", "server", "--host", "127.0.0.1", "--port", str(port),
             "--backend-store-uri", f"sqlite:///{tmp_path / 'mlflow.db'}",
             "--artifacts-destination", str(tmp_path / "artifacts"), "--workers", "1"],
            cwd=tmp_path, env=env, stdout=out, stderr=subprocess.STDOUT, start_new_session=True,
        )
    try:
        wait_ready(base, proc, log)
        run_dir = tmp_path / "run"
        tracker = toy_run(base, run_dir, experiment="served")
        assert tracker.errors == []
        experiment = get(base, "/api/2.0/mlflow/experiments/get-by-name", experiment_name="gepa-lab")
        exp_id = experiment["experiment"]["experiment_id"]
        found = post(base, "/api/2.0/mlflow/runs/search", {"experiment_ids": [exp_id], "filter": ""})["runs"]
        assert [r["info"]["run_id"] for r in found] == [tracker.run_id]  # the experiment holds parents only
        parent = found[0]
        assert parent["info"]["status"] == "FINISHED"
        tags = {t["key"]: t["value"] for t in parent["data"]["tags"]}
        assert (tags["promotion_eligible"], tags["stop_reason"]) == ("true", "max_iterations")
        assert tags["promotion_reason"] == "holdout requirements satisfied"
        assert tags["mlflow_tracker.errors"] == "0"
        metrics = {m["key"]: m["value"] for m in parent["data"]["metrics"]}
        assert abs(metrics["holdout_delta"] - 0.6) < 1e-9
        assert parent["data"]["metrics"][0]["key"] == "holdout_delta"  # first: what the comparison plots
        history = get(base, "/api/2.0/mlflow/metrics/get-history", run_id=tracker.run_id,
                      metric_key="search/pool_size")
        assert sorted(int(m.get("step", 0)) for m in history["metrics"]) == [0, 1, 2, 3, 4]
        contexts = sorted(t["value"] for i in parent["inputs"]["dataset_inputs"] for t in i["tags"]
                          if t["key"] == "mlflow.data.context")
        assert contexts == ["feedback", "holdout", "validation"]

        candidates = get(base, "/api/2.0/mlflow/experiments/get-by-name", experiment_name="gepa-lab-candidates")
        pool = post(base, "/api/2.0/mlflow/runs/search", {
            "experiment_ids": [candidates["experiment"]["experiment_id"]], "max_results": 1000,
            "filter": f"tags.`gepa.parent_run_id` = '{tracker.run_id}'"})["runs"]
        assert len(pool) == 2 and [r for r in pool if {"key": "is_best", "value": "true"} in r["data"]["tags"]]
        table = get(base, "/get-artifact", path="proposals.json", run_uuid=tracker.run_id)
        assert [row[table["columns"].index("iteration")] for row in table["data"]] == [0, 1, 2, 3, 4]
        assert len(proposal_events(run_dir)) == 5
        listing = get(base, "/api/2.0/mlflow/artifacts/list", run_id=tracker.run_id)
        files = {f["path"] for f in listing["files"] if not f["is_dir"]}
        assert {"lineage.png", "validation_heatmap.png", "holdout_deltas.png",
                "winner.md", "winner_diff.txt", "holdout_comparison.json", "promotion_rules.json"} <= files
        holdout = get(base, "/get-artifact", path="holdout_comparison.json", run_uuid=tracker.run_id)
        assert holdout["columns"] == ["case_id", "critical", "baseline", "candidate", "delta"]
        assert [row[0] for row in holdout["data"]] == ["ho1", "ho2", "ho3"]
        links = json.loads((run_dir / "result.json").read_text())["links"]
        assert links["mlflow_run_url"] == (f"{base}/#/experiments/{exp_id}/runs?viewStateShareKey=gepa-lab-decisions"
                                           "&workflowType=machine_learning")  # the server serves it
        assert "mlflow_ui_command" not in links  # the server is the UI
    finally:
        stop(proc)
    assert proc.returncode is not None
