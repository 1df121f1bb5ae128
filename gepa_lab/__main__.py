"""`python -m gepa_lab experiment=recipe`: the Hydra entry point."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import hydra
from hydra.core.hydra_config import HydraConfig
from omegaconf import DictConfig

from gepa_lab.config import register_configs

_HERE = Path(__file__).resolve().parent
# Installed wheel: gepa_lab/conf; checkout or editable install: <repo>/conf.
CONF_DIR = next(p for p in (_HERE / "conf", _HERE.parent / "conf") if (p / "config.yaml").is_file())

register_configs()


@hydra.main(config_path=str(CONF_DIR), config_name="config", version_base="1.3")
def main(cfg: DictConfig) -> None:
    from gepa_lab.cli import run

    runtime = HydraConfig.get().runtime
    run(cfg, Path(runtime.output_dir), dict(runtime.choices))


def with_recorded_overrides(argv: list[str]) -> list[str]:
    """`resume=<run dir>` brings the run's own overrides (recorded in its experiment.json) back, so
    `resume=<dir> promotion=strict` decides that run again; what is given now wins."""
    resume = next((a.split("=", 1)[1] for a in argv if a.startswith("resume=")), "")
    if not resume or "-m" in argv or "--multirun" in argv:
        return argv
    from gepa_lab.runs.record import load_experiment
    from gepa_lab.study import override_key, within

    try:
        recorded = [str(o) for o in load_experiment(resume).config.get("overrides") or ()]
    except (OSError, ValueError, KeyError):
        return argv  # not a readable run: the resume itself says why
    given = {"resume", "hydra", *(override_key(a) for a in argv if "=" in a and not a.startswith("-"))}
    return [o for o in recorded if not any(within(override_key(o), g) for g in given)] + argv


def start_logger_early(argv: list[str]) -> None:
    """The MLflow logging process spends ~2.5 s of CPU importing MLflow before it can open the run;
    started here, before Hydra composes the config (~1 s), it is ready by the time the run needs it.
    Only for a single run whose command line leaves tracking at its default (MLflow); unused (the
    config turns tracking off after all, or fails its check), it is stopped when this process exits."""
    if any(a.startswith("-") or (a.startswith("tracking=") and a != "tracking=mlflow") for a in argv):
        return
    from gepa_lab.tracking.mlflow_tracker import prespawn

    prespawn()


def entry() -> None:
    """Hydra prints its own multi-line errors unless HYDRA_FULL_ERROR is set, in which case it
    raises them: we turn composition errors (single run or -m) into one line and exit code 2, and
    a closed stdout (`| head`) into a quiet exit 141."""
    os.environ.setdefault("HYDRA_FULL_ERROR", "1")
    from hydra.errors import HydraException
    from hydra.main import get_args_parser
    from omegaconf.errors import OmegaConfBaseException

    from gepa_lab.cli import fail
    from gepa_lab.config import describe_config_error
    from gepa_lab.core.errors import ConfigError, describe, reader_left

    sys.argv[1:] = with_recorded_overrides(sys.argv[1:])
    start_logger_early(sys.argv[1:])
    try:
        # Hydra's own argument parser first, so a bad flag is one line (argparse would print its
        # usage block before the error).
        parser = get_args_parser()
        parser.error = lambda message: fail(f"{message} (`python -m gepa_lab --help`)", 2)  # type: ignore[method-assign]
        parser.parse_args()
        main()
    except ConfigError as exc:  # raised by the config check before any run directory exists
        fail(str(exc), 2)
    except (HydraException, OmegaConfBaseException) as exc:
        fail(describe_config_error(exc), 2)
    except ValueError as exc:  # Hydra's or a launcher's refusal (`evaluator=null`, a joblib setting):
        fail(describe(exc), 2)  # the task turns its own into exit 1 before they get here
    except BrokenPipeError:  # `python -m gepa_lab ... | head`: the reader left; end as Unix tools do
        reader_left()


if __name__ == "__main__":
    entry()
