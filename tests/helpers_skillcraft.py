"""The committed SkillCraft-sim data and small builders, for the simulator and reflector tests."""

from __future__ import annotations

import json
import statistics
from pathlib import Path
from typing import Any

from gepa_lab.core.artifacts import SkillSpec, artifact_from_dict
from gepa_lab.core.contracts import Case

ROOT = Path(__file__).resolve().parents[1]
DATASETS = ROOT / "datasets" / "skillcraft"
DATA = DATASETS / "recipe"
SPLITS = ("feedback", "validation", "holdout")


def data_dir(family: str = "recipe") -> Path:
    return DATASETS / family


def load(split: str, family: str = "recipe") -> list[Case]:
    lines = (data_dir(family) / f"{split}.jsonl").read_text(encoding="utf-8").splitlines()
    return [Case.from_dict(json.loads(line)) for line in lines]


def load_all(family: str = "recipe") -> list[Case]:
    return [c for s in SPLITS for c in load(s, family)]


def skill(base: dict[str, Any], **changes: Any) -> SkillSpec:
    data = {k: v for k, v in base.items() if k != "kind"}
    data.update(changes)
    art = artifact_from_dict(data)
    assert isinstance(art, SkillSpec)
    return art


def mean_score(ev: Any, art: Any, cases: list[Case], seeds: Any = range(12)) -> float:
    return statistics.mean(r.score for s in seeds for r in ev.evaluate(art, cases, s))


def per_case(ev: Any, art: Any, cases: list[Case], seeds: Any = range(12)) -> dict[str, float]:
    out: dict[str, list[float]] = {c.id: [] for c in cases}
    for s in seeds:
        for r in ev.evaluate(art, cases, s):
            out[r.case_id].append(r.score)
    return {k: statistics.mean(v) for k, v in out.items()}
