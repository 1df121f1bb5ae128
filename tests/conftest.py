"""Test-wide environment (offline, no telemetry, no shared caches) and shared fixtures."""

from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path
from typing import Any

import pytest
from hypothesis import settings
from hypothesis.configuration import set_hypothesis_home_dir

# Tests write nothing into the checkout: Hypothesis keeps no example database, and its other files
# (a constants cache) go to a temporary folder instead of ./.hypothesis.
settings.register_profile("gepa-lab", database=None)
settings.load_profile("gepa-lab")
set_hypothesis_home_dir(Path(tempfile.gettempdir()) / "gepa-lab-test-hypothesis")

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
os.environ.setdefault("MLFLOW_DISABLE_TELEMETRY", "true")
os.environ.setdefault("HF_DATASETS_OFFLINE", "1")
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("DSPY_CACHEDIR", os.path.join(os.environ.get("TMPDIR", "/tmp"), "gepa-lab-test-dspy-cache"))

pytest_plugins = ["fixtures_mlflow"]

ROOT = Path(__file__).resolve().parents[1]
RECIPE_DATA = ROOT / "datasets" / "skillcraft" / "recipe"
# Differ between two otherwise identical runs (ids, timestamps), or say what this process paid.
VOLATILE = frozenset({"experiment_id", "started_at", "recorded_at", "at", "id", "elapsed_s",
                      "decision_paid_evaluations", "holdout_reuse"})


@pytest.fixture(autouse=True)
def look_ledger(tmp_path_factory, monkeypatch) -> Path:
    """Each test counts its own holdout looks (gepa_lab/runs/looks.py), never in the user's ledger;
    processes a test starts inherit it."""
    path = tmp_path_factory.mktemp("ledger") / "looks.jsonl"
    monkeypatch.setenv("GEPA_LAB_LEDGER", str(path))
    return path


def strip_volatile(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: strip_volatile(v) for k, v in value.items() if k not in VOLATILE}
    if isinstance(value, list):
        return [strip_volatile(v) for v in value]
    return value


PROPOSAL_KINDS = ("candidate_accepted", "candidate_rejected", "candidate_duplicate", "reflection_rejected",
                  "proposal_skipped")
LIFECYCLE = ("run_resumed", "run_interrupted", "run_failed")


class RunRecord:
    """Reads a run directory the way an auditor would (tests only): experiment.json, the
    evaluations it paid for (evaluations.jsonl, by cache key) and its history (events.jsonl)."""

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
    def paid(self) -> dict[str, dict[str, Any]]:
        """Every paid evaluation by cache key."""
        return {row["key"]: row for row in self.jsonl("evaluations.jsonl")}

    @property
    def events(self) -> list[dict[str, Any]]:
        return self.jsonl("events.jsonl")

    @property
    def evaluations(self) -> list[dict[str, Any]]:
        """Scored batches in order, each with its per-case results."""
        paid = self.paid
        out = []
        for e in self.events:
            if e["kind"] == "batch":
                d = e["data"]
                results = [{k: v for k, v in (paid[ref] if isinstance(ref, str) else ref).items() if k != "key"}
                           for ref in d["cases"]]
                out.append({"index": d["index"], "phase": d["phase"], "candidate_id": d["candidate_id"],
                            "seed": d["seed"], "results": results})
        return out

    @property
    def proposals(self) -> list[dict[str, Any]]:
        return [e["data"] for e in self.events if e["kind"] in PROPOSAL_KINDS]

    @property
    def candidates(self) -> list[dict[str, Any]]:
        """The seed, then every child a proposal produced and scored (accepted or rejected)."""
        experiment = self.json("experiment.json")
        out = [{"id": experiment["seed"]["id"], "status": "seed", "artifact": experiment["seed"]["artifact"]}]
        for p in self.proposals:
            if p["status"] in ("accepted", "rejected") and p["artifact"] is not None:
                out.append({"id": p["candidate_id"], "status": p["status"], "artifact": p["artifact"],
                            "parent_id": p["parent_id"], "component": p["component"], "iteration": p["iteration"],
                            "rationale": p["rationale"]})
        return out

    def kinds(self) -> list[str]:
        return [e["kind"] for e in self.events]

    def comparable(self) -> dict[str, Any]:
        """The content of the record minus ids, timestamps, run-lifecycle events (resumed,
        interrupted) and the order evaluations were paid in, so an interrupted-and-resumed run
        compares equal to a clean one."""
        out = {name: strip_volatile(self.json(name)) for name in ("experiment.json", "result.json")
               if (self.dir / name).exists()}
        out["evaluations.jsonl"] = sorted(self.paid)
        out["events.jsonl"] = strip_volatile([{k: v for k, v in e.items() if k != "at"} for e in self.events
                                              if e["kind"] not in LIFECYCLE])
        return out


@pytest.fixture
def read_record() -> type[RunRecord]:
    return RunRecord


@pytest.fixture
def url(tmp_path: Path) -> str:
    """A revision store's URL: a new SQLite file (test files with another store override it)."""
    return f"sqlite:///{tmp_path / 'revisions.db'}"


@pytest.fixture
def store(url: str) -> Any:
    """An open revision store at `url`."""
    from gepa_lab.revisions.store import RevisionStore

    with RevisionStore(url) as s:
        yield s


@pytest.fixture(scope="session")
def recipe_data() -> Path:
    """The committed SkillCraft-sim recipe dataset directory."""
    return RECIPE_DATA


# -- tests write nothing into the checkout -----------------------------------------------------------
def _untracked() -> set[str] | None:
    """Untracked and ignored paths of the checkout (None outside a git checkout)."""
    import subprocess

    try:
        out = subprocess.run(["git", "status", "--porcelain", "--ignored", "--untracked-files=all"], cwd=ROOT,
                             capture_output=True, text=True, timeout=60)
    except (OSError, subprocess.SubprocessError):
        return None
    if out.returncode != 0:
        return None
    paths = {line[3:] for line in out.stdout.splitlines() if line[:2] in ("??", "!!")}
    return {p for p in paths if "__pycache__" not in p and not p.startswith((".venv", ".pytest_cache"))}


def pytest_sessionstart(session: pytest.Session) -> None:
    session.config.stash[_BEFORE] = _untracked()


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    before = session.config.stash.get(_BEFORE, None)
    after = _untracked() if before is not None else None
    if before is not None and after is not None and after - before:
        written = sorted(after - before)
        print(f"\nthe tests wrote into the checkout: {', '.join(written[:10])}", flush=True)
        session.exitstatus = pytest.ExitCode.TESTS_FAILED


_BEFORE = pytest.StashKey[set[str] | None]()
