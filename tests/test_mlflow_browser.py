"""MLflow's UI (3.17) in a real headless browser: `mlflow ui` on a store with two runs; the link
gepa-lab prints for the experiment opens on the parent runs with the decision columns (no filter
to type, no candidate runs in the way), and a researcher's note shows in the table and on the run
page. Needs Debian's `chromium` (`.ci/run` installs it); skipped, saying so, where there is none."""

from __future__ import annotations

import shutil
import subprocess
import tempfile

import pytest
from fixtures_mlflow import mlflow_ui, toy_run

from gepa_lab.note import main as note
from gepa_lab.tracking import mlflow_links

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
pytestmark = [pytest.mark.slow, pytest.mark.usefixtures("mlflow_env"),
              pytest.mark.skipif(CHROMIUM is None, reason="no chromium on this machine: the browser test needs "
                                 "Debian's chromium (apt-get install chromium; .ci/run installs it)")]
# Flags for a closed network: no background connections, no sandbox (CI runs as root).
FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync"]


def dump_dom(url: str, expected: list[str], attempts: int = 3) -> str:
    """The page after its scripts ran (`--dump-dom`), in a wide window so every column renders;
    loaded again (up to `attempts` times) while an expected text is missing (a loaded machine)."""
    dom = ""
    for _ in range(attempts):
        with tempfile.TemporaryDirectory() as profile:
            done = subprocess.run([str(CHROMIUM), *FLAGS, f"--user-data-dir={profile}", "--window-size=3200,1400",
                                   "--virtual-time-budget=30000", "--dump-dom", url],
                                  capture_output=True, text=True, timeout=180)
        dom = done.stdout
        if all(text in dom for text in expected):
            break
    return dom


def test_the_experiment_link_opens_on_parent_runs_with_decision_columns(tmp_path) -> None:
    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    first = toy_run(uri, tmp_path / "run1", experiment="toy-ui", random_seed=1)
    second = toy_run(uri, tmp_path / "run2", experiment="toy-ui", random_seed=2)
    assert note([str(tmp_path / "run2"), "the second seed agrees", "--next", "vary the reflector"]) == 0
    names = {tracker.run_id: f"toy-ui-seed{seed}-" for tracker, seed in ((first, 1), (second, 2))}
    with mlflow_ui(uri, tmp_path) as base:
        url = mlflow_links.experiment_url(base, str(first.experiment_id))
        columns = ["metrics.`holdout_delta`", "tags.`holdout_delta_ci`", "tags.`promotion_eligible`",
                   "tags.`winner`", "metrics.`total_cost_usd`", "metrics.`total_metric_calls`", "tags.`conclusion`"]
        dom = dump_dom(url, [*names.values(), *columns, "the second seed agrees"])
        assert all(name in dom for name in names.values()), dom[-3000:]  # both parent runs
        assert all(f'col-id="{column}"' in dom for column in columns)  # the decision columns
        assert "+0.6000 [+0.6000, +0.6000] 95% CI" in dom and "the second seed agrees" in dom
        assert "seed-" not in dom.replace("-seed1-", "").replace("-seed2-", "")  # no candidate run listed
        assert "it000-" not in dom and "<strong>2</strong> matching runs" in dom
        page = dump_dom(mlflow_links.run_url(base, str(second.experiment_id), str(second.run_id)),
                        ["the second seed agrees"])
        assert "ELIGIBLE" in page and "the second seed agrees" in page  # the description, notes included
        # MLflow's comparison: the holdout delta plotted, the files both runs have listed.
        files = ["lineage.png", "holdout_deltas.png", "winner.md", "winner_diff.txt", "proposals.json"]
        compare = dump_dom(mlflow_links.compare_url(base, [str(first.experiment_id)], list(names)),
                           [f'artifact-name="{name}"' for name in files])
        assert all(f'artifact-name="{name}"' in compare for name in files)
        assert "No common artifacts" not in compare and "holdout_delta" in compare
