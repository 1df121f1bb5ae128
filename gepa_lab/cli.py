"""The Hydra task: the pre-flight (before a run directory exists; under -m before any job
starts), then the run: turn the composed config into objects, run `optimize`, print the decision.

Every error ends with one line on stderr: exit code 2 for configuration and command-line errors,
1 for a run that could not start or finish, 130 for an interrupt (the run stays resumable).
"""

from __future__ import annotations

import hashlib
import itertools
import logging
import os
import signal
import sys
import tempfile
import threading
from pathlib import Path
from typing import Any, NoReturn

from hydra.experimental.callback import Callback
from omegaconf import DictConfig, OmegaConf
from omegaconf.errors import OmegaConfBaseException

from gepa_lab.config import Config, check_config, describe_config_error, uses_lm
from gepa_lab.core.artifacts import Artifact
from gepa_lab.core.errors import AlreadyDone, ConfigError, GepaLabError, ReflectorUnavailable, describe
from gepa_lab.core.redact import redact
from gepa_lab.core.settings import build_target, check_int
from gepa_lab.tracking.mlflow_links import ENV_DEFAULTS

OFFLINE_ENV = {**ENV_DEFAULTS, "HF_DATASETS_OFFLINE": "1", "HF_HUB_OFFLINE": "1"}


# Until Hydra's job logging gives it the run's log file, this logger writes nowhere (stderr
# already shows the error once).
_FAILURE_LOG = logging.getLogger("gepa_lab.failure")
_FAILURE_LOG.addHandler(logging.NullHandler())
_FAILURE_LOG.propagate = False


class Failure(SystemExit):
    """The exit `fail` raises: a SystemExit that keeps its one-line message."""

    def __init__(self, code: int, message: str):
        super().__init__(code)
        self.message = message

    def __reduce__(self) -> tuple[Any, ...]:  # crosses process boundaries (joblib workers)
        return (Failure, (self.code, self.message))


class SweepJobFailed(SystemExit, Exception):
    """A submitit job's failure, carried back to the launching process: as an Exception, Hydra
    records it with the job and submitit returns it; raised there, as a SystemExit, it ends the sweep
    with the job's one-line error (exit 1) or exit 130, without a traceback."""


def fail(message: str, code: int) -> NoReturn:
    message = redact(message)  # e.g. Hydra's `cannot take '<value>'` of a key pasted into a number
    # Kept in the run's log file as well, when a run directory exists (Hydra's `file` handler).
    _FAILURE_LOG.error("gepa_lab: error: %s (exit %d)", message, code)
    print(f"gepa_lab: error: {message}", file=sys.stderr)
    raise Failure(code, message)


def check_run_dir(run_dir: Path, resume: str | None) -> None:
    """Before Hydra writes anything into the run dir: it must be new (or the run being resumed,
    not in use by another process) and writable."""
    from gepa_lab.runs.lock import LOCK_FILE, holder, in_use
    from gepa_lab.runs.record import EVALUATIONS_FILE, EVENTS_FILE, run_state

    state = run_state(run_dir)
    if resume and state == "new":
        raise ConfigError(f"resume={resume}: {run_dir} holds no gepa_lab run; pass the run directory the "
                          "interrupted run printed")
    if not resume and state != "new":
        raise ConfigError(f"{run_dir} already holds a run: resume it with resume={run_dir}, or choose a new "
                          "hydra.run.dir")
    fix = ("make it writable, then resume" if resume
           else "run from a writable directory or set hydra.run.dir=<a writable path>")
    path = run_dir
    try:  # creating / opening is the only reliable test (permissions, read-only mounts, root)
        run_dir.mkdir(parents=True, exist_ok=True)
        tempfile.TemporaryFile(dir=run_dir).close()
        for name in ("gepa_lab.log", LOCK_FILE, EVALUATIONS_FILE, EVENTS_FILE):  # what a resumed run appends to
            if (path := run_dir / name).exists():
                open(path, "a").close()
    except OSError as exc:
        where = "" if path == run_dir else f"{path.name}: "
        raise GepaLabError(f"cannot write the run directory {run_dir} ({where}{exc.strerror or exc}); {fix}") from None
    if resume and (pid := holder(run_dir)) is not None:
        raise in_use(run_dir, pid)


