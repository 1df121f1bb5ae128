"""Sweeps (docs/study.md): Hydra multirun on the basic, joblib and submitit_local launchers, one
MLflow parent run per job tagged with the sweep id, re-running a sweep (finished jobs skipped,
killed ones resumed), one-line errors from jobs in worker processes, and the sweep report."""

from __future__ import annotations

import csv
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from helpers_cli import gepa as in_process
from hydra import compose, initialize_config_dir

from gepa_lab.cli import sweep_id
from gepa_lab.config import register_configs
from gepa_lab.runs.record import run_state

ROOT = Path(__file__).resolve().parents[1]
CONF = ROOT / "conf"
SCRIPTS = Path(__file__).resolve().parent / "scripts"
# Small, fast jobs: one proposal each (and, with MLflow, no plots).
FAST = ("progress=off", "search.max_iterations=1")
NO_PLOTS = "tracking.plots=false"


def gepa(*args: str, cwd: Path, env: dict[str, str] | None = None, timeout: float = 240,
         module: str = "gepa_lab") -> subprocess.CompletedProcess:
    full = {**os.environ, "PYTHONUNBUFFERED": "1", **(env or {})}
    full.pop("MLFLOW_TRACKING_URI", None)
    return subprocess.run([sys.executable, "-m", module, *args], cwd=cwd, env=full, capture_output=True, text=True,
                          timeout=timeout)


def mlflow_parents(uri: str, **tags: str) -> list[Any]:
    from mlflow import MlflowClient

    client = MlflowClient(tracking_uri=uri)
    experiment = client.get_experiment_by_name("gepa-lab")
    where = " and ".join(["tags.`gepa.run_kind` = 'parent'", *(f"tags.`{k}` = '{v}'" for k, v in tags.items())])
    return list(client.search_runs([experiment.experiment_id], where, max_results=1000))


def nested_keys(uri: str, parent_id: str) -> list[str]:
    """The parent's pool-member runs (in the sibling candidates experiment)."""
    from fixtures_mlflow import candidate_runs
    from mlflow import MlflowClient

    return [r.data.tags["gepa.key"] for r in candidate_runs(MlflowClient(tracking_uri=uri), parent_id)]


def report(capsys: Any, *args: str) -> tuple[int, str]:
    """`python -m gepa_lab.report ...`, in this process (MLflow is imported once)."""
    from gepa_lab.report import main

    capsys.readouterr()
    code = main(list(args))
    return code, capsys.readouterr().out


def job_dirs(sweep: Path) -> list[Path]:
    return sorted((p for p in sweep.iterdir() if p.is_dir() and p.name[0].isdigit()), key=lambda p: int(p.name.split("_")[0]))


def result(job: Path) -> dict[str, Any]:
    return json.loads((job / "result.json").read_text())


