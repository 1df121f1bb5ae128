"""The command line: the default experiment, bad input, interrupts, resume, packaging. Most tests
run it in this process (helpers_cli.gepa); signals, a closed pipe and the installed wheel need a
process of their own."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
import zipfile
from pathlib import Path

import pytest
from helpers_cli import gepa

ROOT = Path(__file__).resolve().parents[1]


def gepa_process(*args: str, cwd: Path, timeout: float = 120) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    return subprocess.run([sys.executable, "-m", "gepa_lab", *args], cwd=cwd, env=env, capture_output=True,
                          text=True, timeout=timeout)


def run_dir_of(stdout: str) -> Path:
    line = next(x for x in stdout.splitlines() if x.strip().startswith("record"))
    return Path(line.split(None, 1)[1].strip())


def test_recipe_experiment_runs_to_a_decision(tmp_path):
    done = gepa("experiment=recipe", "tracking=none", "progress=log", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    decision = next(x.split(None, 1)[1] for x in done.stdout.splitlines() if x.strip().startswith("decision"))
    record = run_dir_of(done.stdout)
    assert decision.startswith(("ELIGIBLE: ", "NOT ELIGIBLE: "))
    assert "simulated   SkillCraft-sim: these scores calibrate the harness, not an LM" in done.stdout
    assert record.is_relative_to(tmp_path / "outputs")  # Hydra output dir under the cwd
    result = json.loads((record / "result.json").read_text())
    verdict = "ELIGIBLE" if result["promotion_eligible"] else "NOT ELIGIBLE"
    assert decision == f"{verdict}: {result['promotion_reason']}"
    # No iteration cap by default: the metric budget ends the search, keeping the holdout reserve.
    assert result["stop_reason"] == "metric_budget" and 1000 - 40 - 23 < result["metric_calls"] <= 1000
    assert result["dataset"]["id"] == "skillcraft-sim/recipe"
    assert result["holdout_interval"][0] <= result["holdout_delta"] <= result["holdout_interval"][1]
    experiment = json.loads((record / "experiment.json").read_text())
    assert experiment["config"]["hydra_choices"]["experiment"] == "recipe"
    assert "lm" not in experiment["config"]  # no component uses an LM: none composed, none recorded
    assert "pre-flight: the metric budget (1000 calls) allows" in done.stderr
    iteration_lines = [x for x in done.stderr.splitlines() if "gepa_lab.progress" in x and "] - iteration " in x]
    assert len(iteration_lines) == result["proposals"] > 0


BAD_CONFIG = [
    ("experiment=nope", "unknown option experiment=nope; available: "),
    ("search.max_iteratons=3", "unknown config key 'search.max_iteratons'; did you mean 'max_iterations'?"),
    ("search.algorithm=banana", "unknown config key 'search.algorithm'"),
    ("search.max_iterations=abc", "config key search.max_iterations cannot take 'abc'"),
    ("+search.foo=1", "unknown config key 'search.foo'"),
    ("promotion.min_holdout_improvement=2", "promotion.min_holdout_improvement must be a number between 0 and 1"),
    ("evaluation.workers=0", "evaluation.workers must be an integer >= 1"),
    ("progress=sometimes", "progress must be one of auto, bar, log, off"),
    ("evaluator.famly=weather", "unknown config key 'evaluator.famly'; did you mean 'family'?"),
    ("+evaluator.famly=weather", "unknown config key 'evaluator.famly'; did you mean 'family'?"),
    ("reflector._target_=nowhere.Reflector", "reflector._target_ 'nowhere.Reflector' cannot be imported"),
    ("search.max_iterations", "cannot parse the override 'search.max_iterations'"),
]


@pytest.mark.parametrize("override, expected", BAD_CONFIG, ids=[o for o, _ in BAD_CONFIG])
def test_bad_config_exits_2_with_one_line(tmp_path, override, expected):
    done = gepa(override, cwd=tmp_path)
    assert done.returncode == 2, done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("gepa_lab: error: "), done.stderr
    assert expected in lines[0]
    if override == "experiment=nope":
        assert "recipe" in lines[0].split("available: ")[1].split(", ")
    for internal in ("SearchConfig", "PromotionPolicy", "EvaluationSettings", "SkillCraftEvaluator", "Config'"):
        assert internal not in lines[0]
    assert not (tmp_path / "outputs").exists()  # checked before Hydra creates a run directory


@pytest.mark.parametrize("sweep, expected", [
    ("search.max_iteratons=3,4", "unknown config key 'search.max_iteratons'"),
    ("search.random_seed=1,x", "config key search.random_seed cannot take 'x'"),
    ("search.minibatch_size=1,0", "search.minibatch_size must be an integer >= 1 (got 0)"),
    ("promotion.bootstrap_resamples=2000,1000000000000", "promotion.bootstrap_resamples must be at most 100000"),
    ("reflector._target_=evaluators.skillcraft.reflectors.feedback.FeedbackReflector,nowhere.Reflector",
     "reflector._target_ 'nowhere.Reflector' cannot be imported"),
    ("search.random_seed=1,2 submitter.url=sqlite:///r.db,postgresql://gepa:s3cret@db/revisions",
     "submitter.url holds a password"),
])
def test_every_job_of_a_sweep_is_checked_before_any_job_starts(tmp_path, sweep, expected):
    """Job 1 (or later) is bad, job 0 is fine: the sweep is refused before job 0 runs."""
    done = gepa("-m", "experiment=recipe", "tracking=none", "progress=off", "search.max_iterations=1", *sweep.split(),
                cwd=tmp_path)
    assert done.returncode == 2, done.stderr
    errors = [x for x in done.stderr.splitlines() if x.startswith("gepa_lab: error: ")]
    assert len(errors) == 1 and expected in errors[0], done.stderr
    assert "Traceback" not in done.stderr and "s3cret" not in done.stderr
    assert not (tmp_path / "multirun").exists()  # no job ran, no sweep dir was created


def test_a_url_with_a_password_is_refused_before_anything_is_written(tmp_path):
    done = gepa("experiment=recipe", "tracking=mlflow", "tracking.uri=postgresql://gepa:s3cret@db/mlflow",
                "submit=true", cwd=tmp_path)
    assert done.returncode == 2
    assert done.stderr.strip() == ("gepa_lab: error: tracking.uri holds a password, and it is recorded with the run "
                                   "(.hydra/, experiment.json, MLflow): remove it and keep the secret where its client "
                                   "reads it (PGPASSWORD, MLFLOW_TRACKING_PASSWORD; an LM's key in the variable "
                                   "lm.<role>.api_key_env names)")
    assert not list(tmp_path.iterdir())  # no run dir, no .hydra/, no MLflow store


@pytest.mark.parametrize("argument, expected", [
    ("--foo", "gepa_lab: error: unrecognized arguments: --foo (`python -m gepa_lab --help`)"),
    ("--cfg=everything", "gepa_lab: error: argument --cfg/-c: invalid choice: 'everything' (choose from 'job', "
                         "'hydra', 'all') (`python -m gepa_lab --help`)"),
])
def test_a_bad_command_line_flag_is_one_line(tmp_path, argument, expected):
    done = gepa(argument, "experiment=recipe", cwd=tmp_path)
    assert (done.returncode, done.stderr.strip()) == (2, expected)


def test_an_empty_run_dir_is_refused_not_the_working_directory(tmp_path):
    done = gepa("experiment=recipe", "tracking=none", "hydra.run.dir=", cwd=tmp_path)  # `hydra.run.dir=$UNSET`
    assert done.returncode == 2 and "hydra.run.dir is empty" in done.stderr
    assert not list(tmp_path.iterdir())


def test_the_submitter_is_built_only_to_submit(tmp_path):
    """A submitter setting it refuses matters only to a run that submits."""
    args = ("experiment=recipe", "tracking=none", "progress=off", "search.max_iterations=0", "submitter.url=not-a-url")
    assert gepa(*args, cwd=tmp_path).returncode == 0
    done = gepa(*args, "submit=true", cwd=tmp_path)
    assert done.returncode == 2
    assert done.stderr.strip().splitlines()[-1].startswith(
        "gepa_lab: error: submitter: ValueError: submitter.url 'not-a-url' is not a database URL")


def test_a_reader_that_leaves_early_ends_the_run_quietly(tmp_path):
    """`python -m gepa_lab ... | head`: the summary meets a closed pipe after the run is recorded."""
    proc = subprocess.Popen([sys.executable, "-m", "gepa_lab", "experiment=recipe", "tracking=none", "progress=off",
                             "search.max_iterations=1", f"hydra.run.dir={tmp_path / 'run'}"], cwd=tmp_path,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    proc.stdout.close()  # the reader is gone before the first line
    stderr = proc.stderr.read()
    assert proc.wait(timeout=120) == 141, stderr
    assert "Traceback" not in stderr and "BrokenPipeError" not in stderr and "Exception ignored" not in stderr
    assert (tmp_path / "run" / "result.json").is_file()


def test_a_bad_evaluator_value_exits_2(tmp_path):
    done = gepa("experiment=recipe", "tracking=none", "evaluator.token_budget=-3", cwd=tmp_path)
    assert done.returncode == 2
    assert done.stderr.strip().splitlines()[-1] == (
        "gepa_lab: error: evaluator: ValueError: token_budget must be a positive integer, got -3")
    assert not list(tmp_path.rglob("experiment.json"))


@pytest.mark.parametrize(
    "override, expected",
    [
        ("dataset.path=does/not/exist", "dataset directory not found"),
        ("dataset.seed_artifact=missing.json", "seed artifact file not found"),
        ("dataset.holdout=nope.jsonl", "dataset split file not found"),
        ("submitter=none submit=true", "without a revision submitter"),
    ],
)
def test_bad_input_exits_1_with_one_line(tmp_path, override, expected):
    done = gepa("experiment=recipe", "tracking=none", *override.split(), cwd=tmp_path)
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
    args = ["experiment=recipe", "tracking=none", "progress=log", "search.max_iterations=60",
            "search.max_metric_calls=3000"]
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
    assert (run_dir / "experiment.json").exists() and not (run_dir / "result.json").exists()
    kinds = [json.loads(x)["kind"] for x in (run_dir / "events.jsonl").read_text().splitlines()]
    assert kinds[-1] == "run_interrupted"

    resumed = gepa(*args, f"resume={run_dir}", "progress=off", cwd=tmp_path)
    assert resumed.returncode == 0, resumed.stderr
    assert run_dir_of(resumed.stdout) == run_dir
    assert json.loads((run_dir / "result.json").read_text())["stop_reason"] in ("max_iterations", "metric_budget")


@pytest.mark.slow
def test_non_editable_install_runs_the_recipe_experiment(tmp_path):
    """The wheel carries the config and the recipe data, so no checkout is needed."""
    wheels, target, cwd, source = tmp_path / "wheels", tmp_path / "site", tmp_path / "elsewhere", tmp_path / "src"
    cwd.mkdir()
    # Built from a copy: setuptools writes build/ and *.egg-info beside the sources, never into the checkout.
    shutil.copytree(ROOT, source, ignore=shutil.ignore_patterns(
        ".git", ".venv", "build", "*.egg-info", "outputs", "multirun", "mlruns", "__pycache__", ".*_cache",
        ".hypothesis", "reports", "notebooks"))
    subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-q",
                    "-w", str(wheels), str(source)], check=True, capture_output=True, timeout=300)
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
    result = json.loads((run_dir_of(done.stdout) / "result.json").read_text())
    assert result["stop_reason"] == "metric_budget" and result["dataset"]["id"] == "skillcraft-sim/recipe"
    assert run_dir_of(done.stdout).is_relative_to(cwd / "outputs")
    assert str(target) in subprocess.run(
        [sys.executable, "-c", "import gepa_lab; print(gepa_lab.__file__)"], cwd=cwd, env=env,
        capture_output=True, text=True, check=True).stdout  # really the installed copy


@pytest.mark.slow
def test_resubmitting_a_submitted_run_exits_0_saying_nothing_to_do(tmp_path):
    args = ("experiment=recipe", "tracking=none", "progress=off", "submit=true",
            f"submitter.url=sqlite:///{tmp_path / 'revisions.db'}")
    first = gepa(*args, cwd=tmp_path)
    assert first.returncode == 0, first.stderr
    record = run_dir_of(first.stdout)
    revision = json.loads((record / "result.json").read_text())["revision"]
    events = (record / "events.jsonl").read_bytes()
    again = gepa(*args, f"resume={record}", cwd=tmp_path)
    assert again.returncode == 0, again.stderr
    assert again.stdout.strip() == (f"gepa_lab: {record}: the run already finished and was already submitted as "
                                    f"revision {revision['revision_id']} ({revision['status']}); nothing to do")
    assert (record / "events.jsonl").read_bytes() == events


def test_a_refused_sweep_job_is_named_by_number_and_its_own_values_without_secrets(tmp_path):
    done = gepa("-m", "experiment=recipe", "tracking=none", "progress=off", "search.random_seed=1,2",
                "search.minibatch_size=2,0", cwd=tmp_path)
    assert done.returncode == 2
    assert done.stderr.strip() == ("gepa_lab: error: sweep job 1 (search.random_seed=1 search.minibatch_size=0): "
                                   "search.minibatch_size must be an integer >= 1 (got 0)")
    done = gepa("-m", "experiment=recipe", "tracking=none", "progress=off", "search.random_seed=1,2",
                "submitter.url=sqlite:///r.db,postgresql://gepa:s3cret@db/revisions", cwd=tmp_path)
    assert done.returncode == 2 and "s3cret" not in done.stderr
    assert done.stderr.strip().startswith("gepa_lab: error: sweep job 1 (search.random_seed=1 "
                                          "submitter.url=postgresql://gepa:[REDACTED]@db/revisions): submitter.url holds a password, and it is "
                                          "recorded with the run")