# -- the pre-flight: before a run directory exists, before any job of a sweep starts -------------
# Launcher settings nothing checks before jobs start (joblib's own refusals: one line, in entry()).
_LAUNCHER_MINIMUM = {"timeout_min": 1, "cpus_per_task": 1, "gpus_per_node": 0, "tasks_per_node": 1, "nodes": 1,
                     "mem_gb": 1, "array_parallelism": 1, "max_num_timeout": 0}


def sweep_jobs(config: DictConfig) -> list[list[str]]:
    """Every job's overrides, expanded as Hydra's basic sweeper expands them: `hydra.sweeper.params`
    then the command line, each key's values (a comma list, range or glob), the product over keys."""
    from hydra.core.global_hydra import GlobalHydra
    from hydra.core.override_parser.overrides_parser import OverridesParser

    params = OmegaConf.select(config, "hydra.sweeper.params") or {}
    lines = [f"{key}={value}" for key, value in params.items()] + list(config.hydra.overrides.task)
    hydra = GlobalHydra.instance()  # a glob sweep needs the loader; `report` expands a sweep without one
    parser = OverridesParser.create(config_loader=hydra.config_loader() if hydra.is_initialized() else None)
    per_key: dict[str, list[str]] = {}
    for override in parser.parse_overrides(lines):
        key = override.get_key_element()
        values = (override.sweep_string_iterator() if override.is_sweep_override()
                  else [override.get_value_element_as_str()])
        per_key[key] = [f"{key}={value}" for value in values]
    return [list(job) for job in itertools.product(*per_key.values())]


def _lm_unused(config: DictConfig) -> ConfigError | None:
    """An `lm` / `lm.*` override in a run whose components use no LM: it would quietly stay offline."""
    keys = (str(line).split("=")[0].lstrip("+~") for line in config.hydra.overrides.task)
    key = None if uses_lm(config) else next((k for k in keys if k == "lm" or k.startswith("lm.")), None)
    return None if key is None else ConfigError(f"{key} is set, but no component of this run uses an LM; pick one "
                                                "that does (reflector=lm, evaluator=prompt, skillcraft_dspy "
                                                "or dspy_program) or drop it")


def check_run(config: DictConfig) -> None:
    """A single run: its config, then its run directory."""
    run_dir = str(config.hydra.run.dir).strip()
    if not run_dir:  # Path("") would be the working directory
        raise ConfigError("hydra.run.dir is empty (an unset variable?); name the run's directory, e.g. "
                          "hydra.run.dir=outputs/ci-$RUN_ID")
    if error := _lm_unused(config):
        raise error
    check_run_dir(Path(run_dir), _preflight(_task(config)).resume)


def check_sweep(config: DictConfig) -> None:
    """Every job's config, composed with Hydra's compose API as the job will compose it, checked
    before the launcher starts any job (the sweep's base config alone would miss job 2's values)."""
    from hydra import compose
    from hydra.errors import HydraException

    if OmegaConf.select(config, "resume"):  # a sweep resumes job by job (docs/study.md)
        raise ConfigError(f"resume={config.resume} continues a single run; to continue a sweep, run the same "
                          "command with hydra.sweep.dir=<its sweep dir> (finished jobs are skipped, unfinished "
                          "ones resume)")
    if not str(config.hydra.sweep.dir).strip():
        raise ConfigError("hydra.sweep.dir is empty (an unset variable?); name the sweep's directory")
    launcher = config.hydra.launcher
    if launcher.get("n_jobs") == 0:
        raise ConfigError("hydra.launcher.n_jobs=0 runs no job; set how many jobs run at once (-1: one per CPU)")
    for key, minimum in _LAUNCHER_MINIMUM.items():
        if launcher.get(key) is not None:
            check_int(launcher.get(key), f"hydra.launcher.{key}", minimum)
    unused = []  # lm.* settings are fine while some job uses an LM (reflector=feedback,dspy)
    jobs = sweep_jobs(config)
    common = set.intersection(*(set(job) for job in jobs)) if jobs else set()
    for number, job in enumerate(jobs):
        try:
            composed = compose(config_name=config.hydra.job.config_name,
                               overrides=[*config.hydra.overrides.hydra, *job], return_hydra_config=True)
            _preflight(_task(composed))
        except (HydraException, OmegaConfBaseException, ValueError) as exc:  # named: which job of the sweep
            reason = str(exc) if isinstance(exc, ConfigError) else describe_config_error(exc)
            # the job's own values, without a secret and without Hydra's escapes of a swept value (`\:`)
            shown = redact(" ".join(o.replace("\\", "") for o in job if o not in common))
            raise ConfigError(f"sweep job {number} ({shown}): {reason}") from None
        unused.append(_lm_unused(composed))
    if unused and all(unused):
        raise ConfigError(str(unused[0]))


