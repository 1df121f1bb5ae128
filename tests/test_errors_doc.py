"""docs/errors.md's command-line table is true: every row's input gives that exit code and line."""

from __future__ import annotations

import subprocess
import sys

import pytest
from conftest import ROOT

DOC = (ROOT / "docs" / "errors.md").read_text(encoding="utf-8")


def _rows() -> list[tuple[str, int, str]]:
    table = DOC.split("## On the command line")[1].split("## During a run")[0]
    rows = []
    for line in table.splitlines():
        if not line.startswith("| `"):
            continue
        cells = [c.strip() for c in line.strip().strip("|").split(" | ")]
        args, code, message = cells[0].strip("`"), int(cells[1]), cells[2]
        prefix = "…" in message
        message = message.split("…")[0].strip()
        if message.startswith("`") and message.endswith("`"):
            message = message[1:-1]
        elif message.startswith("`"):
            message = message[1:].rstrip("`")
        rows.append((args, code, message + ("…" if prefix else "")))
    return rows


ROWS = _rows()


def test_the_table_was_read():
    assert len(ROWS) >= 20 and {code for _, code, _ in ROWS} == {1, 2}


@pytest.mark.slow
@pytest.mark.parametrize("args, code, message", ROWS, ids=[r[0] for r in ROWS])
def test_each_documented_input_gives_its_documented_error(tmp_path, args, code, message):
    flags = [a for a in args.split() if a.startswith("-")]  # before the overrides, as argparse wants them
    overrides = [a for a in args.split() if not a.startswith("-")]
    done = subprocess.run([sys.executable, "-m", "gepa_lab", *flags, "experiment=recipe", "tracking=none",
                           "progress=off", *overrides], cwd=tmp_path, capture_output=True, text=True, timeout=120)
    errors = [x for x in done.stderr.splitlines() if x.startswith("gepa_lab: error:")]
    assert done.returncode == code, done.stderr
    assert len(errors) == 1, done.stderr
    if message.endswith("…"):
        assert errors[0].startswith(message[:-1])
    else:
        assert errors[0] == message
