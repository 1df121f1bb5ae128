"""`python -m gepa_lab experiment=recipe`: the Hydra entry point."""

from __future__ import annotations

import os
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


def entry() -> None:
    """Hydra prints its own multi-line errors unless HYDRA_FULL_ERROR is set, in which case it
    raises them: we turn composition errors (single run or -m) into one line and exit code 2."""
    os.environ.setdefault("HYDRA_FULL_ERROR", "1")
    from hydra.errors import HydraException
    from omegaconf.errors import OmegaConfBaseException

    from gepa_lab.cli import describe_config_error, fail
    from gepa_lab.core.errors import ConfigError

    try:
        main()
    except ConfigError as exc:  # raised by the config check before any run directory exists
        fail(str(exc), 2)
    except (HydraException, OmegaConfBaseException) as exc:
        fail(describe_config_error(exc), 2)


if __name__ == "__main__":
    entry()
