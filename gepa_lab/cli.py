"""The Hydra task: turn a composed config into objects, run `optimize`, print the decision.

Every error ends with one line on stderr: exit code 2 for configuration and command-line errors,
1 for a run that could not start or finish, 130 for an interrupt (the run stays resumable).
"""

from __future__ import annotations

import copy
import dataclasses
import difflib
import hashlib
import importlib
import inspect
import json
import logging
import os
import signal
import sys
import threading
from pathlib import Path
from typing import Any

from hydra.experimental.callback import Callback
from omegaconf import DictConfig, OmegaConf, open_dict, read_write
from omegaconf.errors import InterpolationKeyError, OmegaConfBaseException, ValidationError

from gepa_lab.config import Config
from gepa_lab.core.errors import ConfigError, GepaLabError, describe

OFFLINE_ENV = {
    "LITELLM_LOCAL_MODEL_COST_MAP": "True",
    "MLFLOW_DISABLE_TELEMETRY": "true",
    "HF_DATASETS_OFFLINE": "1",
    "HF_HUB_OFFLINE": "1",
}
KEYS_HINT = "`python -m gepa_lab --cfg job` prints every key"
_HYDRA_KEYS = {"_target_", "_args_", "_partial_", "_convert_", "_recursive_"}


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


def fail(message: str, code: int) -> None:
    # Kept in the run's log file as well, when a run directory exists (Hydra's `file` handler).
    _FAILURE_LOG.error("gepa_lab: error: %s (exit %d)", message, code)
    print(f"gepa_lab: error: {message}", file=sys.stderr)
    raise Failure(code, message)


# -- configuration errors -----------------------------------------------------------------------
def describe_config_error(exc: BaseException) -> str:
    """One line for a Hydra / OmegaConf composition error, built from the exceptions' fields."""
    from hydra.errors import MissingConfigException, OverrideParseException

    chain: list[BaseException] = []
    current: BaseException | None = exc
    while current is not None and current not in chain:
        chain.append(current)
        current = current.__cause__ or current.__context__
    for err in chain:
        if isinstance(err, MissingConfigException) and err.missing_cfg_file:
            group, _, option = err.missing_cfg_file.rpartition("/")
            if group:
                options = ", ".join(err.options or []) or "none"
                return f"unknown option {group}={option}; available: {options}"
            return f"config {err.missing_cfg_file!r} not found"
        if isinstance(err, OverrideParseException):
            return f"cannot parse the override {err.override!r}; write key=value (`python -m gepa_lab --help`)"
        if isinstance(err, OmegaConfBaseException) and err.full_key:
            if isinstance(err, ValidationError):
                reason = str(err.msg).splitlines()[0] if err.msg else "wrong type"
                return f"config key {err.full_key} cannot take {err.value!r}: {reason}"
            if isinstance(err, InterpolationKeyError):  # `${a.b}` names a key the config lacks
                return f"config key {err.full_key}: {str(err.msg).splitlines()[0]} (pick options that provide it)"
            return unknown_key(str(err.full_key), _siblings(err))
    first = next((line for line in str(exc).splitlines() if line.strip()), type(exc).__name__)
    return first.strip()


def _siblings(err: OmegaConfBaseException) -> list[str]:
    parent = err.parent_node
    if isinstance(parent, DictConfig):
        return [str(k) for k in parent.keys()]
    schema = err.object_type
    return [f.name for f in dataclasses.fields(schema)] if dataclasses.is_dataclass(schema) else []


def unknown_key(full_key: str, known: list[str]) -> str:
    name = full_key.rpartition(".")[2]
    close = difflib.get_close_matches(name, known, n=1)
    hint = f"; did you mean {close[0]!r}?" if close else ""
    return f"unknown config key {full_key!r}{hint} ({KEYS_HINT})"


