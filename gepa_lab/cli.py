"""The Hydra task: turn a composed config into objects, run `optimize`, print the decision.

Configuration and input errors end with one line on stderr and exit code 2 (config) or 1 (run).
"""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Any

from omegaconf import DictConfig, OmegaConf

from gepa_lab.config import Config

OFFLINE_ENV = {
    "LITELLM_LOCAL_MODEL_COST_MAP": "True",
    "MLFLOW_DISABLE_TELEMETRY": "true",
    "HF_DATASETS_OFFLINE": "1",
    "HF_HUB_OFFLINE": "1",
}


class UsageError(Exception):
    """A bad config value or CLI argument (exit code 2)."""


_NOISE = ("object_type=", "reference_type=", "Set the environment variable", "Config search path",
          "provider=", "To append to your config")


def one_line(exc: BaseException) -> str:
    """Hydra/OmegaConf messages span lines (key, full_key, search path...); keep the substance."""
    parts: list[str] = []
    current: BaseException | None = exc
    while current is not None:
        lines = [ln.strip() for ln in str(current).splitlines() if ln.strip()]
        i = 0
        while i < len(lines):
            line = lines[i]
            if line.startswith("Available options in"):
                options = []
                i += 1
                while i < len(lines) and not lines[i].startswith(_NOISE) and " " not in lines[i]:
                    if not lines[i].endswith("_schema"):  # structured-config schemas, not choices
                        options.append(lines[i])
                    i += 1
                parts.append(f"available: {', '.join(options) or 'none'}")
                continue
            if not line.startswith(_NOISE) and line.rstrip(".") not in parts:
                parts.append(line.rstrip("."))
            i += 1
        current = current.__cause__
    return "; ".join(parts) or type(exc).__name__


def fail(message: str, code: int) -> None:
    print(f"gepa_lab: error: {message}", file=sys.stderr)
    raise SystemExit(code)


def precheck_overrides(conf_dir: Path, args: list[str]) -> None:
    """Compose once before Hydra does, so a bad override gets a one-line error and exit 2.

    Runs with flags (--help, -m, --cfg ...) are left to Hydra itself.
    """
    if any(a.startswith("-") for a in args):
        return
    from hydra import compose, initialize_config_dir

    try:
        with initialize_config_dir(config_dir=str(conf_dir), version_base="1.3", job_name="gepa_lab"):
            cfg = compose(config_name="config", overrides=args)
        to_config(cfg)
    except UsageError as exc:
        fail(str(exc), 2)
    except Exception as exc:  # Hydra raises several composition / override exception types
        message = one_line(exc)
        hint = ""
        if "Could not find" in message:
            hint = " (pick one of the available options)"
        elif "not in" in message:
            hint = " (check the key name; `python -m gepa_lab --cfg job` prints every key)"
        fail(message + hint, 2)


def _unknown_keys(node: Any, schema: Any, prefix: str) -> list[str]:
    """Keys Hydra let through (`+key=value` force-adds even on typed nodes)."""
    import dataclasses

    if not dataclasses.is_dataclass(schema) or not isinstance(node, DictConfig):
        return []
    fields = {f.name: f for f in dataclasses.fields(schema)}
    found = []
    for key in map(str, node.keys()):
        if key not in fields:
            found.append(f"{prefix}{key}")
            continue
        child = node._get_node(key)
        child_schema = OmegaConf.get_type(child) if isinstance(child, DictConfig) else None
        found += _unknown_keys(child, child_schema, f"{prefix}{key}.")
    return found


def to_config(cfg: DictConfig) -> Config:
    """Full validation: types, missing values, unknown keys, value ranges."""
    unknown = _unknown_keys(cfg, Config, "")
    if unknown:
        raise UsageError(
            f"unknown config key {unknown[0]!r}; check the spelling (`python -m gepa_lab --cfg job` prints every key)"
        )
    try:
        obj = OmegaConf.to_object(cfg)
    except Exception as exc:
        raise UsageError(one_line(exc)) from exc
    assert isinstance(obj, Config)
    try:
        search_config(obj).validate()
        evaluation_settings(obj).validate()
        if obj.progress not in ("auto", "bar", "log", "off"):
            raise ValueError(f"progress must be one of auto, bar, log, off (got {obj.progress!r})")
    except ValueError as exc:
        raise UsageError(str(exc)) from exc
    return obj


def search_config(conf: Config) -> Any:
    from gepa_lab.engine import SearchConfig

    return SearchConfig(
        max_iterations=conf.search.max_iterations,
        max_metric_calls=conf.search.max_metric_calls,
        minibatch_size=conf.search.minibatch_size,
        random_seed=conf.search.random_seed,
        min_holdout_improvement=conf.promotion.min_holdout_improvement,
        critical_tolerance=conf.promotion.critical_tolerance,
        max_cost_usd=conf.search.max_cost_usd,
        time_limit_s=conf.search.time_limit_s,
    )


