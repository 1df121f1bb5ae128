"""Links into MLflow's UI (3.17) and the runs-table views they open: what the summary,
`result.json`, the sweep report, the run notes and the revision store print.

An HTTP(S) tracking URI is the server that also serves the UI; any other store (a SQLite file, a
database URL) is served by `ui_command`, on a port that was free when the link was made (5000
when it is free), so the printed URL reaches that command's server and no other.

A run's link opens the experiment's runs table on the run's own saved view (an experiment tag
`mlflow.sharedViewState.<key>`, written by the tracker): the parent runs with the decision columns,
the run pinned on top. Its pool members' link opens their table sorted by validation mean, the
winner pinned. Every URL carries `workflowType=machine_learning`: MLflow 3.17 opens an experiment
in its GenAI view unless the browser chose "Model training" (it has no per-experiment setting).
Pure string work: no MLflow import.
"""

from __future__ import annotations

import functools
import json
import re
import socket
import urllib.parse
import urllib.request
from collections.abc import Sequence
from pathlib import Path
from typing import Any

# Offline; stdout is the CLI's summary (no "View run at" line per run); MLflow's INFO lines
# (e.g. creating a new store's tables) stay out of the run's stderr.
ENV_DEFAULTS = {"MLFLOW_DISABLE_TELEMETRY": "true", "LITELLM_LOCAL_MODEL_COST_MAP": "True",
                "MLFLOW_SUPPRESS_PRINTING_URL_TO_STDOUT": "true", "MLFLOW_LOGGING_LEVEL": "WARNING"}
DEFAULT_PORT = 5000  # `mlflow ui`'s own default, used when it is free
CLASSIC_VIEW = "workflowType=machine_learning"
VIEW_TAG = "mlflow.sharedViewState."  # + key: the view a runs table opens with ?viewStateShareKey=key
DECISIONS_VIEW = "gepa-lab-decisions"  # every parent run, the decision columns
# filter, order, columns and their widths of the decisions and candidates views
VIEWS = json.loads(Path(__file__).with_name("mlflow_views.json").read_text(encoding="utf-8"))
PARENT_FILTER = VIEWS["decisions"]["searchFilter"]  # selects parent runs (`report`, `note`)
LINK_TAG = "gepa.parent_run_id"  # a pool member's parent run (filterable: candidates have their own experiment)


def masked(uri: str) -> str:
    """A URI for messages and commands: never a password."""
    return re.sub(r"//([^/:@]+):[^/@]*@", r"//\1:***@", uri)


def is_server(tracking_uri: str) -> bool:
    return tracking_uri.startswith(("http://", "https://"))


def unreachable(tracking_uri: str) -> str | None:
    """Why a tracking server does not answer its /health endpoint (None: it does, or the store is
    not a server): checked before anything is spent, as MLflow's client would retry for minutes."""
    if not is_server(tracking_uri):
        return None
    try:
        with urllib.request.urlopen(tracking_uri.rstrip("/") + "/health", timeout=10) as reply:
            reply.read()
    except OSError as exc:
        return f"MLflow tracking server {masked(tracking_uri)} is not reachable: {exc}"
    return None


def free_port() -> int:
    """5000 when nothing listens there, else a port the system calls free."""
    for port in (DEFAULT_PORT, 0):
        with socket.socket() as probe:
            try:
                probe.bind(("127.0.0.1", port))
            except OSError:
                continue
            return int(probe.getsockname()[1])
    raise OSError("no free local port for `mlflow ui`")


@functools.cache
def ui_port() -> int:
    """The port `ui_command` serves on, chosen once per process: a URL and its command agree."""
    return free_port()


def ui_base(tracking_uri: str) -> str:
    """The UI's root URL: the server itself, else where `ui_command` listens."""
    if not is_server(tracking_uri):
        return f"http://127.0.0.1:{ui_port()}"
    parts = urllib.parse.urlsplit(tracking_uri)
    host = parts.netloc.rsplit("@", 1)[-1]  # credentials never go into a printed link
    return urllib.parse.urlunsplit((parts.scheme, host, parts.path.rstrip("/"), "", ""))


def ui_command(tracking_uri: str) -> str | None:
    """The command that serves a local store's UI where `ui_base` says; None for a server."""
    return None if is_server(tracking_uri) else \
        f"mlflow ui --backend-store-uri {masked(tracking_uri)} --port {ui_port()}"


def _root(tracking_uri: str) -> str:
    """Where the UI's routes start; "" gives a link relative to the page (a run's description)."""
    return f"{ui_base(tracking_uri)}/" if tracking_uri else ""


def run_view(run_id: str) -> str:
    """The view a run's link opens: every parent run, decision columns, this run pinned."""
    return f"gepa-lab-run-{run_id}"


def pool_view(run_id: str) -> str:
    """The view of a run's pool members: sorted by validation mean, the winner pinned."""
    return f"gepa-lab-pool-{run_id}"


def view_state(kind: str, pinned: Sequence[str] = (), search_filter: str | None = None) -> dict[str, Any]:
    """MLflow's shared view state for `kind` ("decisions" or "candidates"): its columns in order,
    with widths that show their values whole, and the runs pinned on top."""
    view = VIEWS[kind]
    columns = list(view["columnWidths"])
    return {"searchFilter": view["searchFilter"] if search_filter is None else search_filter,
            "orderByKey": view["orderByKey"], "orderByAsc": False, "selectedColumns": columns,
            "columnOrder": columns, "columnWidths": view["columnWidths"], "runsPinned": list(pinned)}


def pool_filter(run_id: str) -> str:
    return f"tags.`{LINK_TAG}` = '{run_id}'"


def experiment_url(tracking_uri: str, experiment_id: str, view: str | None = DECISIONS_VIEW) -> str:
    """An experiment's runs table, opened on a saved view (`view`: its key)."""
    query = (f"viewStateShareKey={view}&" if view else "") + CLASSIC_VIEW
    # `/runs` itself: MLflow's redirect from the experiment root drops the view key.
    return f"{_root(tracking_uri)}#/experiments/{experiment_id}/runs?{query}"


def run_url(tracking_uri: str, experiment_id: str | None, run_id: str, artifact: str = "") -> str:
    """The page of one run (description, notes, files; `artifact` opens that file); without the
    experiment id, MLflow's direct route, which looks the experiment up."""
    where = f"experiments/{experiment_id}/runs" if experiment_id else "runs"
    path = f"/artifacts/{artifact}" if artifact else ""
    return f"{_root(tracking_uri)}#/{where}/{run_id}{path}?{CLASSIC_VIEW}"


def compare_url(tracking_uri: str, experiment_ids: Sequence[str], run_ids: Sequence[str]) -> str:
    """MLflow's comparison of several runs (parallel coordinates, metrics, common artifacts)."""
    runs = urllib.parse.quote(json.dumps(list(run_ids), separators=(",", ":")))
    experiments = urllib.parse.quote(json.dumps(sorted(set(experiment_ids)), separators=(",", ":")))
    return f"{_root(tracking_uri)}#/compare-runs?runs={runs}&experiments={experiments}&{CLASSIC_VIEW}"