def _preflight(config: DictConfig) -> Config:
    """The config's checks, and its search policies built once to check their values (the run
    builds its own: they keep state)."""
    from gepa_lab.search.policies import build_policies

    conf = check_config(config)
    build_policies(conf.search)
    return conf


def _task(config: DictConfig) -> DictConfig:
    return OmegaConf.masked_copy(config, [str(k) for k in config if k != "hydra"])


def _refuse(check: Any, config: DictConfig) -> None:
    """A refusal as one line and an exit: Hydra turns a callback's exceptions into warnings."""
    from hydra.errors import HydraException

    try:
        check(config)
    except ConfigError as exc:
        fail(str(exc), 2)
    except GepaLabError as exc:
        fail(str(exc), 1)
    except (HydraException, OmegaConfBaseException, ValueError) as exc:  # composing a sweep's jobs
        fail(describe_config_error(exc), 2)


class ConfigCheck(Callback):
    """Registered in conf/config.yaml (`hydra.callbacks`): the pre-flight, before Hydra creates a
    run directory (single run) or launches any job (multirun); each job checks its own config again
    in `run`."""

    def on_run_start(self, config: DictConfig, **kwargs: Any) -> None:
        _refuse(check_run, config)

    def on_multirun_start(self, config: DictConfig, **kwargs: Any) -> None:
        _refuse(check_sweep, config)


# -- sweeps (multirun) -------------------------------------------------------------------------
def sweep_id(sweep_dir: str | Path) -> str:
    """A sweep's id: derived from its directory (absolute, not symlink-resolved), so re-running the
    sweep into the same hydra.sweep.dir keeps the id. Tag `sweep_id` on every MLflow run."""
    return hashlib.sha256(os.path.abspath(sweep_dir).encode("utf-8")).hexdigest()[:12]


def sweep_of_job() -> dict[str, Any] | None:
    """In a job of a Hydra multirun (any launcher): the sweep's id, directory and the job's number;
    None in a single run."""
    from hydra.core.hydra_config import HydraConfig
    from hydra.types import RunMode

    if not HydraConfig.initialized() or HydraConfig.get().mode != RunMode.MULTIRUN:
        return None
    hydra_cfg = HydraConfig.get()
    sweep_dir = os.path.abspath(str(hydra_cfg.sweep.dir))
    return {"id": sweep_id(sweep_dir), "dir": sweep_dir, "job": int(hydra_cfg.job.num)}


def _skipped(run_dir: Path, experiment: str, random_seed: int) -> str:
    from gepa_lab.runs.files import read_dict

    promotion = read_dict(run_dir / "promotion.json")
    verdict = "ELIGIBLE" if promotion.get("eligible") else "NOT ELIGIBLE"
    decision = f"\n  decision    {verdict}: {promotion.get('reason')}" if promotion else ""
    return (f"gepa-lab gepa  experiment={experiment}  random_seed={random_seed}\n"
            f"  skipped     finished in an earlier run of this sweep{decision}\n  record      {run_dir}")


