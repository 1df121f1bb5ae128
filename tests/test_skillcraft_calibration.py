"""The calibration study's quick mode runs in seconds and reports every row the study promises."""

from __future__ import annotations

import importlib.util
import logging
import re
import sys
import tempfile
from pathlib import Path

import pytest
from helpers_skillcraft import ROOT


@pytest.mark.slow
def test_quick_calibration_reports_headroom_and_every_statistic(tmp_path, capsys, monkeypatch):
    spec = importlib.util.spec_from_file_location("skillcraft_calibration",
                                                  ROOT / "experiments" / "skillcraft_calibration.py")
    assert spec and spec.loader
    study = importlib.util.module_from_spec(spec)
    sys.modules["skillcraft_calibration"] = study  # dataclasses resolve annotations through it
    try:
        spec.loader.exec_module(study)
    finally:
        sys.modules.pop("skillcraft_calibration", None)
    committed = ROOT / "experiments" / "reports" / "skillcraft_calibration.md"
    before = committed.read_bytes()
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))  # --quick writes into a new temporary folder
    try:
        assert study.main(["--quick", "--families", "weather", "--reflectors", "feedback,tuned"]) == 0
    finally:  # the study silences logging process-wide; later in-process runs need their logs
        logging.disable(logging.NOTSET)
    out = Path(capsys.readouterr().err.split("report: ")[-1].strip())
    assert out.parent.parent == tmp_path and committed.read_bytes() == before
    text = out.read_text()
    assert "not measurements of an LM" in text
    headroom, rest = text.split("### Runs")
    head = [line for line in headroom.splitlines() if line.startswith("| weather | ")]
    rows = [line for line in rest.split("## Family")[0].splitlines() if line.startswith("| weather | ")]
    assert len(head) == 2 and len(rows) == 4  # one line per family x reflector; one per run
    for row in head:
        cells = [c.strip() for c in row.strip("|").split("|")]
        assert len(cells) == 11
        s, w, r = (float(x) for x in cells[3].split(" / "))
        closed = float(re.match(r"\*\*(-?\d+)%", cells[4]).group(1))
        assert abs(closed - round(100 * (w - s) / (r - s))) <= 1  # the ratio is what the table says
        assert all("/" in cells[k] for k in (5, 6, 7, 8)) and "vs" in cells[9]
    assert re.search(r"Speed: \d+ µs per case evaluation", text)
    assert "paired is" in text and "Loops (≥ 5 identical tool calls)" in text
