"""`python -m gepa_lab.note RUN "conclusion" [--next "hypothesis"]`: the researcher's note on a run.

RUN is a run directory or an MLflow parent run id. The note goes to `notes.jsonl` in the run
directory (one JSON line per note: time, author, conclusion, next) and to the MLflow run: the
tags `conclusion` and `next_hypothesis` (the latest note; columns of the runs table gepa-lab's
links open, and of `python -m gepa_lab.report`) and the run's description, where every note is
kept under "Researcher's notes". A run without MLflow (tracking=none) keeps the note in its
directory; an MLflow run whose directory is not on this machine keeps it in MLflow.

`python -m gepa_lab.note --list [--sweep ID|DIR | --experiment NAME]` lists a study's notes (the
latest per run, from MLflow).

Exit codes: 0 done; 1 the run or the store cannot be read or written; 2 bad arguments. Errors are
one line on stderr.
"""

from __future__ import annotations

import argparse
import fcntl
import getpass
import json
import re
import time
from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from gepa_lab import report
from gepa_lab.core.errors import describe, fail, run_main
from gepa_lab.core.redact import redact
from gepa_lab.tracking import mlflow_links
from gepa_lab.tracking.mlflow_tracker import default_uri
from gepa_lab.tracking.mlflow_values import DESCRIPTION_TAG, NOTES_MARKER, RUN_FILE, clip

PROG = "gepa_lab.note"
NOTES_FILE = "notes.jsonl"
RUN_ID = re.compile(r"[0-9a-f]{32}")


def build_parser() -> argparse.ArgumentParser:
    parser = report.study_parser(PROG, "Keep a researcher's note (conclusion, next hypothesis) with a run: in its "
                                 "run directory and its MLflow run (tags and description; the run's own store "
                                 "unless --tracking-uri). --list prints a study's notes (--sweep / --experiment).")
    parser.add_argument("run", nargs="?", metavar="RUN", help="a run directory or an MLflow parent run id")
    parser.add_argument("conclusion", nargs="?", help="what the run showed")
    parser.add_argument("--next", default="", metavar="HYPOTHESIS", help="what to try next, and why")
    parser.add_argument("--author", default=None, help="who concluded it (default: the login name)")
    parser.add_argument("--list", action="store_true", help="list the notes of a study instead")
    return parser


# -- where the run is --------------------------------------------------------------------------
def locate(run: str, tracking_uri: str | None) -> tuple[Path | None, str | None, str | None]:
    """(run dir, MLflow run id, tracking URI) of RUN: a run directory or an MLflow run id."""
    folder = Path(run)
    if folder.is_dir():
        file = folder / RUN_FILE
        if not (folder / "experiment.json").is_file() and not file.is_file():
            raise report.ReportError(f"{run} holds no gepa_lab run (no experiment.json); pass the directory a run "
                                     "printed as `record`, or its MLflow run id")
        try:
            stored = json.loads(file.read_text(encoding="utf-8")) if file.is_file() else {}
        except (OSError, ValueError) as exc:
            raise report.ReportError(f"cannot read {file}: {exc}") from None
        uri = tracking_uri or stored.get("tracking_uri")
        return folder, stored.get("run_id"), str(uri) if uri and stored.get("run_id") else None
    if RUN_ID.fullmatch(run):
        uri = tracking_uri or default_uri()
        run_dir = report.client_for(uri).get_run(run).data.tags.get("run_dir")
        return (Path(run_dir) if run_dir and Path(run_dir).is_dir() else None), run, uri
    raise report.ReportError(f"{run!r} is neither a run directory nor an MLflow run id (32 hex digits)")


# -- writing -----------------------------------------------------------------------------------
NOTE_TAG = "gepa_lab.note."  # + the note's time in ns: one tag per note, so concurrent notes never collide