# -- fast ------------------------------------------------------------------------------------------
def test_the_sweep_id_is_derived_from_the_sweep_dir(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert sweep_id("multirun/a") == sweep_id(tmp_path / "multirun" / "a") == sweep_id("multirun/x/../a")
    assert sweep_id("multirun/a") != sweep_id("multirun/b")
    assert len(sweep_id("multirun/a")) == 12 and int(sweep_id("multirun/a"), 16) >= 0


@pytest.mark.parametrize("launcher, expected", [
    ("parallel", {"_target_": "hydra_plugins.hydra_joblib_launcher.joblib_launcher.JoblibLauncher", "n_jobs": -1,
                  "batch_size": "1"}),
    ("joblib", {"_target_": "hydra_plugins.hydra_joblib_launcher.joblib_launcher.JoblibLauncher"}),
    ("slurm", {"_target_": "hydra_plugins.hydra_submitit_launcher.submitit_launcher.SlurmLauncher",
               "partition": None, "timeout_min": 240, "cpus_per_task": 3, "mem_gb": 4, "max_num_timeout": 0,
               "array_parallelism": 16}),
    ("slurm_local", {"_target_": "hydra_plugins.hydra_submitit_launcher.submitit_launcher.LocalLauncher",
                     "timeout_min": 240, "cpus_per_task": 3}),
    ("submitit_slurm", {"_target_": "hydra_plugins.hydra_submitit_launcher.submitit_launcher.SlurmLauncher"}),
])
def test_launcher_presets_compose_on_the_plugins_configs(launcher, expected):
    register_configs()
    with initialize_config_dir(config_dir=str(CONF), version_base="1.3"):
        cfg = compose(config_name="config", overrides=[f"hydra/launcher={launcher}", "evaluation.workers=3"],
                      return_hydra_config=True)
    from omegaconf import OmegaConf

    node = OmegaConf.to_container(cfg.hydra.launcher, resolve=True)
    assert {k: node[k] for k in expected} == expected
    assert str(cfg.hydra.hydra_logging.handlers.console.stream) == "ext://sys.stderr"


def test_the_slurm_preset_is_checked_against_the_plugin_schema():
    from hydra.errors import ConfigCompositionException

    register_configs()
    with initialize_config_dir(config_dir=str(CONF), version_base="1.3"), \
            pytest.raises(ConfigCompositionException):
        compose(config_name="config", overrides=["hydra/launcher=slurm", "hydra.launcher.partitoin=cpu"],
                return_hydra_config=True)


def test_resume_is_refused_under_multirun_with_one_line(tmp_path):
    done = in_process("-m", "experiment=recipe", "tracking=none", f"resume={tmp_path}", cwd=tmp_path)
    assert done.returncode == 2, done.stderr
    errors = [x for x in done.stderr.splitlines() if x.startswith("gepa_lab: error: ")]
    assert len(errors) == 1 and "to continue a sweep, run the same command with hydra.sweep.dir=" in errors[0]
    assert "Traceback" not in done.stderr


@pytest.mark.parametrize("launcher, setting, expected", [
    ("parallel", "hydra.launcher.n_jobs=0", "hydra.launcher.n_jobs=0 runs no job; set how many jobs run at once "
                                            "(-1: one per CPU)"),
    ("slurm_local", "hydra.launcher.timeout_min=0", "hydra.launcher.timeout_min must be an integer >= 1 (got 0)"),
    ("slurm_local", "hydra.launcher.cpus_per_task=0", "hydra.launcher.cpus_per_task must be an integer >= 1 (got 0)"),
    ("slurm", "hydra.launcher.array_parallelism=0", "hydra.launcher.array_parallelism must be an integer >= 1 (got 0)"),
])
def test_a_bad_launcher_setting_is_one_line_before_any_job(tmp_path, launcher, setting, expected):
    done = in_process("-m", "experiment=recipe", "tracking=none", f"hydra/launcher={launcher}", setting,
                      "search.random_seed=1,2", *FAST, cwd=tmp_path)
    assert (done.returncode, done.stderr.strip()) == (2, f"gepa_lab: error: {expected}")
    assert not (tmp_path / "multirun").exists()


def test_an_empty_sweep_dir_is_refused_not_the_working_directory(tmp_path):
    done = in_process("-m", "experiment=recipe", "tracking=none", "hydra.sweep.dir=", "search.random_seed=1,2", *FAST,
                      cwd=tmp_path)
    assert (done.returncode, done.stderr.strip()) == (
        2, "gepa_lab: error: hydra.sweep.dir is empty (an unset variable?); name the sweep's directory")
    assert not list(tmp_path.iterdir())


@pytest.mark.slow
def test_lm_settings_are_refused_only_when_no_job_uses_an_lm(tmp_path):
    lm = ("lm.reflection.api_base=http://127.0.0.1:9/v1", "lm.reflection.api_key_env=null")
    offline = gepa("-m", "experiment=recipe", "tracking=none", "search.random_seed=1,2", *lm, *FAST, cwd=tmp_path)
    assert offline.returncode == 2 and offline.stderr.strip() == (
        "gepa_lab: error: lm.reflection.api_base is set, but no component of this run uses an LM; pick one that "
        "does (reflector=lm, evaluator=prompt, skillcraft_dspy or dspy_program) or drop it")
    mixed = gepa("-m", "experiment=recipe", "tracking=none", "reflector=feedback,dspy", *lm, "progress=off",
                 "search.max_iterations=0", f"hydra.sweep.dir={tmp_path / 'sweep'}", cwd=tmp_path)
    assert mixed.returncode == 0, mixed.stderr[-2000:]
    assert len(job_dirs(tmp_path / "sweep")) == 2


def test_an_experiment_s_own_sweep_is_checked_job_by_job_before_any_starts(tmp_path):
    """`hydra.sweeper.params` in an experiment file (on a search path given on the command line)
    expand into jobs like command-line sweeps; the pre-flight composes each of them."""
    conf = tmp_path / "conf" / "experiment"
    conf.mkdir(parents=True)
    (conf / "mine.yaml").write_text("# @package _global_\nexperiment_name: mine\nhydra:\n  sweeper:\n    params:\n"
                                    "      promotion.bootstrap_resamples: 2000,1000000000000\n")
    done = in_process("-m", f"hydra.searchpath=[file://{tmp_path / 'conf'}]", "experiment=mine", "tracking=none",
                      *FAST, "search.random_seed=1,2", cwd=tmp_path)
    assert done.returncode == 2, done.stderr
    assert done.stderr.strip().startswith("gepa_lab: error: sweep job 2 (promotion.bootstrap_resamples=1000000000000 "
                                          "search.random_seed=1): promotion.bootstrap_resamples must be at most 100000")
    assert not (tmp_path / "multirun").exists()


def test_report_errors_are_one_line(tmp_path):
    done = gepa("--sweep", "abc", "--experiment", "recipe", cwd=tmp_path, module="gepa_lab.report")
    assert done.returncode == 2 and done.stderr.count("\n") == 1 and "not allowed with" in done.stderr
    done = gepa("--sweep", "abc", cwd=tmp_path, module="gepa_lab.report")
    assert done.returncode == 1 and done.stderr.count("\n") == 1
    assert done.stderr.startswith("gepa_lab.report: error: no MLflow store at ")
    assert not (tmp_path / "mlflow.db").exists()


# -- slow: real sweeps -----------------------------------------------------------------------------
@pytest.mark.slow
def test_a_joblib_sweep_of_four_jobs_reruns_as_skips_and_the_report_lists_every_job(tmp_path, capsys):
    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    sweep = tmp_path / "sweep"
    args = ("-m", "experiment=recipe,weather", "search.random_seed=1,2", "hydra/launcher=parallel",
            "hydra.launcher.n_jobs=4", f"hydra.sweep.dir={sweep}", f"tracking.uri={uri}", NO_PLOTS, *FAST)
    done = gepa(*args, cwd=tmp_path)
    assert done.returncode == 0, done.stderr[-3000:]
    assert done.stdout.count("\n  record ") == 4 and "[HYDRA]" not in done.stdout  # launcher logs on stderr
    assert "Joblib.Parallel(n_jobs=4" in done.stderr
    jobs = job_dirs(sweep)
    assert len(jobs) == 4 and all((j / "result.json").is_file() for j in jobs)

    # One parent run per job, tagged with the sweep; every nested run once.
    parents = mlflow_parents(uri, sweep_id=sweep_id(sweep))
    assert len(parents) == 4
    assert sorted((p.data.tags["experiment"], p.data.tags["random_seed"]) for p in parents) == [
        ("recipe", "1"), ("recipe", "2"), ("weather", "1"), ("weather", "2")]
    assert sorted(p.data.tags["sweep_job"] for p in parents) == ["0", "1", "2", "3"]
    assert {p.data.tags["sweep_dir"] for p in parents} == {str(sweep)}
    assert "sweep.id" not in parents[0].data.params  # a tag, not a setting
    for parent in parents:
        assert parent.info.status == "FINISHED"
        run_dir = Path(parent.data.tags["run_dir"])
        keys = nested_keys(uri, parent.info.run_id)
        assert sorted(keys) == sorted({*keys}) and len(keys) == len(result(run_dir)["pool"])
    assert len(mlflow_parents(uri, sweep_id=sweep_id(sweep), experiment="weather")) == 2

    # The same command again: every job finished, so every job is skipped; nothing new in MLflow.
    stamps = {j: (j / "result.json").stat().st_mtime_ns for j in jobs}
    again = gepa(*args, cwd=tmp_path)
    assert again.returncode == 0, again.stderr[-3000:]
    assert again.stdout.count("  skipped     finished in an earlier run of this sweep") == 4
    assert {j: (j / "result.json").stat().st_mtime_ns for j in jobs} == stamps
    assert len(mlflow_parents(uri)) == 4

    # The report: every job, as MLflow and the run records have it.
    code, printed = report(capsys, "--sweep", str(sweep), "--tracking-uri", uri, "--out", str(tmp_path / "report"))
    assert code == 0
    rows = list(csv.DictReader((tmp_path / "report" / "report.csv").open()))
    assert len(rows) == 4
    for row in rows:
        record = result(Path(row["run_dir"]))
        assert int(row["metric_calls"]) == record["metric_calls"]
        assert row["eligible"] == str(record["promotion_eligible"])
        assert row["stop_reason"] == record["stop_reason"] == "max_iterations"
        assert abs(float(row["holdout_delta"]) - record["holdout_delta"]) < 1e-9
        assert abs(float(row["cost_usd"]) - sum(record["cost_usd"].values())) < 1e-6
        low, high = record["holdout_interval"]
        assert abs(float(row["holdout_delta_low"]) - low) < 1e-9 and abs(float(row["holdout_delta_high"]) - high) < 1e-9
        winner = "seed" if record["best_id"] == record["seed_id"] else record["best_id"][:12]
        assert row["winner"] == winner and row["simulated"] == "True"
    table = [line.split() for line in printed.splitlines()[1:5]]
    assert sorted((p[0], p[1]) for p in table) == [("recipe", "1"), ("recipe", "2"), ("weather", "1"), ("weather", "2")]
    markdown = (tmp_path / "report" / "report.md").read_text()
    assert markdown.count("\n| recipe |") == 2 and markdown.count("\n| weather |") == 2
    assert "recipe: 2 runs, 2 finished" in markdown and "calibrate the harness, not an LM" in printed
    assert (tmp_path / "report" / "holdout_delta.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    code, _ = report(capsys, "--experiment", "weather", "--tracking-uri", uri, "--out", str(tmp_path / "w"), "--no-plot")
    assert code == 0
    assert len(list(csv.DictReader((tmp_path / "w" / "report.csv").open()))) == 2


@pytest.mark.slow
def test_a_submitit_local_sweep_of_two_jobs_completes_and_is_reported(tmp_path, capsys):
    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    sweep = tmp_path / "sweep"
    done = gepa("-m", "experiment=recipe", "search.random_seed=1,2", "hydra/launcher=slurm_local",
                f"hydra.sweep.dir={sweep}", f"tracking.uri={uri}", NO_PLOTS, *FAST, cwd=tmp_path)
    assert done.returncode == 0, done.stderr[-3000:]
    assert "Submitit 'local' sweep output dir" in done.stderr
    jobs = job_dirs(sweep)
    assert len(jobs) == 2 and all((j / "result.json").is_file() for j in jobs)
    assert list((sweep / ".submitit").glob("*/*_result.pkl"))  # ran through submitit's executor
    parents = mlflow_parents(uri, sweep_id=sweep_id(sweep))
    assert sorted(p.data.tags["random_seed"] for p in parents) == ["1", "2"]
    code, _ = report(capsys, "--sweep", sweep_id(sweep), "--tracking-uri", uri, "--out", str(tmp_path / "r"), "--no-plot")
    assert code == 0
    rows = list(csv.DictReader((tmp_path / "r" / "report.csv").open()))
    assert sorted((r["experiment"], r["seed"], r["status"]) for r in rows) == [
        ("recipe", "1", "FINISHED"), ("recipe", "2", "FINISHED")]


@pytest.mark.slow
@pytest.mark.parametrize("launcher, sweep, code, expected", [
    # A value only the evaluator's constructor refuses: found in the job (the pre-flight builds nothing).
    ("hydra/launcher=parallel", "evaluator.token_budget=200000,-3", 2,
     "evaluator: ValueError: token_budget must be a positive integer, got -3"),
    ("hydra/launcher=slurm_local", "evaluator.token_budget=200000,-3", 2, "token_budget must be a positive integer"),
    ("hydra/launcher=slurm_local", "dataset.holdout=holdout.jsonl,nope.jsonl", 1, "dataset split file not found"),
], ids=["joblib-config", "submitit-config", "submitit-run"])
def test_an_error_in_one_worker_job_is_one_line_and_a_nonzero_exit(tmp_path, launcher, sweep, code, expected):
    limit = "hydra.launcher.n_jobs=2" if "parallel" in launcher else "hydra.launcher.timeout_min=10"
    done = gepa("-m", "experiment=recipe", "tracking=none", launcher, limit, *FAST, sweep, cwd=tmp_path)
    assert done.returncode == code, done.stderr[-3000:]
    errors = [x for x in done.stderr.splitlines() if x.startswith("gepa_lab: error: ")]
    assert len(errors) == 1 and expected in errors[0], done.stderr[-3000:]
    assert "Traceback" not in done.stderr


@pytest.mark.slow
def test_a_job_killed_mid_sweep_resumes_and_finished_jobs_are_skipped(tmp_path, read_record):
    """Basic launcher, three jobs: job 1 is SIGKILLed mid-run (and the sweep with it). The same
    command again skips job 0, resumes job 1 into its MLflow parent run and runs job 2; job 1 ends
    exactly as an uninterrupted run does, and MLflow holds every run and pool member once."""
    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    sweep = tmp_path / "sweep"
    env = {"PYTHONPATH": os.pathsep.join([str(SCRIPTS), os.environ.get("PYTHONPATH", "")]),
           "GEPA_TEST_KILL_JOB": "1", "GEPA_TEST_KILL_AT": "45", "GEPA_TEST_KILL_MARKER": str(tmp_path / "killed")}
    args = ("-m", "experiment=recipe", "search.random_seed=1,2,3", "evaluator._target_=sweep_plugins.KillingSkillCraft",
            f"hydra.sweep.dir={sweep}", f"tracking.uri={uri}", "progress=off", "search.max_iterations=4",
            "tracking.plots=false")
    killed = gepa(*args, cwd=tmp_path, env=env)
    assert killed.returncode == -9 and (tmp_path / "killed").exists(), killed.stderr[-2000:]
    jobs = job_dirs(sweep)
    assert len(jobs) == 2 and (jobs[0] / "result.json").exists() and not (jobs[1] / "result.json").exists()
    assert run_state(jobs[1]) == "unfinished"

    again = gepa(*args, cwd=tmp_path, env=env)
    assert again.returncode == 0, again.stderr[-3000:]
    assert again.stdout.count("  skipped     finished in an earlier run of this sweep") == 1
    assert again.stdout.count("\n  record ") == 3
    jobs = job_dirs(sweep)
    assert len(jobs) == 3 and all((j / "result.json").is_file() for j in jobs)
    assert "run_resumed" in read_record(jobs[1]).kinds()

    parents = mlflow_parents(uri, sweep_id=sweep_id(sweep))
    assert len(parents) == 3 and len({p.data.tags["gepa.experiment_id"] for p in parents}) == 3
    by_job = {p.data.tags["sweep_job"]: p for p in parents}
    assert by_job["1"].data.tags.get("resume_count") == "1" and "resume_count" not in by_job["0"].data.tags
    for parent in parents:
        assert parent.info.status == "FINISHED"
        keys = nested_keys(uri, parent.info.run_id)
        assert len(keys) == len(set(keys)) == len(result(Path(parent.data.tags["run_dir"]))["pool"])

    # Job 1, resumed, equals the same job run without interruption.
    clean = gepa("experiment=recipe", "search.random_seed=2", "evaluator._target_=sweep_plugins.KillingSkillCraft",
                 "tracking=none", "progress=off", "search.max_iterations=4", f"hydra.run.dir={tmp_path / 'clean'}",
                 cwd=tmp_path, env=env)
    assert clean.returncode == 0, clean.stderr[-2000:]
    resumed, fresh = read_record(jobs[1]).comparable(), read_record(tmp_path / "clean").comparable()
    for record in (resumed, fresh):  # what the MLflow store says (the clean run has no tracker)
        for result_dict in [record["result.json"]] + [e["data"]["result"] for e in record["events.jsonl"]
                                                      if e["kind"] == "decision"]:
            result_dict.pop("links")
            result_dict.pop("holdout_reuse", None)  # stripped as volatile already
    for name in ("result.json", "evaluations.jsonl", "events.jsonl"):
        assert resumed[name] == fresh[name], name


def test_sweep_tags_are_tags(tmp_path, monkeypatch):
    """The sweep goes to tags on the parent and every pool member's run, never to params. (A
    racing dataset insert: tests/test_mlflow_logger.py.)"""
    from fixtures_mlflow import candidate_runs, toy_run
    from mlflow import MlflowClient

    monkeypatch.delenv("MLFLOW_TRACKING_URI", raising=False)
    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    sweep = {"id": "0123456789ab", "dir": str(tmp_path / "sweep"), "job": 3}
    tracker = toy_run(uri, tmp_path / "run", iterations=2, run_config={"sweep": sweep})
    assert tracker.errors == []
    client = MlflowClient(tracking_uri=uri)
    parent = client.get_run(tracker.run_id)
    assert {k: parent.data.tags[k] for k in ("sweep_id", "sweep_dir", "sweep_job")} == {
        "sweep_id": "0123456789ab", "sweep_dir": str(tmp_path / "sweep"), "sweep_job": "3"}
    assert not [k for k in parent.data.params if k.startswith("sweep")]
    assert len(parent.inputs.dataset_inputs) == 3
    children = candidate_runs(client, tracker.run_id)
    assert children and all(c.data.tags["sweep_id"] == "0123456789ab" for c in children)