def _forced_keys(node: DictConfig, prefix: str = "") -> list[str]:
    """Keys a `+key=value` override force-added to a typed group (Hydra accepts those silently)."""
    schema = OmegaConf.get_type(node)
    if not dataclasses.is_dataclass(schema):
        return []
    fields = [f.name for f in dataclasses.fields(schema)]
    found = []
    for key in map(str, node.keys()):
        if key not in fields:
            found.append(unknown_key(prefix + key, fields))
        elif OmegaConf.is_dict(child := node[key]):
            found += _forced_keys(child, f"{prefix}{key}.")
    return found


def to_config(cfg: DictConfig) -> Config:
    """Full validation (types, unknown keys, value ranges) into the root dataclass."""
    forced = _forced_keys(cfg)
    if forced:
        raise ConfigError(forced[0])
    try:
        obj = OmegaConf.to_object(cfg)
    except OmegaConfBaseException as exc:
        raise ConfigError(describe_config_error(exc)) from exc
    assert isinstance(obj, Config)
    return obj


# -- `_target_` groups --------------------------------------------------------------------------
TARGET_GROUPS = {"evaluator": True, "reflector": True, "tracking": False, "submitter": False,  # required?
                 "transfer.evaluator": False}


def _target(group: str, node: Any, required: bool) -> Any:
    """The class a `_target_` group names, after checking the keys against its constructor."""
    if node is None or (OmegaConf.is_dict(node) and len(node) == 0):
        if required:
            raise ConfigError(f"{group} is not configured; pick an option ({group}=<name>)")
        return None
    if not OmegaConf.is_dict(node) or "_target_" not in node:
        raise ConfigError(f"{group} needs a `_target_` naming its class (see conf/{group.replace('.', '/')}/)")
    path = str(node["_target_"])
    target = _locate(group, path)
    _check_arguments(group, target, [str(k) for k in node.keys() if k not in _HYDRA_KEYS])
    return target


def _locate(group: str, path: str) -> Any:
    """`package.module.Name` -> the object (quietly: hydra.utils.get_object logs its failures)."""
    module_name, _, name = path.rpartition(".")
    try:
        return getattr(importlib.import_module(module_name), name)
    except (ImportError, AttributeError, ValueError) as exc:
        raise ConfigError(f"{group}._target_ {path!r} cannot be imported: {describe(exc)}") from exc


def check_config(cfg: DictConfig) -> Config:
    """Everything that can be checked without building anything; raises ConfigError."""
    conf = to_config(cfg)
    for group, required in TARGET_GROUPS.items():
        _target(group, OmegaConf.select(cfg, group), required)
    return conf


def build(group: str, node: Any) -> Any:
    """Instantiate a `_target_` group (evaluator, reflector, tracking, submitter); None if empty."""
    from hydra.utils import instantiate

    if _target(group, node, TARGET_GROUPS[group]) is None:
        return None
    try:
        return instantiate(node, _convert_="all")
    except Exception as exc:
        cause = exc.__cause__ or exc
        if isinstance(cause, (TypeError, ValueError)):
            raise ConfigError(f"{group}: {describe(cause)}") from cause
        raise GepaLabError(f"{group} could not be built: {describe(cause)}") from cause


def _check_arguments(group: str, target: Any, keys: list[str]) -> None:
    try:
        params = inspect.signature(target).parameters
    except (TypeError, ValueError):
        return
    if any(p.kind is inspect.Parameter.VAR_KEYWORD for p in params.values()):
        return
    accepted = [n for n, p in params.items() if p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)]
    for key in keys:
        if key not in accepted:
            close = difflib.get_close_matches(key, accepted, n=1)
            hint = f"did you mean {close[0]!r}? " if close else ""
            raise ConfigError(f"unknown config key '{group}.{key}'; {hint}{group} takes: {', '.join(accepted)}")
    for name, p in params.items():
        if p.default is p.empty and p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY) and name not in keys:
            raise ConfigError(f"config key '{group}.{name}' is required")


