"""`python -m gepa_lab.note`: a researcher's note goes to the run dir and to the MLflow run (tags,
description), survives the run's own end, shows in `report` and `--list`; bad input is one line."""

from __future__ import annotations

import csv
import json
import subprocess
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest
from fixtures_mlflow import ToyEvaluator, ToyReflector, toy_dataset, toy_run, toy_seed

from gepa_lab import SearchConfig, optimize
from gepa_lab.note import main as note
from gepa_lab.report import main as report
from gepa_lab.tracking import mlflow_links

pytestmark = pytest.mark.usefixtures("mlflow_env")


def errors(capsys: pytest.CaptureFixture[str]) -> list[str]:
    return capsys.readouterr().err.strip().splitlines()


def test_a_note_by_run_dir_and_by_run_id(mlflow_uri, mlflow_client, tmp_path, capsys) -> None:
    run_dir = tmp_path / "run"
    tracker = toy_run(mlflow_uri, run_dir, experiment="toy-noted")
    assert note([str(run_dir), "IMPROVED  in steps\\n carries it", "--next", "try pitfalls", "--author", "ada"]) == 0
    out = capsys.readouterr().out
    port = mlflow_links.ui_port()  # the link and the command that serves it agree
    assert f"note added: {run_dir / 'notes.jsonl'}; MLflow run http://127.0.0.1:{port}/#/experiments/" in out
    assert f"(serve it first: mlflow ui --backend-store-uri {mlflow_uri} --port {port})" in out
    assert note([tracker.run_id, "second thought", "--tracking-uri", mlflow_uri, "--author", "bob"]) == 0
    notes = [json.loads(line) for line in (run_dir / "notes.jsonl").read_text().splitlines()]
    assert [(n["author"], n["conclusion"], n["next"]) for n in notes] == [
        ("ada", "IMPROVED in steps\\n carries it", "try pitfalls"), ("bob", "second thought", "")]
    tags = mlflow_client.get_run(tracker.run_id).data.tags
    assert (tags["conclusion"], tags["next_hypothesis"]) == ("second thought", "")  # the latest
    description = tags["mlflow.note.content"]
    assert description.startswith("**ELIGIBLE**")  # the decision stays
    assert "ada**: IMPROVED in steps\\n carries it  \n  *Next:* try pitfalls" in description
    assert description.index("ada**") < description.index("bob**: second thought")

    # The sweep report and --list show it.
    assert report(["--experiment", "toy-noted", "--tracking-uri", mlflow_uri, "--out", str(tmp_path / "r"),
                   "--no-plot"]) == 0
    printed = capsys.readouterr().out
    assert "second thought" in printed
    assert f"MLflow, the runs table: http://127.0.0.1:{mlflow_links.ui_port()}/#/experiments/" in printed
    assert "viewStateShareKey=gepa-lab-decisions" in printed and "MLflow, these runs compared: " in printed
    row = next(csv.DictReader((tmp_path / "r" / "report.csv").open()))
    assert (row["conclusion"], row["run_url"].split("/runs/")[1]) == (
        "second thought", f"{tracker.run_id}?workflowType=machine_learning")
    assert "## Notes" in (tmp_path / "r" / "report.md").read_text()
    assert note(["--list", "--experiment", "toy-noted", "--tracking-uri", mlflow_uri]) == 0
    listed = capsys.readouterr().out
    assert f"toy-noted seed 1  {tracker.run_id}\n    conclusion: second thought\n" in listed


def test_a_note_while_the_run_runs_survives_its_end(mlflow_uri, mlflow_client, tmp_path) -> None:
    run_dir = tmp_path / "run"

    class NoteMidway:
        def iteration(self, stats: Any) -> None:
            if stats.iteration != 2:
                return
            deadline = time.monotonic() + 120
            while not (run_dir / "mlflow_run.json").is_file() and time.monotonic() < deadline:
                time.sleep(0.1)  # the logger creates the parent run
            assert note([str(run_dir), "looks promising early"]) == 0

    tracker = toy_run(mlflow_uri, run_dir, experiment="toy-midway", after=(NoteMidway(),))
    tags = mlflow_client.get_run(tracker.run_id).data.tags
    assert tags["conclusion"] == "looks promising early"
    assert tags["mlflow.note.content"].startswith("**ELIGIBLE**") and "looks promising early" in tags[
        "mlflow.note.content"]


