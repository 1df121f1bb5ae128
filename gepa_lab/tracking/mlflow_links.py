"""Links into MLflow's UI (3.17) and the runs-table views they open; pure string work. A local store
is served by `ui_command` on a port free when the link was made (the URL reaches that server, no
other). A run's link opens the saved view (an experiment tag `mlflow.sharedViewState.<key>`) of every
parent run with the decision columns, newest first; its pool members' view sorts them by validation
mean (the winner first, `is_best`). MLflow 3.17 drops pinned runs from a saved view, so the run is
named beside the link. URLs carry `workflowType=machine_learning`: MLflow opens an experiment in its
GenAI view otherwise and has no per-experiment setting."""

from __future__ import annotations

import functools
import json
import socket
import urllib.parse
import urllib.request
from collections.abc import Sequence
from pathlib import Path

from gepa_lab.core.redact import mask_url as masked  # a URI for messages and commands: no secret

# Offline; stdout is the CLI's summary (no "View run at" line); MLflow's INFO lines stay out of stderr;
# a deadline on every request to a tracking server (MLflow's 120 s and 7 retries wait minutes on one that stopped).
ENV_DEFAULTS = {"MLFLOW_DISABLE_TELEMETRY": "true", "LITELLM_LOCAL_MODEL_COST_MAP": "True",
                "MLFLOW_SUPPRESS_PRINTING_URL_TO_STDOUT": "true", "MLFLOW_LOGGING_LEVEL": "WARNING",
                "MLFLOW_HTTP_REQUEST_TIMEOUT": "30", "MLFLOW_HTTP_REQUEST_MAX_RETRIES": "2"}
CLASSIC_VIEW = "workflowType=machine_learning"
VIEW_TAG = "mlflow.sharedViewState."  # + key: the view a runs table opens with ?viewStateShareKey=key
DECISIONS_VIEW = "gepa-lab-decisions"  # every parent run, the decision columns (`report`'s link)
VIEWS = json.loads(Path(__file__).with_name("mlflow_views.json").read_text(encoding="utf-8"))
PARENT_FILTER = VIEWS["decisions"]["searchFilter"]  # selects parent runs
LINK_TAG = "gepa.parent_run_id"  # a pool member's parent run (filterable: pool members have their own experiment)
POOL_VIEW, POOL_FILTER = "gepa-lab-pool-{}", f"tags.`{LINK_TAG}` = '{{}}'"  # .format(run id): a run's pool members


def sqlite_path(uri: str) -> Path | None:
    """The database file of a `sqlite:///...` URI (relative paths against the cwd)."""
    raw = uri[len("sqlite:///"):].split("?", 1)[0] if uri.startswith("sqlite:///") else ""
    return Path(raw).resolve() if raw and raw != ":memory:" else None


def is_server(tracking_uri: str) -> bool:
    return tracking_uri.startswith(("http://", "https://"))


def unreachable(tracking_uri: str) -> str | None:
    """Why a tracking server does not answer /health (None: it does, or it is no server)."""
    if not is_server(tracking_uri):
        return None
    try:
        with urllib.request.urlopen(ui_base(tracking_uri) + "/health", timeout=10) as reply:  # no credentials
            reply.read()
    except OSError as exc:
        return (f"MLflow tracking server {masked(tracking_uri)} is not reachable: {exc}; start it, or point the "
                "tracking URI (tracking.uri, --tracking-uri, MLFLOW_TRACKING_URI) at one that runs")
    return None


def free_port() -> int:
    """5000 (`mlflow ui`'s default) when nothing listens there, else a port the system calls free."""
    with socket.socket() as probe:
        try:
            probe.bind(("127.0.0.1", 5000))
        except OSError:
            probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


ui_port = functools.cache(free_port)  # where `ui_command` serves, chosen once per process: a URL and its command agree


def ui_base(tracking_uri: str) -> str:
    """The UI's root URL: the server itself (never its credentials), else where `ui_command` listens."""
    if not is_server(tracking_uri):
        return f"http://127.0.0.1:{ui_port()}"
    parts = urllib.parse.urlsplit(tracking_uri)
    return urllib.parse.urlunsplit((parts.scheme, parts.netloc.rsplit("@", 1)[-1], parts.path.rstrip("/"), "", ""))


def ui_command(tracking_uri: str) -> str | None:
    """The command that serves a local store's UI where `ui_base` says; None for a server."""
    return None if is_server(tracking_uri) else \
        f"mlflow ui --backend-store-uri {masked(tracking_uri)} --port {ui_port()}"


def view_state(kind: str, search_filter: str | None = None) -> str:
    """MLflow's view state of `kind` (mlflow_views.json: columns in order, their widths, the order)."""
    view = VIEWS[kind]
    columns = list(view["columnWidths"])
    return json.dumps({"searchFilter": view["searchFilter"] if search_filter is None else search_filter,
                       "orderByKey": view["orderByKey"], "orderByAsc": False, "selectedColumns": columns,
                       "columnOrder": columns, "columnWidths": view["columnWidths"]})


def saved_view(name: str, state: str, created_ms: int) -> str:
    """A view as MLflow's "Views" menu lists it (a named envelope around the state)."""
    return json.dumps({"name": name, "createdAt": created_ms, "updatedAt": created_ms, "state": state})


def _root(tracking_uri: str) -> str:
    """Where the UI's routes start; "" makes a link relative to the page (a run's description)."""
    return f"{ui_base(tracking_uri)}/" if tracking_uri else ""


def experiment_url(tracking_uri: str, experiment_id: str, view: str | None = DECISIONS_VIEW) -> str:
    """An experiment's runs table on a saved view (`/runs` itself: the root's redirect drops the key)."""
    query = (f"viewStateShareKey={view}&" if view else "") + CLASSIC_VIEW
    return f"{_root(tracking_uri)}#/experiments/{experiment_id}/runs?{query}"


def run_url(tracking_uri: str, experiment_id: str | None, run_id: str, artifact: str = "") -> str:
    """A run's page (`artifact`: that file open); no experiment id: MLflow's route that looks it up."""
    where = f"experiments/{experiment_id}/runs" if experiment_id else "runs"
    return f"{_root(tracking_uri)}#/{where}/{run_id}{f'/artifacts/{artifact}' if artifact else ''}?{CLASSIC_VIEW}"


def compare_url(tracking_uri: str, experiment_ids: Sequence[str], run_ids: Sequence[str]) -> str:
    """MLflow's comparison of several runs (parallel coordinates, metrics, common artifacts)."""
    runs = urllib.parse.quote(json.dumps(list(run_ids), separators=(",", ":")))
    experiments = urllib.parse.quote(json.dumps(sorted(set(experiment_ids)), separators=(",", ":")))
    return f"{_root(tracking_uri)}#/compare-runs?runs={runs}&experiments={experiments}&{CLASSIC_VIEW}"
