"""Fixtures and toy search shared by the MLflow tests (tracker, server, notebook, browser, notes)
and by `scripts/mlflow_killable_run.py`. Registered as a pytest plugin in `conftest.py`.

The toy search: seed-like skills score 0.2, skills with IMPROVED among their steps 0.8; the
reflector cycles through every proposal status in five iterations (accepted, rejected,
reflection-rejected twice, duplicate).
"""

from __future__ import annotations

import base64
import json
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.parse
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

from gepa_lab import Case, Dataset, Evaluation, SearchConfig, SkillSpec, optimize
from gepa_lab.tracking.mlflow_tracker import MlflowTracker, candidates_experiment

IMPROVED = "Check the improved result."
PROPOSAL_EVENTS = {"candidate_accepted", "candidate_rejected", "candidate_duplicate", "reflection_rejected"}


class ToyEvaluator:
    """Counts its calls; after `fail_after` calls it raises `error` (an exception instance)."""

    def __init__(self, fail_after: int | None = None, error: BaseException | None = None):
        self.calls = 0
        self.fail_after = fail_after
        self.error = error

    def evaluate(self, artifact: Any, cases: list[Case], seed: int) -> list[Evaluation]:
        self.calls += 1
        if self.fail_after is not None and self.calls > self.fail_after and self.error is not None:
            raise self.error
        score = 0.8 if IMPROVED in artifact.steps else 0.2
        return [Evaluation(c.id, score, output="out", feedback="fb",
                           objectives={"cost_usd": 0.001, "tokens": 10.0}) for c in cases]


class ToyReflector:
    """steps: add IMPROVED (accepted), or drop it again (= the seed: duplicate); pitfalls: a new
    pitfall (same score: rejected); when_to_use unchanged and description not JSON
    (reflection-rejected)."""

    def reflect(self, artifact: Any, component: str, records: list[dict[str, Any]]) -> Any:
        if component == "steps":
            steps = [s for s in artifact.steps if s != IMPROVED]
            return {"steps": steps if IMPROVED in artifact.steps else [*steps, IMPROVED]}
        if component == "pitfalls":
            return {"pitfalls": [*artifact.pitfalls, "Do not skip checks."], "rationale": "guard"}
        if component == "when_to_use":
            return {"when_to_use": artifact.when_to_use}
        return "no json here"


class InterruptAfterIteration:
    """A tracker after the MLflow tracker that raises KeyboardInterrupt from the `iteration` hook:
    the iteration is in MLflow but not in a checkpoint, so a resume replays it."""

    def __init__(self, iteration: int):
        self.at = iteration

    def iteration(self, stats: Any) -> None:
        if stats.iteration == self.at:
            raise KeyboardInterrupt


def toy_dataset() -> Dataset:
    def cases(prefix: str, n: int, critical: int = 0) -> list[Case]:
        return [Case(f"{prefix}{i}", f"{prefix} input {i}", critical=i <= critical) for i in range(1, n + 1)]

    return Dataset("toy", "v1", cases("fb", 4), cases("val", 3), cases("ho", 3, critical=1))


def toy_seed() -> SkillSpec:
    return SkillSpec(name="Toy Skill", description="toy workflow", when_to_use="Use for toy tasks.",
                     steps=("Read the task.", "Answer."))


def toy_run(uri: str, run_dir: Path | None, *, experiment: str = "toy", random_seed: int = 1,
            iterations: int = 5, evaluator: Any = None, reflector: Any = None, resume: bool = False,
            run_config: dict[str, Any] | None = None, tracker: MlflowTracker | None = None,
            before: tuple[Any, ...] = (), after: tuple[Any, ...] = ()) -> MlflowTracker:
    """One toy search logged by `tracker` (default: a new one on `uri`); `before` / `after`: more
    trackers around it. Returns the MLflow tracker."""
    tracker = tracker or MlflowTracker(uri=uri)
    config = {"experiment_name": experiment, "hydra_choices": {"experiment": experiment, "tracking": "mlflow"},
              **(run_config or {})}
    optimize(toy_seed(), toy_dataset(), evaluator or ToyEvaluator(), reflector or ToyReflector(),
             SearchConfig(max_iterations=iterations, minibatch_size=2, random_seed=random_seed),
             run_dir=run_dir, resume=resume, trackers=[*before, tracker, *after],
             name=experiment, run_config=config)
    return tracker


def proposal_events(run_dir: Path) -> list[dict[str, Any]]:
    """The run record's proposals (one per iteration that produced one)."""
    lines = (run_dir / "events.jsonl").read_text(encoding="utf-8").splitlines()
    return [e for e in map(json.loads, lines) if e["kind"] in PROPOSAL_EVENTS]


