"""docs/errors.md's tables of inputs are true: every row's input gives that exit code and line
(`python -m gepa_lab` in a subprocess; the other commands in this process, against a store, a
damaged store, a file that is no database, a closed port and a server that never answers)."""

from __future__ import annotations

import contextlib
import importlib.util
import os
import shlex
import shutil
import socket
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest
from conftest import ROOT
from test_revisions_store import body, request

from gepa_lab import note, report
from gepa_lab.revisions import cli, service
from gepa_lab.revisions.store import RevisionStore

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


OTHER = _rows("## The other commands", "\n## The end")
MAINS = {"gepa_lab.note": note.main, "gepa_lab.report": report.main, "gepa_lab.revisions": cli.main}


def test_the_other_table_was_read():
    assert len(OTHER) >= 25 and {r[0].split()[0] for r in OTHER} == set(MAINS)


def damage(source: Path, target: Path) -> None:
    """A copy of a SQLite file with one page's header broken: it opens, and `quick_check` finds it."""
    for page in range(1, source.stat().st_size // 4096):
        shutil.copy(source, target)
        with open(target, "r+b") as handle:
            handle.seek(4096 * page + 3)
            handle.write(b"\x7f\x7f")  # the page's cell count
        with contextlib.suppress(sqlite3.DatabaseError), sqlite3.connect(target) as db:  # unreadable: next page
            if db.execute("PRAGMA quick_check").fetchone()[0] != "ok":
                return
    raise AssertionError("no page to damage")


@pytest.fixture(scope="module")
def places(tmp_path_factory):
    """STORE (v1 active, v2 pending), DAMAGED, NOTADB, DOWN, SILENT: what the table's rows name."""
    folder = tmp_path_factory.mktemp("places")
    with RevisionStore(f"sqlite:///{folder / 'store.db'}") as store:
        first = service.submit(store, request(body())).revision
        service.approve(store, first.id, "ada", publish_root=folder / "published")
        service.submit(store, request(body("Check the units."), parent=first.id))
    damage(folder / "store.db", folder / "damaged.db")
    (folder / "notes.txt").write_text("not a database\n")
    silent = socket.socket()
    silent.bind(("127.0.0.1", 0))
    silent.listen(8)  # accepts into its backlog, never answers
    yield {"STORE": folder / "store.db", "DAMAGED": f"sqlite:///{folder / 'damaged.db'}",
           "NOTADB": f"sqlite:///{folder / 'notes.txt'}", "DOWN": "http://127.0.0.1:9",
           "SILENT": f"http://127.0.0.1:{silent.getsockname()[1]}"}
    silent.close()


@pytest.mark.parametrize("command, code, message", OTHER, ids=[r[0] for r in OTHER])
def test_each_documented_command_gives_its_documented_error(places, tmp_path, monkeypatch, capsys, command, code,
                                                           message):
    monkeypatch.chdir(tmp_path)
    shutil.copy(places["STORE"], tmp_path / "store.db")  # each row gets the store as it was made
    named = {**places, "STORE": f"sqlite:///{tmp_path / 'store.db'}"}
    for name, value in named.items():
        command, message = command.replace(name, str(value)), message.replace(name, str(value))
    tool, *args = shlex.split(command)
    started = time.monotonic()
    assert MAINS[tool](args) == code
    assert time.monotonic() - started < 30  # every network call has its deadline
    errors = [x for x in capsys.readouterr().err.splitlines() if x.startswith(f"{tool}: error:")]
    assert len(errors) == 1, errors
    assert errors[0].startswith(message[:-1]) if message.endswith("…") else errors[0] == message