def check_run_dir(run_dir: Path, resume: str | None) -> None:
    """Before Hydra writes anything into the run dir: it must be new (or the run being resumed,
    not in use by another process) and creatable."""
    from gepa_lab.runs.lock import holder
    from gepa_lab.runs.record import run_state

    state = run_state(run_dir)
    if resume:
        if state == "new":
            raise ConfigError(f"resume={resume}: {run_dir} holds no gepa_lab run; pass the run directory the "
                              "interrupted run printed")
        pid = holder(run_dir)
        if pid is not None:
            raise GepaLabError(f"{run_dir} is in use by another gepa_lab process (pid {pid}); wait for it to "
                               "finish or stop it, then resume")
    elif state != "new":
        raise ConfigError(f"{run_dir} already holds a run: resume it with resume={run_dir}, or choose a new "
                          "hydra.run.dir")
    try:  # creating it is the only reliable test (permissions, read-only mounts, root)
        run_dir.mkdir(parents=True, exist_ok=True)
        probe = run_dir / f".gepa-lab-write-test-{os.getpid()}"
        probe.touch()
        probe.unlink()
    except OSError as exc:
        raise GepaLabError(f"cannot write the run directory {run_dir} ({exc.strerror or exc}); run from a "
                           "writable directory or set hydra.run.dir=<a writable path>") from None


class ConfigCheck(Callback):
    """Registered in conf/config.yaml (`hydra.callbacks`): checks the composed config before Hydra
    creates a run directory (single run) or launches any job (multirun); each job checks its own
    config again in `run`."""

    def _check(self, config: DictConfig) -> None:
        task = copy.deepcopy(config)
        with read_write(task), open_dict(task):
            del task["hydra"]
        try:
            conf = check_config(task)
            if config.hydra.mode is None or str(config.hydra.mode) == "RunMode.RUN":
                check_run_dir(Path(str(config.hydra.run.dir)), conf.resume)
            elif conf.resume:  # a sweep resumes job by job (docs/study.md)
                raise ConfigError(f"resume={conf.resume} continues a single run; to continue a sweep, run the "
                                  "same command with hydra.sweep.dir=<its sweep dir> (finished jobs are skipped, "
                                  "unfinished ones resume)")
        except ConfigError as exc:
            fail(str(exc), 2)  # SystemExit: Hydra turns a callback's exceptions into warnings
        except GepaLabError as exc:
            fail(str(exc), 1)

    def on_run_start(self, config: DictConfig, **kwargs: Any) -> None:
        self._check(config)

    def on_multirun_start(self, config: DictConfig, **kwargs: Any) -> None:
        self._check(config)


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

    if not HydraConfig.initialized():
        return None
    hydra_cfg = HydraConfig.get()
    if hydra_cfg.mode != RunMode.MULTIRUN:
        return None
    sweep_dir = os.path.abspath(str(hydra_cfg.sweep.dir))
    return {"id": sweep_id(sweep_dir), "dir": sweep_dir, "job": int(hydra_cfg.job.num)}


def sweep_job_state(run_dir: Path) -> str:
    """`new`, `unfinished` (resume it) or `finished` (skip it): what a sweep job finds in its run
    dir (a damaged record raises ResumeError: exit 1)."""
    from gepa_lab.runs.record import run_state

    return run_state(run_dir)


def job_overrides() -> list[str]:
    """The command-line overrides of this run (a sweep job's own values of the sweep's axes)."""
    from hydra.core.hydra_config import HydraConfig

    return list(HydraConfig.get().overrides.task) if HydraConfig.initialized() else []


def _skipped(run_dir: Path, experiment: str, random_seed: int) -> str:
    decision = ""
    try:
        promotion = json.loads((run_dir / "promotion.json").read_text(encoding="utf-8"))
        verdict = "ELIGIBLE" if promotion.get("eligible") else "NOT ELIGIBLE"
        decision = f"\n  decision    {verdict}: {promotion.get('reason')}"
    except (OSError, ValueError, AttributeError):
        pass
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


