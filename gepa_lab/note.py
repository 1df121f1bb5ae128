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
import getpass
import json
import re
from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from gepa_lab import report
from gepa_lab.core.errors import describe, fail, run_main
from gepa_lab.tracking import mlflow_links
from gepa_lab.tracking.mlflow_tracker import DESCRIPTION_TAG, NOTES_MARKER, RUN_FILE, default_uri
from gepa_lab.tracking.mlflow_values import clip

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
def add_note(run_dir: Path | None, run_id: str | None, uri: str | None, note: dict[str, Any]) -> list[str]:
    """Store the note; returns where it went (for the confirmation line)."""
    where = []
    if run_dir is not None:
        with open(run_dir / NOTES_FILE, "a", encoding="utf-8") as handle:  # one line: appended whole
            handle.write(json.dumps(note, ensure_ascii=False) + "\n")
        where.append(str(run_dir / NOTES_FILE))
    if run_id is None or uri is None:
        return where
    from mlflow.entities import RunTag

    client = report.client_for(uri)
    run = client.get_run(run_id)
    description = run.data.tags.get(DESCRIPTION_TAG, "")
    if NOTES_MARKER not in description:
        description += NOTES_MARKER
    # Every note, in the run's description (markdown).
    description += f"- **{note['time'][:16].replace('T', ' ')} UTC, {note['author']}**: {note['conclusion']}"
    description += (f"  \n  *Next:* {note['next']}" if note["next"] else "") + "\n"
    client.log_batch(run_id, tags=[RunTag("conclusion", clip(note["conclusion"])),
                                   RunTag("next_hypothesis", clip(note["next"])),
                                   RunTag(DESCRIPTION_TAG, description)])
    command = mlflow_links.ui_command(uri)  # a local store: the command that serves the link
    serve = f" (serve it first: {command})" if command else ""
    return [*where, f"MLflow run {mlflow_links.run_url(uri, run.info.experiment_id, run_id)}{serve}"]


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
                "author": args.author or getpass.getuser(), "conclusion": " ".join(args.conclusion.split()),
                "next": " ".join(args.next.split())}
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
