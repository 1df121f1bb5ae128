"""Test-wide environment (offline, no telemetry, no shared caches) and shared fixtures."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
os.environ.setdefault("MLFLOW_DISABLE_TELEMETRY", "true")
os.environ.setdefault("HF_DATASETS_OFFLINE", "1")
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("DSPY_CACHEDIR", os.path.join(os.environ.get("TMPDIR", "/tmp"), "gepa-lab-test-dspy-cache"))

pytest_plugins = ["fixtures_mlflow"]

ROOT = Path(__file__).resolve().parents[1]
RECIPE_DATA = ROOT / "datasets" / "skillcraft" / "recipe"
# Differ between two otherwise identical runs: ids and timestamps.
VOLATILE = frozenset({"experiment_id", "started_at", "recorded_at", "at", "id"})


def strip_volatile(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: strip_volatile(v) for k, v in value.items() if k not in VOLATILE}
    if isinstance(value, list):
        return [strip_volatile(v) for v in value]
    return value


class RunRecord:
    """Reads a run directory the way an auditor would (tests only)."""

    def __init__(self, run_dir: Path | str):
        self.dir = Path(run_dir)

    def json(self, name: str) -> Any:
        return json.loads((self.dir / name).read_bytes().decode("utf-8"))  # strict UTF-8

    def jsonl(self, name: str) -> list[dict[str, Any]]:
        path = self.dir / name
        if not path.exists():
            return []
        return [json.loads(line) for line in path.read_bytes().decode("utf-8").splitlines() if line.strip()]

    @property
    def evaluations(self) -> list[dict[str, Any]]:
        return self.jsonl("evaluations.jsonl")

    @property
    def candidates(self) -> list[dict[str, Any]]:
        return self.jsonl("candidates.jsonl")

    @property
    def events(self) -> list[dict[str, Any]]:
        return self.jsonl("events.jsonl")

    def kinds(self) -> list[str]:
        return [e["kind"] for e in self.events]

    def comparable(self) -> dict[str, Any]:
        """The search content of the record, minus ids / timestamps and run-lifecycle events
        (resumed, interrupted), so an interrupted-and-resumed run compares equal to a clean one."""
        out = {name: strip_volatile(self.json(name)) for name in ("experiment.json", "result.json")
               if (self.dir / name).exists()}
        for name in ("evaluations.jsonl", "candidates.jsonl", "pool.jsonl"):
            out[name] = strip_volatile(self.jsonl(name))
        out["events.jsonl"] = strip_volatile([e for e in self.events if "mark" in e])
        return out


@pytest.fixture
def read_record() -> type[RunRecord]:
    return RunRecord


@pytest.fixture(scope="session")
def recipe_data() -> Path:
    """The committed SkillCraft-sim recipe dataset directory."""
    return RECIPE_DATA