# -- the task -----------------------------------------------------------------------------------
def _sigterm_as_interrupt() -> None:
    """SIGTERM takes the Ctrl-C path: checkpoint kept, trackers told, exit 130."""
    if threading.current_thread() is threading.main_thread():
        def handler(signum: int, frame: Any) -> None:
            raise KeyboardInterrupt(f"signal {signum}")

        signal.signal(signal.SIGTERM, handler)


def run(cfg: DictConfig, run_dir: Path, hydra_choices: dict[str, Any] | None = None) -> int:
    try:
        return _run(cfg, run_dir, hydra_choices)
    except Failure as exc:
        # A submitit job's stderr is a file: its exit becomes an exception the launching process
        # re-raises, where it prints one line (entry() for a ConfigError: exit 2) and exits.
        if not os.environ.get("SUBMITIT_EXECUTOR"):
            raise
        if exc.code == 2:
            raise ConfigError(exc.message) from None
        raise SweepJobFailed(f"gepa_lab: error: {exc.message}" if exc.code == 1 else exc.code) from None


def _run_config(cfg: DictConfig, hydra_choices: dict[str, Any] | None, sweep: dict[str, Any] | None) -> dict[str, Any]:
    """The resolved config as the run records it: no `lm` settings for a run that uses no LM."""
    from hydra.core.hydra_config import HydraConfig

    container = OmegaConf.to_container(cfg, resolve=True)
    assert isinstance(container, dict)
    run_config = {str(k): v for k, v in container.items() if k != "lm" or uses_lm(cfg)}
    run_config["hydra_choices"] = dict(hydra_choices or {})
    # This run's command-line overrides (a sweep job's own values of the sweep's axes): a study
    # pairs its runs by them (gepa_lab/study.py).
    run_config["overrides"] = list(HydraConfig.get().overrides.task) if HydraConfig.initialized() else []
    if sweep is not None:
        run_config["sweep"] = sweep  # id, dir, job: MLflow tags (gepa_lab/tracking/mlflow_tracker.py)
    return run_config


def _experiment_name(conf: Config, choices: dict[str, Any]) -> str:
    """`experiment_name`, else the experiment's or the evaluator's config name (never `default`
    for a run that names its evaluator)."""
    return (conf.experiment_name if conf.experiment_name != "default"
            else str(choices.get("experiment") or choices.get("evaluator") or "default"))


def _seed(conf: Config, seed: Artifact | None, evaluator: Any, submitter: Any, resumed: Path | None) -> Artifact:
    """The seed: the dataset's seed file, the evaluator's own (a DSPy program's instructions) when
    `dataset.seed_artifact` is null, or the store's active revision (`seed.from_store` /
    `seed.prefer_store`) — which, for a resumed run, is the one it started from."""
    if conf.seed.from_store or conf.seed.prefer_store:
        if resumed is not None:
            from gepa_lab.core.artifacts import artifact_from_dict
            from gepa_lab.runs.record import load_experiment

            return artifact_from_dict(load_experiment(resumed).seed["artifact"])
        from gepa_lab.revisions.submitter import active_seed

        return active_seed(conf.seed.from_store, conf.seed.store, submitter,
                           fallback=seed if conf.seed.prefer_store else None)
    if seed is None and (seed := getattr(evaluator, "seed_artifact", None)) is None:
        raise ConfigError(f"dataset.seed_artifact is null and evaluator {type(evaluator).__name__} has no seed of "
                          "its own; set dataset.seed_artifact=<file>")
    return seed


def _redact(record: logging.LogRecord) -> bool:
    """A log filter: every line a run writes (stderr, gepa_lab.log) without credentials, as a
    provider's error may echo the key."""
    text = record.getMessage()
    if (clean := redact(text)) != text:
        record.msg, record.args = clean, None
    return True


def _trackers(conf: Config, tracker: Any, evaluator: Any, run_dir: Path) -> list[Any]:
    from gepa_lab.tracking.progress import ProgressTracker

    trackers = [ProgressTracker(conf.progress), *([tracker] if tracker is not None else [])]
    extra = getattr(evaluator, "run_trackers", None)  # e.g. a DSPy program saving its winner
    return trackers + list(extra(run_dir)) if callable(extra) else trackers