def test_a_run_without_mlflow_keeps_the_note_in_its_dir(tmp_path, capsys) -> None:
    optimize(toy_seed(), toy_dataset(), ToyEvaluator(), ToyReflector(), SearchConfig(max_iterations=1),
             run_dir=tmp_path)
    assert note([str(tmp_path), "no tracking here"]) == 0
    assert "the note is in its directory only" in capsys.readouterr().out
    assert json.loads((tmp_path / "notes.jsonl").read_text())["conclusion"] == "no tracking here"


@pytest.mark.parametrize("args, code, message", [
    (["somewhere"], 2, "gepa_lab.note: error: give a run (directory or MLflow run id) and a conclusion: "),
    (["not-a-run", "x"], 1, "gepa_lab.note: error: 'not-a-run' is neither a run directory nor an MLflow run id"),
    ([".", "x"], 1, "gepa_lab.note: error: . holds no gepa_lab run (no experiment.json); "),
    (["--frobnicate"], 2, "gepa_lab.note: error: unrecognized arguments: --frobnicate"),
])
def test_bad_input_is_one_line(args, code, message, tmp_path, monkeypatch, capsys) -> None:
    monkeypatch.chdir(tmp_path)
    assert note(args) == code
    lines = errors(capsys)
    assert len(lines) == 1 and lines[0].startswith(message)
    assert not (Path(tmp_path) / "notes.jsonl").exists()


def test_the_report_shows_the_next_hypothesis(mlflow_uri, tmp_path, capsys) -> None:
    """Table, CSV and Markdown carry both halves of the latest note."""
    run_dir = tmp_path / "run"
    toy_run(mlflow_uri, run_dir, experiment="toy-next")
    assert note([str(run_dir), "steps carry it", "--next", "add pitfalls for units", "--author", "ada"]) == 0
    assert report(["--experiment", "toy-next", "--tracking-uri", mlflow_uri, "--out", str(tmp_path / "r"),
                   "--no-plot"]) == 0
    header, row = capsys.readouterr().out.splitlines()[1:3]  # the confirmation line, then the table
    assert header.split()[-2:] == ["note", "next"] and row.endswith(" steps carry it add pitfalls for units")
    assert next(csv.DictReader((tmp_path / "r" / "report.csv").open()))["next_hypothesis"] == "add pitfalls for units"
    table = [line for line in (tmp_path / "r" / "report.md").read_text().splitlines() if line.startswith("| ")]
    assert table[0].endswith("| note | next |") and table[1].endswith("| steps carry it | add pitfalls for units |")


@pytest.mark.parametrize("tool, args", [("gepa_lab.report", ["--experiment", "toy-next", "--no-plot", "--out", "r"]),
                                        ("gepa_lab.note", ["--list", "--experiment", "toy-next"])])
def test_a_reader_that_leaves_early_ends_quietly(mlflow_uri, tmp_path, tool, args) -> None:
    """`python -m gepa_lab.report … | head -1`: exit 141, no BrokenPipeError traceback."""
    toy_run(mlflow_uri, None, experiment="toy-next")
    proc = subprocess.Popen([sys.executable, "-m", tool, *args, "--tracking-uri", mlflow_uri],
                            cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    proc.stdout.close()  # the reader is gone before the first line
    stderr = proc.stderr.read()
    assert proc.wait(timeout=120) == 141, stderr
    assert "Traceback" not in stderr and "BrokenPipeError" not in stderr and "Exception ignored" not in stderr


def test_twelve_concurrent_notes_lose_nothing_and_the_last_is_the_conclusion(mlflow_uri, mlflow_client,
                                                                             tmp_path) -> None:
    """Racing writers (threads here; the lock and the merge are the same across processes): every
    note in notes.jsonl and in the MLflow description, and the conclusion is the last note written."""
    run_dir = tmp_path / "run"
    tracker = toy_run(mlflow_uri, run_dir, experiment="toy-race", iterations=1)
    start = threading.Barrier(12)

    def write(n: int) -> int:
        start.wait()
        return note([str(run_dir), f"note {n}", "--next", f"after {n}"])

    with ThreadPoolExecutor(12) as pool:
        assert list(pool.map(write, range(12))) == [0] * 12
    written = [json.loads(line)["conclusion"] for line in (run_dir / "notes.jsonl").read_text().splitlines()]
    assert sorted(written) == sorted(f"note {n}" for n in range(12))
    tags = mlflow_client.get_run(tracker.run_id).data.tags
    assert all(f"**: note {n}  \n  *Next:* after {n}\n" in tags["mlflow.note.content"] for n in range(12))
    assert tags["mlflow.note.content"].count("*Next:*") == 12
    assert (tags["conclusion"], tags["next_hypothesis"]) == (written[-1], written[-1].replace("note", "after"))
