"""Links into MLflow's UI (3.17) and the runs-table views they open; pure string work.

A server's URL is its UI; a local store is served by `ui_command`, on a port free when the link
was made, so the printed URL reaches that server and no other. A run's link opens the parent
runs' table on the run's own saved view (an experiment tag `mlflow.sharedViewState.<key>`): the
decision columns, the run pinned on top; its pool members' view sorts them by validation mean,
the winner pinned. URLs carry `workflowType=machine_learning`: MLflow 3.17 opens an experiment in
its GenAI view otherwise (it has no per-experiment setting).
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

# Offline; stdout is the CLI's summary (no "View run at" line); MLflow's INFO lines stay out of stderr.
ENV_DEFAULTS = {"MLFLOW_DISABLE_TELEMETRY": "true", "LITELLM_LOCAL_MODEL_COST_MAP": "True",
                "MLFLOW_SUPPRESS_PRINTING_URL_TO_STDOUT": "true", "MLFLOW_LOGGING_LEVEL": "WARNING"}
CLASSIC_VIEW = "workflowType=machine_learning"
VIEW_TAG = "mlflow.sharedViewState."  # + key: the view a runs table opens with ?viewStateShareKey=key
DECISIONS_VIEW = "gepa-lab-decisions"  # every parent run, the decision columns (`report`'s link)
VIEWS = json.loads(Path(__file__).with_name("mlflow_views.json").read_text(encoding="utf-8"))
PARENT_FILTER = VIEWS["decisions"]["searchFilter"]  # selects parent runs
LINK_TAG = "gepa.parent_run_id"  # a pool member's parent run (filterable: pool members have their own experiment)
RUN_VIEW, POOL_VIEW = "gepa-lab-run-{}", "gepa-lab-pool-{}"  # a run's view; its pool members' (.format(run id))
POOL_FILTER = f"tags.`{LINK_TAG}` = '{{}}'"  # .format(run id): a run's pool members


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
    """5000 (`mlflow ui`'s default) when nothing listens there, else a port the system calls free."""
    for port in (5000, 0):
        with socket.socket() as probe:
            try:
                probe.bind(("127.0.0.1", port))
                return int(probe.getsockname()[1])
            except OSError:
                continue
    raise OSError("no free local port for `mlflow ui`")


@functools.cache
def ui_port() -> int:
    """The port `ui_command` serves on, chosen once per process: a URL and its command agree."""
    return free_port()


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


def view_state(kind: str, pinned: Sequence[str] = (), search_filter: str | None = None) -> dict[str, Any]:
    """MLflow's shared view state of `kind` ("decisions" or "candidates"): its columns in order, with
    widths that show their values whole, and the runs pinned on top."""
    view = VIEWS[kind]
    columns = list(view["columnWidths"])
    return {"searchFilter": view["searchFilter"] if search_filter is None else search_filter,
            "orderByKey": view["orderByKey"], "orderByAsc": False, "selectedColumns": columns,
            "columnOrder": columns, "columnWidths": view["columnWidths"], "runsPinned": list(pinned)}


def _root(tracking_uri: str) -> str:
    """Where the UI's routes start; "" makes a link relative to the page (a run's description)."""
    return f"{ui_base(tracking_uri)}/" if tracking_uri else ""


def experiment_url(tracking_uri: str, experiment_id: str, view: str | None = DECISIONS_VIEW) -> str:
    """An experiment's runs table on a saved view (`/runs` itself: the root's redirect drops the key)."""
    query = (f"viewStateShareKey={view}&" if view else "") + CLASSIC_VIEW
    return f"{_root(tracking_uri)}#/experiments/{experiment_id}/runs?{query}"


def run_url(tracking_uri: str, experiment_id: str | None, run_id: str, artifact: str = "") -> str:
    """A run's page (description, notes, files; `artifact` opens that file); without the experiment
    id, MLflow's direct route, which looks it up."""
    where = f"experiments/{experiment_id}/runs" if experiment_id else "runs"
    return f"{_root(tracking_uri)}#/{where}/{run_id}{f'/artifacts/{artifact}' if artifact else ''}?{CLASSIC_VIEW}"


def compare_url(tracking_uri: str, experiment_ids: Sequence[str], run_ids: Sequence[str]) -> str:
    """MLflow's comparison of several runs (parallel coordinates, metrics, common artifacts)."""
    runs = urllib.parse.quote(json.dumps(list(run_ids), separators=(",", ":")))
    experiments = urllib.parse.quote(json.dumps(sorted(set(experiment_ids)), separators=(",", ":")))
    return f"{_root(tracking_uri)}#/compare-runs?runs={runs}&experiments={experiments}&{CLASSIC_VIEW}"