def add_note(run_dir: Path | None, run_id: str | None, uri: str | None, note: dict[str, Any]) -> list[str]:
    """Store the note; returns where it went (for the confirmation line). Concurrent notes lose
    nothing: the run dir's notes are appended under a lock that also orders them (its time is taken
    there), and each note is its own MLflow tag, merged into the description and the latest-note
    tags until a read finds every note in place."""
    where = []
    key = f"{time.time_ns():020d}"
    if run_dir is not None:
        with open(run_dir / NOTES_FILE, "a", encoding="utf-8") as handle:
            fcntl.flock(handle, fcntl.LOCK_EX)  # released on close
            key = f"{time.time_ns():020d}"
            handle.write(json.dumps(note, ensure_ascii=False) + "\n")
        where.append(str(run_dir / NOTES_FILE))
    if run_id is None or uri is None:
        return where
    client = report.client_for(uri)
    client.set_tag(run_id, NOTE_TAG + key, json.dumps(note, ensure_ascii=False))
    while (tags := _merged(client, run_id)) is not None:
        client.log_batch(run_id, tags=tags)
    command = mlflow_links.ui_command(uri)  # a local store: the command that serves the link
    serve = f" (serve it first: {command})" if command else ""
    experiment_id = client.get_run(run_id).info.experiment_id
    return [*where, f"MLflow run {mlflow_links.run_url(uri, experiment_id, run_id)}{serve}"]


def _merged(client: Any, run_id: str) -> list[Any] | None:
    """The tags that bring the run's description (every note) and `conclusion` / `next_hypothesis`
    (the latest note) in line with its note tags; None when they already are."""
    from mlflow.entities import RunTag

    tags = client.get_run(run_id).data.tags
    notes = [json.loads(value) for name, value in sorted(tags.items()) if name.startswith(NOTE_TAG)]
    description = tags.get(DESCRIPTION_TAG, "")
    missing = "".join(line for line in map(_markdown, notes) if line not in description)
    latest = {"conclusion": clip(notes[-1]["conclusion"]), "next_hypothesis": clip(notes[-1]["next"])}
    if not missing and all(tags.get(name) == value for name, value in latest.items()):
        return None
    description += ("" if NOTES_MARKER in description else NOTES_MARKER) + missing
    return [RunTag(name, value) for name, value in {**latest, DESCRIPTION_TAG: description}.items()]


def _markdown(note: dict[str, Any]) -> str:
    """A note as the run's description lists it."""
    text = f"- **{note['time'][:16].replace('T', ' ')} UTC, {note['author']}**: {note['conclusion']}"
    return text + (f"  \n  *Next:* {note['next']}" if note["next"] else "") + "\n"


# -- listing -----------------------------------------------------------------------------------
def list_notes(args: argparse.Namespace) -> int:
    where = report.selection(args)[0]
    runs = report.parent_runs(report.client_for(args.tracking_uri or default_uri()), args.mlflow_experiment,
                       " and ".join(w for w in ("tags.conclusion != ''", where) if w))
    if not runs:
        print("no notes")
        return 0
    for run in sorted(runs, key=lambda r: (r.data.tags.get("experiment", ""), r.data.tags.get("random_seed", ""),
                                           r.info.start_time)):
        tags = run.data.tags
        print(f"{tags.get('experiment', '?')} seed {tags.get('random_seed', '?')}  {run.info.run_id}")
        print(f"    conclusion: {tags['conclusion']}")
        if tags.get("next_hypothesis"):
            print(f"    next:       {tags['next_hypothesis']}")
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    return report.run_command(build_parser(), argv, _command)


def _command(args: argparse.Namespace) -> int:
    if not args.list and (not args.run or not args.conclusion or not args.conclusion.strip()):
        return fail(PROG, "give a run (directory or MLflow run id) and a conclusion: "
                    f'python -m {PROG} RUN "what it showed" --next "what to try next"', 2)
    try:
        if args.list:
            return list_notes(args)
        note = {"time": datetime.now(UTC).isoformat(timespec="seconds").replace("+00:00", ""),
                "author": args.author or getpass.getuser(), "conclusion": args.conclusion, "next": args.next}
        note = {key: redact(" ".join(value.split())) for key, value in note.items()}  # a pasted key stays out
        run_dir, run_id, uri = locate(args.run, args.tracking_uri)
        where = add_note(run_dir, run_id, uri, note)
    except report.UsageError as exc:
        return fail(PROG, str(exc), 2)
    except report.ReportError as exc:
        return fail(PROG, str(exc), 1)
    except BrokenPipeError:  # `--list | head`: the reader left; `run_main` ends quietly
        raise
    except OSError as exc:
        return fail(PROG, f"cannot write the note: {exc}", 1)
    except Exception as exc:  # an MLflow error: one line, never a traceback
        return fail(PROG, f"cannot store the note in MLflow: {describe(exc)}", 1)
    print("note added: " + "; ".join(where))
    if run_id is None:
        print("(this run has no MLflow run: the note is in its directory only)")
    return 0


if __name__ == "__main__":
    run_main(main)