def candidate_runs(client: Any, run_id: str, experiment: str = "gepa-lab") -> list[Any]:
    """The pool members' runs of a parent run (in the sibling candidates experiment)."""
    found = client.get_experiment_by_name(candidates_experiment(experiment))
    return list(client.search_runs([found.experiment_id], f"tags.`gepa.parent_run_id` = '{run_id}'",
                                   max_results=1000)) if found else []


def table_rows(client: Any, run_id: str, path: str, tmp: Path) -> list[dict[str, Any]]:
    """A table artifact (MLflow's `{"columns", "data"}` layout) as one dict per row."""
    stored = json.loads(read_artifact(client, run_id, path, tmp))
    return [dict(zip(stored["columns"], row, strict=True)) for row in stored["data"]]


def artifact_paths(client: Any, run_id: str, path: str | None = None) -> set[str]:
    out: set[str] = set()
    for item in client.list_artifacts(run_id, path):
        out |= artifact_paths(client, run_id, item.path) if item.is_dir else {item.path}
    return out


def read_artifact(client: Any, run_id: str, path: str, tmp: Path) -> str:
    return Path(client.download_artifacts(run_id, path, str(tmp))).read_text(encoding="utf-8")


def steps(client: Any, run_id: str, metric: str = "pool_size") -> list[int]:
    return sorted(m.step for m in client.get_metric_history(run_id, metric))


# -- a local MLflow server / UI --------------------------------------------------------------

READY_TIMEOUT_S = 180.0  # measured ~10 s on 2 cores; minutes when the machine is loaded


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def get(base: str, endpoint: str, **query: str) -> Any:
    url = f"{base}{endpoint}?{urllib.parse.urlencode(query)}" if query else f"{base}{endpoint}"
    with urllib.request.urlopen(url, timeout=10) as reply:
        return json.loads(reply.read())


def post(base: str, path: str, body: dict[str, Any]) -> Any:
    request = urllib.request.Request(f"{base}{path}", data=json.dumps(body).encode(),
                                     headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(request, timeout=10) as reply:
        return json.loads(reply.read())


def wait_ready(base: str, proc: subprocess.Popen[bytes], log: Path) -> None:
    deadline = time.monotonic() + READY_TIMEOUT_S
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise AssertionError(f"mlflow server exited with {proc.returncode}:\n{log.read_text()[-3000:]}")
        try:
            with urllib.request.urlopen(f"{base}/health", timeout=2) as reply:
                if reply.status == 200:
                    return
        except OSError:
            time.sleep(0.5)
    raise AssertionError(f"mlflow server not ready after {READY_TIMEOUT_S:.0f} s:\n{log.read_text()[-3000:]}")


def stop(proc: subprocess.Popen[bytes]) -> None:
    """The server runs uvicorn and a job runner as children: end its whole process group."""
    if proc.poll() is None:
        os.killpg(proc.pid, signal.SIGTERM)
        try:
            proc.wait(timeout=15)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(timeout=5)


@contextmanager
def mlflow_ui(store_uri: str, folder: Path, port: int | None = None) -> Iterator[str]:
    """`mlflow ui` on `store_uri` at `port` (else a free loopback port); yields its base URL."""
    port = port or free_port()
    base = f"http://127.0.0.1:{port}"
    log = folder / "ui.log"
    env = {**os.environ, "MLFLOW_DISABLE_TELEMETRY": "true", "LITELLM_LOCAL_MODEL_COST_MAP": "True"}
    with open(log, "wb") as out:
        proc = subprocess.Popen([sys.executable, "-m", "mlflow", "ui", "--backend-store-uri", store_uri,
                                 "--host", "127.0.0.1", "--port", str(port), "--workers", "1"], cwd=folder, env=env,
                                stdout=out, stderr=subprocess.STDOUT, start_new_session=True)
    try:
        wait_ready(base, proc, log)
        yield base
    finally:
        stop(proc)


# -- a headless browser ----------------------------------------------------------------------

CHROMIUM = next((p for p in ("/usr/bin/chromium", "/usr/bin/chromium-browser") if Path(p).is_file()), None)
# Flags for a closed network: no background connections, no sandbox (CI runs as root).
CHROMIUM_FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                  "--disable-background-networking", "--disable-component-update", "--disable-sync"]
ELEMENT = "element-6066-11e4-a52e-4f735466cecf"  # the W3C WebDriver element key
# MLflow UI's own settings (localStorage, `<key>_v<version>`): its assistant panel closed.
UI_SETTINGS = {"mlflow.assistant.panelOpen_v1": "false", "mlflow.assistant.fab.autoOpenedOnFirstLoad_v1": "true"}


