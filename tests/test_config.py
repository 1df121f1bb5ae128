"""The Hydra config tree: every option composes into the engine's own dataclasses."""

from __future__ import annotations

from pathlib import Path

import pytest
from hydra import compose, initialize_config_dir

from gepa_lab import PromotionPolicy, SearchConfig
from gepa_lab.cli import check_config
from gepa_lab.config import register_configs

CONF = Path(__file__).resolve().parents[1] / "conf"
register_configs()


def composed(*overrides: str):
    with initialize_config_dir(config_dir=str(CONF), version_base="1.3"):
        return compose(config_name="config", overrides=list(overrides))


@pytest.mark.parametrize("preset", ["lenient", "default", "strict"])
def test_promotion_yaml_presets_equal_the_library_presets(preset):
    assert check_config(composed("experiment=recipe", f"promotion={preset}")).promotion == PromotionPolicy.preset(preset)


def test_the_default_config_is_the_engine_defaults():
    conf = check_config(composed("experiment=recipe"))
    assert conf.search == SearchConfig()
    assert conf.promotion == PromotionPolicy()


@pytest.mark.parametrize("experiment", sorted(p.stem for p in (CONF / "experiment").glob("*.yaml")))
def test_every_experiment_composes_and_validates(experiment):
    conf = check_config(composed(f"experiment={experiment}"))
    assert conf.experiment_name == experiment
