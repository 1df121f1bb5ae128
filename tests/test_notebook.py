"""`notebooks/compare_runs.ipynb` runs end to end against a fresh store (so it can never rot)."""

from __future__ import annotations

from pathlib import Path

import nbformat
import pytest
from fixtures_mlflow import toy_run
from nbclient import NotebookClient

NOTEBOOK = Path(__file__).resolve().parent.parent / "notebooks" / "compare_runs.ipynb"


def outputs_text(nb: nbformat.NotebookNode, tag: str) -> str:
    cell = next(c for c in nb.cells if tag in c.metadata.get("tags", []))
    parts = []
    for out in cell.outputs:
        parts.append(out.get("text", ""))
        parts.append(out.get("data", {}).get("text/plain", ""))
    return "\n".join(parts)


@pytest.mark.slow
@pytest.mark.usefixtures("mlflow_env")
def test_compare_runs_notebook_executes(tmp_path: Path, monkeypatch) -> None:
    from gepa_lab.note import main as note

    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    for experiment, seed in (("toy-a", 1), ("toy-a", 2), ("toy-b", 1)):
        toy_run(uri, tmp_path / f"{experiment}-{seed}", experiment=experiment, random_seed=seed, iterations=3)
    assert note([str(tmp_path / "toy-b-1"), "steps carry the gain", "--next", "try pitfalls"]) == 0
    monkeypatch.setenv("GEPA_LAB_MLFLOW_URI", uri)
    nb = nbformat.read(NOTEBOOK, as_version=4)
    NotebookClient(nb, timeout=300, kernel_name="python3",
                   resources={"metadata": {"path": str(tmp_path)}}).execute()  # raises on any cell error
    assert "3 runs, 3 finished" in outputs_text(nb, "runs")
    assert "steps carry the gain" in outputs_text(nb, "notes") and "toy-a" not in outputs_text(nb, "notes")
    assert "not an LM" not in outputs_text(nb, "runs")  # toy runs are no simulation: no SkillCraft-sim caveat
    experiments = outputs_text(nb, "experiments")
    assert "toy-a" in experiments and "toy-b" in experiments
    assert "ho1" in outputs_text(nb, "holdout")
    assert "reflection_rejected" in outputs_text(nb, "lineage-table")  # every proposal, from the table
    images = [o for c in nb.cells for o in c.get("outputs", []) if "image/png" in o.get("data", {})]
    assert len(images) == 3  # trajectories, lineage, holdout deltas