class Browser:
    """Debian's headless chromium through chromedriver (W3C WebDriver over HTTP): the calls the
    browser test and docs/img/make_screenshots.py need. `clicks` counts `click()`s."""

    def __init__(self, width: int, height: int, profile: str):
        port = free_port()
        self.driver = subprocess.Popen(["chromedriver", f"--port={port}"], stdout=subprocess.DEVNULL,
                                       stderr=subprocess.DEVNULL)
        self.base, self.clicks = f"http://127.0.0.1:{port}", 0
        for _ in range(100):
            try:
                with urllib.request.urlopen(f"{self.base}/status", timeout=2):
                    break
            except OSError:
                time.sleep(0.2)
        caps = {"alwaysMatch": {"goog:chromeOptions": {"binary": CHROMIUM, "args": [
            *CHROMIUM_FLAGS, f"--window-size={width},{height}", f"--user-data-dir={profile}"]}}}
        self.session = self._call("POST", "/session", {"capabilities": caps})["sessionId"]

    def _call(self, method: str, path: str, body: dict[str, Any] | None = None) -> Any:
        data = json.dumps(body).encode() if body is not None else None
        request = urllib.request.Request(self.base + path, data=data, method=method,
                                         headers={"Content-Type": "application/json"})
        with urllib.request.urlopen(request, timeout=300) as reply:
            return json.loads(reply.read())["value"]

    def call(self, method: str, path: str, body: dict[str, Any] | None = None) -> Any:
        return self._call(method, f"/session/{self.session}{path}", body)

    def open(self, url: str) -> None:
        self.call("POST", "/url", {"url": url})

    def script(self, source: str, *args: Any) -> Any:
        return self.call("POST", "/execute/sync", {"script": source, "args": list(args)})

    def settle(self, base: str) -> None:
        """The UI's own settings, once per profile (its assistant panel would cover the page)."""
        self.open(base + "/")
        for key, value in UI_SETTINGS.items():
            self.script("window.localStorage.setItem(arguments[0], arguments[1])", key, value)

    def wait_for(self, *texts: str, timeout: float = 120.0) -> str:
        """Until the page shows every text; returns the page's text."""
        deadline = time.monotonic() + timeout
        while not all(t in (page := self.script("return document.body.innerText")) for t in texts):
            if time.monotonic() > deadline:
                raise AssertionError(f"the page never showed {[t for t in texts if t not in page]}:\n{page[-3000:]}")
            time.sleep(0.5)
        time.sleep(1.5)  # let the last requests (images, charts) land
        return str(self.script("return document.body.innerText"))

    def click(self, xpath: str) -> None:
        """One click; a link that opens a new window (a run description's) is followed into it."""
        before = self.call("GET", "/window/handles")
        element = self.call("POST", "/element", {"using": "xpath", "value": xpath})[ELEMENT]
        self.script("arguments[0].scrollIntoView({block: 'center'}); arguments[0].click()", {ELEMENT: element})
        self.clicks += 1
        time.sleep(1)
        if new := [h for h in self.call("GET", "/window/handles") if h not in before]:
            self.call("POST", "/window", {"handle": new[0]})

    def save(self, path: Path) -> None:
        path.write_bytes(base64.b64decode(self.call("GET", "/screenshot")))
        print(f"wrote {path}")

    def close(self) -> None:
        try:
            self.call("DELETE", "")
        finally:
            self.driver.terminate()
            self.driver.wait(timeout=30)


# -- fixtures --------------------------------------------------------------------------------

@pytest.fixture
def mlflow_env(monkeypatch: pytest.MonkeyPatch) -> None:
    """Offline, and no tracking URI from the environment."""
    monkeypatch.setenv("MLFLOW_DISABLE_TELEMETRY", "true")
    monkeypatch.setenv("LITELLM_LOCAL_MODEL_COST_MAP", "True")
    monkeypatch.delenv("MLFLOW_TRACKING_URI", raising=False)


@pytest.fixture(scope="module")
def mlflow_uri(tmp_path_factory: pytest.TempPathFactory) -> str:
    """One SQLite store per test module (creating one costs ~1.5 s of migrations); tests find
    their own runs by run id."""
    return f"sqlite:///{tmp_path_factory.mktemp('mlflow')}/mlflow.db"


@pytest.fixture(scope="module")
def mlflow_client(mlflow_uri: str) -> Any:
    from mlflow import MlflowClient

    return MlflowClient(tracking_uri=mlflow_uri)
