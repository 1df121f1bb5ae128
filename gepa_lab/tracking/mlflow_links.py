"""Links into MLflow's UI (3.17) for a tracking URI: what the summary, `result.json`, the sweep
report, the run notes and the revision store print.

An HTTP(S) tracking URI is the server that also serves the UI; any other store (a SQLite file, a
database URL) is opened with `mlflow ui --backend-store-uri <uri>`, which serves
http://127.0.0.1:5000 by default: `ui_command` gives the exact command, `None` for a server.

Every URL carries `workflowType=machine_learning`: MLflow 3.17 opens an experiment in its GenAI
view unless the browser chose "Model training" in the sidebar; it has no per-experiment setting
(its `mlflow.experimentKind` tag is ignored by the 3.17 UI). Pure string work: no MLflow import.
"""

from __future__ import annotations

import json
import urllib.parse
import urllib.request
from collections.abc import Sequence

from gepa_lab.core.redact import mask_url as masked  # a URI for messages and commands: no secret

LOCAL_UI = "http://127.0.0.1:5000"  # where `mlflow ui` listens by default
CLASSIC_VIEW = "workflowType=machine_learning"
# The experiment tag (`mlflow.sharedViewState.<key>`) holding the runs table a parent experiment
# opens with (parent runs, decision columns); the tracker writes it, `experiment_url` names it.
DECISIONS_VIEW = "gepa-lab-decisions"
CANDIDATES_VIEW = "gepa-lab-candidates"


def is_server(tracking_uri: str) -> bool:
    return tracking_uri.startswith(("http://", "https://"))


def unreachable(tracking_uri: str) -> str | None:
    """Why a tracking server does not answer its /health endpoint (None: it does, or the store is
    not a server): checked before anything is spent, as MLflow's client would retry for minutes."""
    if not is_server(tracking_uri):
        return None
    try:
        with urllib.request.urlopen(ui_base(tracking_uri) + "/health", timeout=10) as reply:  # no credentials
            reply.read()
    except OSError as exc:
        return (f"MLflow tracking server {masked(tracking_uri)} is not reachable: {exc}; start it, or point the "
                "tracking URI (tracking.uri, --tracking-uri, MLFLOW_TRACKING_URI) at one that runs")
    return None


def ui_base(tracking_uri: str) -> str:
    """The UI's root URL: the server itself, else where `mlflow ui` listens."""
    if not is_server(tracking_uri):
        return LOCAL_UI
    parts = urllib.parse.urlsplit(tracking_uri)
    host = parts.netloc.rsplit("@", 1)[-1]  # credentials never go into a printed link
    return urllib.parse.urlunsplit((parts.scheme, host, parts.path.rstrip("/"), "", ""))


def ui_command(tracking_uri: str) -> str | None:
    """The command that serves a local store's UI at `LOCAL_UI`; None for a server."""
    return None if is_server(tracking_uri) else f"mlflow ui --backend-store-uri {masked(tracking_uri)}"


def run_url(tracking_uri: str, experiment_id: str | None, run_id: str) -> str:
    """The page of one run (e.g. a parent run: its decision, plots, notes); without the experiment
    id, MLflow's direct route, which looks the experiment up."""
    where = f"experiments/{experiment_id}/runs" if experiment_id else "runs"
    return f"{ui_base(tracking_uri)}/#/{where}/{run_id}?{CLASSIC_VIEW}"


def experiment_url(tracking_uri: str, experiment_id: str, view: str | None = DECISIONS_VIEW) -> str:
    """An experiment's runs table, opened with the tracker's saved view (`view`: its key)."""
    query = (f"viewStateShareKey={view}&" if view else "") + CLASSIC_VIEW
    # `/runs` itself: MLflow's redirect from the experiment root drops the view key.
    return f"{ui_base(tracking_uri)}/#/experiments/{experiment_id}/runs?{query}"


def compare_url(tracking_uri: str, experiment_ids: Sequence[str], run_ids: Sequence[str]) -> str:
    """MLflow's comparison of several runs (parallel coordinates, metrics, common artifacts)."""
    runs = urllib.parse.quote(json.dumps(list(run_ids), separators=(",", ":")))
    experiments = urllib.parse.quote(json.dumps(sorted(set(experiment_ids)), separators=(",", ":")))
    return f"{ui_base(tracking_uri)}/#/compare-runs?runs={runs}&experiments={experiments}&{CLASSIC_VIEW}"

