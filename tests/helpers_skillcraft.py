"""The committed SkillCraft-sim recipe data, for the simulator and reflector tests."""

from __future__ import annotations

import json
from pathlib import Path

from gepa_lab.core.contracts import Case

DATA = Path(__file__).resolve().parents[1] / "datasets" / "skillcraft" / "recipe"


def load(split: str) -> list[Case]:
    return [Case.from_dict(json.loads(line)) for line in (DATA / f"{split}.jsonl").read_text().splitlines()]
