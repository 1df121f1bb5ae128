"""Regenerate the MLflow screenshots of the README and docs/study.md.

    python docs/img/make_screenshots.py

Runs the recipe experiment for random seeds 1-3 into a temporary MLflow store (a sequential
multirun), adds a researcher's note to seed 2, serves the store with the `mlflow ui` command a run's
summary prints and drives Debian's headless chromium through chromedriver (apt-get install chromium
chromium-driver; tests/fixtures_mlflow.Browser) to save, in docs/img/:

- mlflow_experiment.png: the link a run's summary prints: every parent run, the decision columns;
- mlflow_run.png: a parent run's page: its description (the decision, links on) and metrics;
- mlflow_pool.png: that run's pool members, by validation mean (the winner first, is_best);
- mlflow_compare.png: MLflow's comparison of the three runs (it plots the holdout delta);
- mlflow_compare_artifacts.png: the same page at the runs' common artifacts (their lineage plots).

The numbers come from SkillCraft-sim: they calibrate the harness, not an LM.
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tests"))
sys.path.insert(0, str(ROOT))

from fixtures_mlflow import Browser, mlflow_ui  # noqa: E402

from gepa_lab.tracking import mlflow_links  # noqa: E402

OUT = Path(__file__).resolve().parent
ENV = {**os.environ, "MLFLOW_DISABLE_TELEMETRY": "true", "LITELLM_LOCAL_MODEL_COST_MAP": "True",
       "HF_DATASETS_OFFLINE": "1", "HF_HUB_OFFLINE": "1"}


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


def screenshots(uri: str, work: Path, sweep: Path) -> None:
    seed2 = next(p for p in sweep.iterdir() if p.is_dir() and "random_seed=2" in p.name)
    links = json.loads((seed2 / "result.json").read_text())["links"]  # what its summary printed
    port = int(shlex.split(links["mlflow_ui_command"])[-1])
    ids = sorted((json.loads((p / "result.json").read_text())["links"]["mlflow_run_id"], p.name)
                 for p in sweep.iterdir() if (p / "result.json").is_file())
    with mlflow_ui(uri, work, port=port) as base, tempfile.TemporaryDirectory() as profile:
        browser = Browser(2000, 800, profile)
        try:
            browser.settle(base)
            browser.open(links["mlflow_run_url"])
            browser.wait_for("holdout_delta_ci", links["mlflow_run_name"], "conclusion")
            browser.save(OUT / "mlflow_experiment.png")
            browser.call("POST", "/window/rect", {"width": 1600, "height": 900})
            browser.click(f"//a[contains(., '{links['mlflow_run_name']}')]")
            browser.wait_for("ELIGIBLE", "Metrics")
            browser.save(OUT / "mlflow_run.png")
            browser.click("//a[contains(., \"this run's pool members\")]")
            browser.wait_for("validation_mean", "is_best", "seed-")
            browser.save(OUT / "mlflow_pool.png")
            browser.call("POST", "/window", {"handle": browser.call("GET", "/window/handles")[0]})  # the first tab
            browser.call("POST", "/window/rect", {"width": 1600, "height": 1100})
            browser.open(mlflow_links.compare_url(base, [links["mlflow_experiment_id"]], [i for i, _ in ids]))
            browser.wait_for("Parallel Coordinates Plot", "holdout_delta")
            for _ in range(120):  # the plot draws after the page's text is there
                if browser.script("return !!document.querySelector('.js-plotly-plot .parcoords')"):
                    break
                time.sleep(0.5)
            time.sleep(2)
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
        uri, sweep = (f"sqlite:///{work / 'mlflow.db'}", work / "sweep") if (work / "mlflow.db").is_file() \
            else make_runs(work)
        screenshots(uri, work, sweep)


if __name__ == "__main__":
    main()
