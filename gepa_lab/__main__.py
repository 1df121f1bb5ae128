"""`python -m gepa_lab experiment=recipe` — the Hydra entry point."""

from __future__ import annotations

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


if __name__ == "__main__":
    from gepa_lab.cli import precheck_overrides

    precheck_overrides(CONF_DIR, sys.argv[1:])
    main()
