"""The command line: the default experiment, bad input, interrupts, resume, packaging."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def gepa(*args: str, cwd: Path, timeout: float = 120) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    return subprocess.run([sys.executable, "-m", "gepa_lab", *args], cwd=cwd, env=env, capture_output=True,
                          text=True, timeout=timeout)


def run_dir_of(stdout: str) -> Path:
    line = next(x for x in stdout.splitlines() if x.strip().startswith("record"))
    return Path(line.split(None, 1)[1].strip())


def test_recipe_experiment_runs_to_a_decision(tmp_path):
    done = gepa("experiment=recipe", "tracking=none", "progress=log", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert "decision" in done.stdout and "ELIGIBLE" in done.stdout
    record = run_dir_of(done.stdout)
    assert record.is_relative_to(tmp_path / "outputs")  # Hydra output dir under the cwd
    result = json.loads((record / "result.json").read_text())
    assert result["stop_reason"] == "max_iterations" and result["metric_calls"] <= 1000
    assert result["dataset"]["id"] == "skillcraft-sim/recipe"
    experiment = json.loads((record / "experiment.json").read_text())
    assert experiment["config"]["hydra_choices"]["experiment"] == "recipe"
    assert "pre-flight" in done.stderr and "iteration 10/10" in done.stderr


@pytest.mark.parametrize(
    "override, expected",
    [
        ("experiment=nope", "Could not find 'experiment/nope'; available: recipe"),
        ("search.max_iteratons=3", "Key 'max_iteratons' not in 'SearchGroupConfig'"),
        ("search.max_iterations=abc", "could not be converted to Integer"),
        ("+search.foo=1", "unknown config key 'search.foo'"),
        ("promotion.min_holdout_improvement=2", "min_holdout_improvement must be between 0 and 1"),
        ("evaluation.workers=0", "evaluation.workers must be at least 1"),
    ],
)
def test_bad_config_exits_2_with_one_line(tmp_path, override, expected):
    done = gepa(override, cwd=tmp_path)
    assert done.returncode == 2
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("gepa_lab: error: ")
    assert expected in lines[0]
    assert not (tmp_path / "outputs").exists()  # nothing started


@pytest.mark.parametrize(
    "override, expected",
    [
        ("dataset.path=does/not/exist", "dataset directory not found"),
        ("dataset.seed_artifact=missing.json", "seed artifact file not found"),
        ("dataset.holdout=nope.jsonl", "dataset split file not found"),
        ("submit=true", "without a revision submitter"),
    ],
)
def test_bad_input_exits_1_with_one_line(tmp_path, override, expected):
    done = gepa("experiment=recipe", "tracking=none", override, cwd=tmp_path)
    assert done.returncode == 1, done.stderr
    errors = [x for x in done.stderr.splitlines() if x.startswith("gepa_lab: error:")]
    assert len(errors) == 1 and expected in errors[0]
    assert not list((tmp_path / "outputs").rglob("result.json"))


def test_tampered_dataset_is_refused(tmp_path):
    data = tmp_path / "data"
    data.mkdir()
    src = ROOT / "datasets" / "skillcraft" / "recipe"
    for name in ("feedback.jsonl", "validation.jsonl", "holdout.jsonl", "manifest.json", "seed_skill.json"):
        (data / name).write_text((src / name).read_text())
    rows = (data / "validation.jsonl").read_text().splitlines()
    row = json.loads(rows[0])
    row["input"] += " (edited)"
    (data / "validation.jsonl").write_text("\n".join([json.dumps(row)] + rows[1:]) + "\n")
    done = gepa("experiment=recipe", "tracking=none", f"dataset.path={data}", cwd=tmp_path)
    assert done.returncode == 1
    assert "does not match its manifest digest" in done.stderr


def test_sigterm_checkpoints_exits_130_and_resume_finishes(tmp_path):
    args = ["experiment=recipe", "tracking=none", "progress=log", "search.max_iterations=400",
            "search.max_metric_calls=20000"]
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    proc = subprocess.Popen([sys.executable, "-m", "gepa_lab", *args], cwd=tmp_path, env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 60
        seen = ""
        while "iteration 3/" not in seen and time.monotonic() < deadline:
            line = proc.stderr.readline()
            if not line:
                break
            seen += line
        assert "iteration 3/" in seen, seen
        proc.send_signal(signal.SIGTERM)
        out, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 130, err
    assert "resume=" in err
    run_dir = next((tmp_path / "outputs").glob("*/*"))
    assert (run_dir / "checkpoint.json").exists() and not (run_dir / "result.json").exists()
    kinds = [json.loads(x)["kind"] for x in (run_dir / "events.jsonl").read_text().splitlines()]
    assert kinds[-1] == "run_interrupted"

    resumed = gepa(*args, f"resume={run_dir}", "progress=off", cwd=tmp_path, timeout=300)
    assert resumed.returncode == 0, resumed.stderr
    assert run_dir_of(resumed.stdout) == run_dir
    assert json.loads((run_dir / "result.json").read_text())["stop_reason"] in ("max_iterations", "metric_budget")


def test_non_editable_install_runs_the_recipe_experiment(tmp_path):
    """The wheel carries the config and the recipe data, so no checkout is needed."""
    wheels, target, cwd = tmp_path / "wheels", tmp_path / "site", tmp_path / "elsewhere"
    cwd.mkdir()
    subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-q",
                    "-w", str(wheels), str(ROOT)], check=True, capture_output=True, timeout=300)
    wheel = next(wheels.glob("gepa_lab-*.whl"))
    names = set(zipfile.ZipFile(wheel).namelist())
    assert {"gepa_lab/conf/config.yaml", "gepa_lab/conf/experiment/recipe.yaml",
            "gepa_lab/bundled/skillcraft/recipe/manifest.json"} <= names
    subprocess.run([sys.executable, "-m", "pip", "install", "--no-deps", "-q", "--target", str(target), str(wheel)],
                   check=True, capture_output=True, timeout=300)
    env = {**os.environ, "PYTHONPATH": str(target)}
    done = subprocess.run([sys.executable, "-m", "gepa_lab", "experiment=recipe", "tracking=none", "progress=off"],
                          cwd=cwd, env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert "decision" in done.stdout
    assert str(target) in subprocess.run(
        [sys.executable, "-c", "import gepa_lab; print(gepa_lab.__file__)"], cwd=cwd, env=env,
        capture_output=True, text=True, check=True).stdout  # really the installed copy