def _run(cfg: DictConfig, run_dir: Path, hydra_choices: dict[str, Any] | None) -> int:
    for key, value in OFFLINE_ENV.items():
        os.environ.setdefault(key, value)
    from gepa_lab.data import load_dataset, resolve_path
    from gepa_lab.search.engine import optimize
    from gepa_lab.summary import format_summary
    from gepa_lab.tracking.progress import ProgressTracker

    _sigterm_as_interrupt()
    sweep: dict[str, Any] | None = None
    try:
        conf = check_config(cfg)
        # A sweep job resumes an unfinished run in its dir and skips a finished one (re-running a
        # sweep into the same hydra.sweep.dir); a single run into a used dir is refused earlier.
        sweep, resume = sweep_of_job(), bool(conf.resume)
        if sweep is not None and not resume:
            state = sweep_job_state(run_dir)
            if state == "finished":
                logging.getLogger("gepa_lab").info("sweep job %s already finished: skipped", run_dir)
                print(_skipped(run_dir, conf.experiment_name, conf.search.random_seed))
                return 0
            resume = state == "unfinished"
        evaluator, reflector = build("evaluator", cfg.evaluator), build("reflector", cfg.reflector)
        tracker, submitter = build("tracking", cfg.tracking), build("submitter", cfg.submitter)
        transfer = build("transfer.evaluator", cfg.transfer.evaluator)
        dataset, seed = load_dataset(conf.dataset)
        if conf.seed.from_store or conf.seed.prefer_store:  # the active revision is the seed (and the parent)
            from gepa_lab.revisions.submitter import active_seed

            seed = active_seed(conf.seed.from_store, conf.seed.store, submitter,
                               fallback=seed if conf.seed.prefer_store else None)
        if conf.resume:
            run_dir = resolve_path(conf.resume)
            if not run_dir.is_dir():
                raise ConfigError(f"resume={conf.resume}: no such run directory")
        container = OmegaConf.to_container(cfg, resolve=True)
        assert isinstance(container, dict)
        run_config = {str(k): v for k, v in container.items()}
        run_config["hydra_choices"] = dict(hydra_choices or {})
        run_config["overrides"] = job_overrides()  # a study pairs its runs by them (gepa_lab/study.py)
        if sweep is not None:
            run_config["sweep"] = sweep  # id, dir, job: MLflow tags (gepa_lab/tracking/mlflow_tracker.py)
        trackers = [ProgressTracker(conf.progress), *([tracker] if tracker is not None else [])]
        extra = getattr(evaluator, "run_trackers", None)  # e.g. a DSPy program saving its winner
        if callable(extra):
            trackers += extra(run_dir)
        result = optimize(seed, dataset, evaluator, reflector, conf.search, evaluation=conf.evaluation,
                          reflection=conf.reflection, promotion=conf.promotion, submitter=submitter,
                          submit=conf.submit, run_dir=run_dir, resume=resume, trackers=trackers,
                          name=conf.experiment_name, run_config=run_config, transfer=transfer)
    except ConfigError as exc:
        fail(str(exc), 2)
    except (GepaLabError, ValueError, OSError) as exc:  # anything else is our bug: a traceback
        fail(" ".join(str(exc).split()) or describe(exc), 1)
    except KeyboardInterrupt:
        again = (f"run the sweep again with hydra.sweep.dir={sweep['dir']}" if sweep is not None
                 else f"Resume with the same overrides plus resume={run_dir}")
        message = f"interrupted; the run is checkpointed in {run_dir}. {again}"
        print(f"gepa_lab: {message}", file=sys.stderr)
        raise Failure(130, message) from None
    print(format_summary(result, conf.experiment_name, run_dir, simulated=getattr(evaluator, "simulated", False) is True))
    return 0
