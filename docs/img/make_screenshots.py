"""Regenerate the MLflow screenshots of the README and docs/study.md.

    python docs/img/make_screenshots.py

Runs the recipe experiment for random seeds 1-3 into a temporary MLflow store (a sequential
multirun), adds a researcher's note to seed 2, serves the store with `mlflow ui` and drives Debian's
headless chromium through chromedriver (W3C WebDriver over HTTP: apt-get install chromium
chromium-driver) to save, in docs/img/:

- mlflow_experiment.png: the link a run prints for its experiment: parent runs, decision columns;
- mlflow_run.png: a parent run's artifacts, its holdout-deltas plot open;
- mlflow_compare.png: MLflow's comparison of the three runs (it plots the holdout delta);
- mlflow_compare_artifacts.png: the same page at the runs' common artifacts (their lineage plots).

The numbers come from SkillCraft-sim: they calibrate the harness, not an LM.
"""

from __future__ import annotations

import argparse
import base64
import json
import os
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tests"))
sys.path.insert(0, str(ROOT))

from fixtures_mlflow import free_port, mlflow_ui  # noqa: E402

from gepa_lab.tracking import mlflow_links  # noqa: E402

OUT = Path(__file__).resolve().parent
ENV = {**os.environ, "MLFLOW_DISABLE_TELEMETRY": "true", "LITELLM_LOCAL_MODEL_COST_MAP": "True",
       "HF_DATASETS_OFFLINE": "1", "HF_HUB_OFFLINE": "1"}
FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync"]
ELEMENT = "element-6066-11e4-a52e-4f735466cecf"  # the W3C WebDriver element key
# The UI's own settings (localStorage, `<key>_v<version>`): the assistant panel closed.
UI_SETTINGS = {"mlflow.assistant.panelOpen_v1": "false", "mlflow.assistant.fab.autoOpenedOnFirstLoad_v1": "true"}


class Browser:
    """A chromedriver session: just the W3C calls this script needs."""

    def __init__(self, driver: str, width: int, height: int, profile: str):
        self.base = driver
        caps = {"alwaysMatch": {"goog:chromeOptions": {"binary": _chromium(), "args": [
            *FLAGS, f"--window-size={width},{height}", f"--user-data-dir={profile}"]}}}
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

    def wait_for(self, *texts: str, timeout: float = 120.0) -> None:
        deadline = time.monotonic() + timeout
        while not all(self.script("return document.body.innerText.includes(arguments[0])", t) for t in texts):
            if time.monotonic() > deadline:
                self.save(Path(tempfile.gettempdir()) / "make_screenshots-failed.png")
                raise RuntimeError(f"the page never showed {texts}")
            time.sleep(0.5)
        time.sleep(1.5)  # let the last requests (images, charts) land

    def click(self, xpath: str) -> None:
        element = self.call("POST", "/element", {"using": "xpath", "value": xpath})[ELEMENT]
        self.script("arguments[0].scrollIntoView({block: 'center'}); arguments[0].click()", {ELEMENT: element})

    def save(self, path: Path) -> None:
        path.write_bytes(base64.b64decode(self.call("GET", "/screenshot")))
        print(f"wrote {path}")

    def close(self) -> None:
        self.call("DELETE", "")


def _chromium() -> str:
    for name in ("/usr/bin/chromium", "/usr/bin/chromium-browser"):
        if Path(name).is_file():
            return name
    raise SystemExit("no chromium: apt-get install chromium chromium-driver")


@contextmanager
def chromedriver() -> Iterator[str]:
    port = free_port()
    proc = subprocess.Popen(["chromedriver", f"--port={port}"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    base = f"http://127.0.0.1:{port}"
    try:
        for _ in range(100):
            try:
                with urllib.request.urlopen(f"{base}/status", timeout=2):
                    break
            except OSError:
                time.sleep(0.2)
        yield base
    finally:
        proc.terminate()
        proc.wait(timeout=30)


def make_runs(work: Path) -> tuple[str, Path]:
    uri = f"sqlite:///{work / 'mlflow.db'}"
    sweep = work / "sweep"
    subprocess.run([sys.executable, "-m", "gepa_lab", "-m", "experiment=recipe", "search.random_seed=1,2,3",
                    f"tracking.uri={uri}", f"hydra.sweep.dir={sweep}", "progress=off"], cwd=work, env=ENV,
                   check=True, stdout=subprocess.DEVNULL)
    seed2 = next(p for p in sweep.iterdir() if p.is_dir() and "random_seed=2" in p.name)
    subprocess.run([sys.executable, "-m", "gepa_lab.note", str(seed2), "gain holds on seed 2 too",
                    "--next", "try a smaller minibatch"], cwd=work, env=ENV, check=True, stdout=subprocess.DEVNULL)
    return uri, sweep


def screenshots(uri: str, work: Path) -> None:
    from mlflow import MlflowClient

    client = MlflowClient(tracking_uri=uri)
    experiment = client.get_experiment_by_name("gepa-lab").experiment_id
    runs = sorted(client.search_runs([experiment], ""), key=lambda r: r.data.tags["random_seed"])
    ids = [r.info.run_id for r in runs]
    with mlflow_ui(uri, work) as base, chromedriver() as driver, tempfile.TemporaryDirectory() as profile:
        browser = Browser(driver, 2000, 800, profile)
        try:
            browser.open(base + "/")
            for key, value in UI_SETTINGS.items():
                browser.script("window.localStorage.setItem(arguments[0], arguments[1])", key, value)
            browser.open(mlflow_links.experiment_url(base, experiment))
            browser.wait_for("holdout_delta_ci", runs[0].info.run_name, "conclusion")
            browser.save(OUT / "mlflow_experiment.png")
            browser.call("POST", "/window/rect", {"width": 1600, "height": 900})
            browser.open(mlflow_links.run_url(base, experiment, ids[0]).replace(
                "?", "/artifacts/holdout_deltas.png?"))
            browser.wait_for("holdout_deltas.png", "winner_diff.txt")
            browser.save(OUT / "mlflow_run.png")
            browser.call("POST", "/window/rect", {"width": 1600, "height": 1100})
            browser.open(mlflow_links.compare_url(base, [experiment], ids))
            browser.wait_for("Parallel Coordinates Plot", "holdout_delta")
            browser.save(OUT / "mlflow_compare.png")
            browser.call("POST", "/window/rect", {"width": 1600, "height": 700})  # MLflow leaves the rest blank
            browser.click("//*[normalize-space(text())='lineage.png']")
            browser.wait_for("lineage.png")
            browser.script("document.evaluate(\"//*[normalize-space(text())='Artifacts']\", document, null, 9, null)"
                           ".singleNodeValue.scrollIntoView({block: 'start'})")
            time.sleep(2)
            browser.save(OUT / "mlflow_compare_artifacts.png")
        finally:
            browser.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--work", metavar="DIR", help="keep the runs and their store here (default: a temporary "
                        "folder); run again with the same --work to take the screenshots only")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="gepa-lab-shots-") as tmp:
        work = Path(args.work or tmp)
        work.mkdir(parents=True, exist_ok=True)
        uri = f"sqlite:///{work / 'mlflow.db'}" if (work / "mlflow.db").is_file() else make_runs(work)[0]
        screenshots(uri, work)


if __name__ == "__main__":
    main()
