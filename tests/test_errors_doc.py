"""docs/errors.md's command-line table is true: every row's input gives that exit code and line."""

from __future__ import annotations

import importlib.util
import os
import shlex
import subprocess
import sys

import pytest
from conftest import ROOT

DOC = (ROOT / "docs" / "errors.md").read_text(encoding="utf-8")


def _rows(section: str = "## On the command line", end: str = "## The local model") -> list[tuple[str, int, str]]:
    table = DOC.split(section)[1].split(end)[0]
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
LOCAL_ROWS = _rows("## The local model and prompt tasks", "## During a run")


def test_the_table_was_read():
    assert len(ROWS) >= 20 and {code for _, code, _ in ROWS} == {1, 2}
    assert len(LOCAL_ROWS) >= 25 and {code for _, code, _ in LOCAL_ROWS} == {1, 2}


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


@pytest.mark.slow
@pytest.mark.parametrize("args, code, message", LOCAL_ROWS, ids=[r[0] for r in LOCAL_ROWS])
def test_each_documented_local_model_input_gives_its_documented_error(tmp_path, args, code, message):
    if importlib.util.find_spec("llama_cpp") is None and os.environ.get("GEPA_LAB_REQUIRE_LOCAL") != "1":
        pytest.skip("the .[local] extra is not installed")
    (tmp_path / "notgguf.gguf").write_text("not a model")
    env = {k: v for k, v in os.environ.items() if k != "OPENAI_API_KEY"}
    done = subprocess.run([sys.executable, "-m", "gepa_lab", "evaluator=prompt", "dataset=sentiment",
                           "reflector=prompt_rules", "tracking=none", "progress=off", *shlex.split(args)],
                          cwd=tmp_path, capture_output=True, text=True, timeout=300, env=env)
    errors = [x for x in done.stderr.splitlines() if x.startswith("gepa_lab: error:")]
    assert done.returncode == code, done.stderr
    assert len(errors) == 1, done.stderr
    assert errors[0].startswith(message[:-1]) if message.endswith("…") else errors[0] == message
    assert not any((tmp_path / "outputs").glob("*/*/evaluations.jsonl")), "nothing is paid"