def _optimize(cfg: DictConfig, conf: Config, run_dir: Path, resume: bool, name: str,
              hydra_choices: dict[str, Any] | None, sweep: dict[str, Any] | None) -> tuple[Any, Any]:
    """Build the components, load the frozen dataset and the seed, run `optimize`."""
    from gepa_lab.data import load_dataset
    from gepa_lab.search.engine import optimize

    evaluator, reflector = build_target("evaluator", cfg.evaluator), build_target("reflector", cfg.reflector)
    tracker = build_target("tracking", cfg.tracking)
    # The store is opened only by what uses it: a submission, or a seed read from it.
    submitter = build_target("submitter", cfg.submitter) if conf.submit or conf.seed.from_store else None
    transfer = build_target("transfer.evaluator", cfg.transfer.evaluator)
    dataset, seed = load_dataset(conf.dataset)
    seed = _seed(conf, seed, evaluator, submitter, run_dir if resume else None)
    result = optimize(seed, dataset, evaluator, reflector, conf.search, evaluation=conf.evaluation,
                      reflection=conf.reflection, promotion=conf.promotion, submitter=submitter,
                      submit=conf.submit, run_dir=run_dir, resume=resume,
                      trackers=_trackers(conf, tracker, evaluator, run_dir),
                      name=name, run_config=_run_config(cfg, hydra_choices, sweep), transfer=transfer)
    return result, evaluator


def _run(cfg: DictConfig, run_dir: Path, hydra_choices: dict[str, Any] | None) -> int:
    for key, value in OFFLINE_ENV.items():
        os.environ.setdefault(key, value)
    from gepa_lab.data import resolve_path
    from gepa_lab.lm.server import serving
    from gepa_lab.runs.record import run_state
    from gepa_lab.summary import format_summary

    _sigterm_as_interrupt()
    for handler in logging.getLogger().handlers:
        handler.addFilter(_redact)  # once: addFilter skips a filter the handler has
    sweep: dict[str, Any] | None = None
    try:
        conf = check_config(cfg)
        # A sweep job resumes an unfinished run in its dir and skips a finished one (re-running a
        # sweep into the same hydra.sweep.dir); a single run into a used dir is refused earlier.
        sweep, resume = sweep_of_job(), bool(conf.resume)
        name = _experiment_name(conf, hydra_choices or {})
        if sweep is not None and not resume:
            state = run_state(run_dir)  # a damaged record raises ResumeError: exit 1
            if state == "finished":
                logging.getLogger("gepa_lab").info("sweep job %s already finished: skipped", run_dir)
                print(_skipped(run_dir, name, conf.search.random_seed))
                return 0
            resume = state == "unfinished"
        if conf.resume:
            run_dir = resolve_path(conf.resume)
            if not run_dir.is_dir():
                raise ConfigError(f"resume={conf.resume}: no such run directory")
        # lm=local: the model server lives exactly as long as the components that call it.
        with serving(conf.lm.server if uses_lm(cfg) else None, run_dir):
            result, evaluator = _optimize(cfg, conf, run_dir, resume, name, hydra_choices, sweep)
    except AlreadyDone as exc:  # e.g. a second submit=true: the record already holds it
        print(f"gepa_lab: {exc}")
        return 0
    except ConfigError as exc:
        fail(str(exc), 2)
    except ReflectorUnavailable as exc:
        fail(f"{exc} (resume={run_dir})", 1)
    except (GepaLabError, ValueError, OSError) as exc:  # anything else is our bug: a traceback
        fail(" ".join(str(exc).split()) or describe(exc), 1)
    except KeyboardInterrupt:
        again = (f"run the sweep again with hydra.sweep.dir={sweep['dir']}" if sweep is not None
                 else f"Resume with the same overrides plus resume={run_dir}")
        message = f"interrupted; the run is checkpointed in {run_dir}. {again}"
        print(f"gepa_lab: {message}", file=sys.stderr)
        raise Failure(130, message) from None
    print(format_summary(result, name, run_dir, simulated=getattr(evaluator, "simulated", False) is True))
    return 0
