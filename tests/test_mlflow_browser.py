"""MLflow's UI (3.17) in a real headless browser, driven as a researcher clicks: two runs in one
store, the second with a note; the UI served by exactly the command its summary prints. From that
summary's URL alone the decision columns of every parent run show at once (0 clicks), the winner's
diff two clicks later; the run's pool members open sorted by validation, the winner first; MLflow's
comparison of the runs plots the holdout delta and lists the files they share. Needs Debian's
`chromium` and `chromium-driver` (`.ci/run` installs them); skipped, saying so, where they are missing."""

from __future__ import annotations

import json
import shlex
import shutil
import tempfile

import pytest
from fixtures_mlflow import CHROMIUM, Browser, mlflow_ui, toy_run

from gepa_lab.note import main as note
from gepa_lab.tracking import mlflow_links

pytestmark = [pytest.mark.slow, pytest.mark.usefixtures("mlflow_env"),
              pytest.mark.skipif(CHROMIUM is None or shutil.which("chromedriver") is None,
                                 reason="no chromium / chromedriver here: the browser test needs Debian's chromium "
                                        "chromium-driver (apt-get install chromium chromium-driver; .ci/run does)")]
DECISION_COLUMNS = ["holdout_delta", "holdout_delta_ci", "promotion_eligible", "winner", "total_cost_usd",
                    "total_metric_calls", "conclusion", "promotion_reason"]


def test_from_the_summary_url_decisions_at_once_and_the_winners_diff_in_two_clicks(tmp_path) -> None:
    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    first = toy_run(uri, tmp_path / "run1", experiment="toy-ui", random_seed=1)
    second = toy_run(uri, tmp_path / "run2", experiment="toy-ui", random_seed=2)
    assert note([str(tmp_path / "run2"), "the second seed agrees", "--next", "vary the reflector"]) == 0
    links = json.loads((tmp_path / "run2" / "result.json").read_text())["links"]
    url, command = links["mlflow_run_url"], shlex.split(links["mlflow_ui_command"])  # what the summary prints
    assert command[:3] == ["mlflow", "ui", "--backend-store-uri"] and command[3] == uri and command[4] == "--port"
    names = [f"toy-ui-seed{seed}-" for seed in (2, 1)]
    with mlflow_ui(uri, tmp_path, port=int(command[5])) as base, tempfile.TemporaryDirectory() as profile:
        assert url.startswith(base + "/#/")  # the URL reaches the server that command started
        browser = Browser(2400, 1000, profile)
        try:
            browser.settle(base)
            browser.open(url)
            page = browser.wait_for(*names, *DECISION_COLUMNS, "the second seed agrees")
            assert browser.clicks == 0 and "2 matching runs" in page  # every parent, no candidate run in the way
            assert page.index(links["mlflow_run_name"]) < page.index(names[1])  # newest first: this run on top
            assert "+0.6000 [+0.6000, +0.6000] 95% CI" in page
            browser.click(f"//a[contains(., '{links['mlflow_run_name']}')]")  # the run's page
            browser.wait_for("ELIGIBLE", "the second seed agrees")  # its description, notes included
            browser.click("//a[contains(., \"the winner's diff to the seed\")]")
            diff = browser.wait_for("+++ winner", "+3. Check the improved result.")
            assert browser.clicks == 2 and "winner_diff.txt" in diff
            browser.open(mlflow_links.run_url(base, links["mlflow_experiment_id"], links["mlflow_run_id"]))
            browser.wait_for("ELIGIBLE")
            browser.click("//a[contains(., \"this run's pool members\")]")
            pool = browser.wait_for("validation_mean", "is_best", "it000-", "seed-")
            assert pool.index("it000-") < pool.index("seed-") and "true" in pool  # the winner first, marked
            browser.open(mlflow_links.compare_url(base, [str(links["mlflow_experiment_id"])],
                                                  [first.run_id, second.run_id]))  # what `report` links
            compare = browser.wait_for("Parallel Coordinates Plot", "holdout_delta")
            assert "No common artifacts" not in compare
        finally:
            browser.close()