def evaluation_settings(conf: Config) -> Any:
    from gepa_lab.evaluation import EvaluationSettings

    e = conf.evaluation
    return EvaluationSettings(workers=e.workers, backend=e.backend, timeout_s=e.timeout_s,
                              max_retries=e.max_retries, retry_backoff_s=e.retry_backoff_s,
                              max_consecutive_failures=e.max_consecutive_failures)


def build_evaluator(cfg: Any) -> Any:
    if cfg.name == "skillcraft":
        from evaluators.skillcraft import SkillCraftEvaluator

        return SkillCraftEvaluator(
            family=cfg.family,
            data_dir=cfg.data_dir,
            token_budget=cfg.token_budget,
            usd_per_1k_tokens=cfg.usd_per_1k_tokens,
        )
    raise UsageError(f"unknown evaluator {cfg.name!r}")


def build_reflector(cfg: Any) -> Any:
    if cfg.name == "heuristic":
        from evaluators.skillcraft import HeuristicReflector

        return HeuristicReflector(seed=cfg.seed)
    raise UsageError(f"unknown reflector {cfg.name!r}")


def _sigterm_as_interrupt() -> None:
    """SIGTERM takes the Ctrl-C path: checkpoint kept, MLflow run KILLED, exit 130."""
    import signal
    import threading

    if threading.current_thread() is threading.main_thread():
        def handler(signum: int, frame: Any) -> None:
            raise KeyboardInterrupt(f"signal {signum}")

        signal.signal(signal.SIGTERM, handler)


def run(cfg: DictConfig, run_dir: Path, hydra_choices: dict[str, Any] | None = None) -> int:
    for key, value in OFFLINE_ENV.items():
        os.environ.setdefault(key, value)
    from gepa_lab.data import load_artifact, load_dataset_dir, resolve_path
    from gepa_lab.engine import optimize
    from gepa_lab.evaluation import EvaluatorContractError, RunAborted
    from gepa_lab.mlflow_tracker import MlflowTrackingError
    from gepa_lab.progress import ProgressTracker
    from gepa_lab.reflection import ReflectionSettings
    from gepa_lab.summary import format_summary

    _sigterm_as_interrupt()
    try:
        conf = to_config(cfg)
        search = search_config(conf)
        ds_cfg = conf.dataset
        dataset = load_dataset_dir(
            ds_cfg.path,
            id=ds_cfg.id,
            version=ds_cfg.version,
            files={"feedback": ds_cfg.feedback, "validation": ds_cfg.validation, "holdout": ds_cfg.holdout},
            manifest=ds_cfg.manifest,
        )
        seed = load_artifact(ds_cfg.seed_artifact, base=resolve_path(ds_cfg.path))
        evaluator = build_evaluator(conf.evaluator)
        reflector = build_reflector(conf.reflector)
        if conf.resume:
            run_dir = resolve_path(conf.resume)
            if not run_dir.is_dir():
                raise UsageError(f"resume={conf.resume}: no such run directory")
        container = OmegaConf.to_container(cfg, resolve=True)
        assert isinstance(container, dict)
        run_config = {str(k): v for k, v in container.items()}
        run_config["hydra_choices"] = dict(hydra_choices or {})
        trackers: list[Any] = [ProgressTracker(search.max_metric_calls, conf.progress, search.max_iterations)]
        if conf.tracking.name == "mlflow":
            from gepa_lab.mlflow_tracker import build_tracker

            # Last: a tracker whose start() fails after MLflow's would leave its run RUNNING.
            trackers.append(build_tracker(conf.tracking, conf.experiment_name, run_dir))
        result = optimize(
            seed,
            dataset,
            evaluator,
            reflector,
            search,
            submit=conf.submit,
            run_dir=run_dir,
            trackers=trackers,
            run_config=run_config,
            evaluation=evaluation_settings(conf),
            reflection=ReflectionSettings(conf.reflection.max_retries, conf.reflection.retry_backoff_s),
            resume=bool(conf.resume),
        )
    except UsageError as exc:
        fail(str(exc), 2)
    except (ValueError, FileNotFoundError, EvaluatorContractError, RunAborted, MlflowTrackingError) as exc:
        fail(str(exc), 1)
    except KeyboardInterrupt:
        print(
            f"gepa_lab: interrupted; the run is checkpointed in {run_dir}. Resume with the same "
            f"overrides plus resume={run_dir}",
            file=sys.stderr,
        )
        raise SystemExit(130) from None
    print(format_summary(result, conf.experiment_name, run_dir))
    return 0
