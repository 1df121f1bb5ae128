"""`python -m gepa_lab.revisions`: list, show, diff, approve, reject, rollback, audit, monitor, sweep.

Every command takes `--store URL` (default: sqlite:///revisions.db in the working directory, the
store `submit=true` uses) and `--json`. Errors are one line on stderr: exit 2 for bad arguments,
1 for a refused or failed request (not found, already decided, stale parent, store errors), 3 for
`monitor --fail-on-regression` when the active revision scores below its parent.
"""

from __future__ import annotations

import argparse
import difflib
import json
import re
import sys
from collections.abc import Sequence
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any, NoReturn

from gepa_lab.core.errors import GepaLabError
from gepa_lab.revisions.urls import DEFAULT_STORE_URL

PROG = "gepa_lab.revisions"
EXIT_REGRESSION = 3


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:  # one line, not usage + message
        print(f"{PROG}: error: {message} (see python -m {PROG} --help)", file=sys.stderr)
        raise SystemExit(2)


class UsageError(ValueError):
    """A bad argument value found after parsing (exit 2)."""


def _duration(text: str) -> timedelta:
    match = re.fullmatch(r"\s*(\d+(?:\.\d+)?)\s*([smhd])\s*", text)
    if not match:
        raise argparse.ArgumentTypeError(f"{text!r} is not a duration; write e.g. 90m, 72h or 3d")
    value, unit = float(match.group(1)), match.group(2)
    seconds = value * {"s": 1, "m": 60, "h": 3600, "d": 86400}[unit]
    if seconds <= 0:
        raise argparse.ArgumentTypeError("the approval timeout must be positive")
    return timedelta(seconds=seconds)


def build_parser() -> argparse.ArgumentParser:
    from gepa_lab.revisions.publish import DEFAULT_PUBLISH_ROOT
    from gepa_lab.revisions.store import STATUSES

    common = _Parser(add_help=False)
    common.add_argument("--store", default=argparse.SUPPRESS, metavar="URL",
                        help=f"SQLAlchemy URL of the revision store (default {DEFAULT_STORE_URL})")
    common.add_argument("--json", action="store_true", default=argparse.SUPPRESS, help="machine-readable output")
    decision = _Parser(add_help=False)
    decision.add_argument("--actor", required=True, help="who decides (recorded in the audit log)")
    decision.add_argument("--comment", default=None, help="why (recorded in the audit log)")
    publishing = _Parser(add_help=False)
    publishing.add_argument("--publish-dir", default=DEFAULT_PUBLISH_ROOT, metavar="DIR",
                            help="managed directory; each artifact is published in DIR/<artifact name>/ "
                                 f"(default ./{DEFAULT_PUBLISH_ROOT})")

    parser = _Parser(prog=f"python -m {PROG}", description="Review, publish and roll back artifact revisions.",
                     parents=[common])
    sub = parser.add_subparsers(dest="command", required=True, parser_class=_Parser)
    p = sub.add_parser("list", parents=[common], help="revisions, newest version last")
    p.add_argument("--artifact", help="only this artifact")
    p.add_argument("--status", action="append", choices=STATUSES, help="only these statuses (repeatable)")
    p = sub.add_parser("show", parents=[common], help="one revision: status, evidence, gates, body")
    p.add_argument("revision", help="id, unique id prefix, or <artifact>@v<version>")
    p = sub.add_parser("diff", parents=[common], help="the published file of a revision against its parent")
    p.add_argument("revision")
    p.add_argument("--against", help="compare with this revision instead of the parent")
    p = sub.add_parser("approve", parents=[common, decision, publishing],
                       help="publish a pending_approval revision (archives the active one)")
    p.add_argument("revision")
    p = sub.add_parser("reject", parents=[common, decision], help="reject a pending revision")
    p.add_argument("revision")
    p = sub.add_parser("rollback", parents=[common, decision, publishing],
                       help="re-activate an archived revision (default: the one archived last)")
    p.add_argument("artifact")
    p.add_argument("--to", help="the archived revision to re-activate")
    p = sub.add_parser("audit", parents=[common], help="the append-only audit log")
    p.add_argument("--artifact")
    p.add_argument("--revision")
    p.add_argument("--limit", type=int, default=None, help="only the last N entries")
    p = sub.add_parser("monitor", parents=[common],
                       help="re-evaluate the active revision against its parent (never rolls back)")
    p.add_argument("artifact")
    p.add_argument("--run-dir", required=True, help="a run directory recorded on the same frozen dataset")
    p.add_argument("--split", default="holdout", choices=("feedback", "validation", "holdout"))
    p.add_argument("--seed", type=int, default=0, help="evaluation seed (same seed each time: drift shows)")
    p.add_argument("--actor", default="monitor")
    p.add_argument("--fail-on-regression", action="store_true",
                   help=f"exit {EXIT_REGRESSION} when the active revision scores below its parent")
    p = sub.add_parser("sweep", parents=[common, publishing],
                       help="opt-in: auto-approve (actor auto-expire) revisions pending longer than a timeout")
    p.add_argument("--approval-timeout", type=_duration, default=None, metavar="DURATION",
                   help="e.g. 72h; without it the sweeper does nothing (off by default)")
    return parser


# -- output -------------------------------------------------------------------------------------
def _when(moment: datetime | None) -> str:
    return "-" if moment is None else moment.strftime("%Y-%m-%d %H:%M")


def _table(headers: Sequence[str], rows: Sequence[Sequence[Any]]) -> str:
    cells = [[str(c) for c in headers]] + [["-" if c is None else str(c) for c in row] for row in rows]
    widths = [max(len(row[i]) for row in cells) for i in range(len(headers))]
    return "\n".join("  ".join(c.ljust(w) for c, w in zip(row, widths, strict=True)).rstrip() for row in cells)


def _score(value: Any, signed: bool = False) -> str:
    if not isinstance(value, (int, float)):
        return "-"
    return f"{value:+.4f}" if signed else f"{value:.4f}"


def _emit(args: argparse.Namespace, data: Any, text: str) -> None:
    print(json.dumps(data, indent=2, ensure_ascii=False, default=str) if args.json else text)


# -- commands -----------------------------------------------------------------------------------
def _list(store: Any, args: argparse.Namespace) -> int:
    revisions = store.revisions(args.artifact, args.status or ())
    rows = [(r.id[:12], r.artifact_name, r.version, r.status, _score(r.evidence.get("candidate_score")),
             _score(r.evidence.get("delta"), True), _when(r.submitted_at), r.decided_by) for r in revisions]
    text = _table(("REVISION", "ARTIFACT", "VER", "STATUS", "HOLDOUT", "DELTA", "SUBMITTED (UTC)", "DECIDED BY"),
                  rows) if rows else "no revisions"
    _emit(args, [r.to_dict() for r in revisions], text)
    return 0


def _show(store: Any, args: argparse.Namespace) -> int:
    from gepa_lab.revisions.publish import render

    r = store.get(args.revision)
    ev = r.evidence
    file_name, body = render(r.body)
    lines = [
        f"revision   {r.id}",
        f"artifact   {r.artifact_name} v{r.version} ({r.kind}, {r.action})",
        f"status     {r.status}" + (f": {r.status_reason}" if r.status_reason else ""),
        f"parent     {r.parent_revision_id or 'none (create)'}",
        f"source     {r.source}",
        f"submitted  {_when(r.submitted_at)} UTC",
    ]
    if r.decided_by:
        lines.append(f"decided    by {r.decided_by} at {_when(r.decided_at)} UTC"
                     + (f": {r.decision_comment}" if r.decision_comment else ""))
    if r.published_path:
        lines.append(f"published  {r.published_path}")
    lines.append(f"evidence   holdout {_score(ev.get('baseline_score'))} -> {_score(ev.get('candidate_score'))} "
                 f"(delta {_score(ev.get('delta'), True)}, {ev.get('case_count')} cases); dataset "
                 f"{ev.get('dataset_id')} {ev.get('dataset_version')}; experiment {ev.get('experiment_id')}"
                 + (f"; MLflow run {ev['mlflow_run_id']}" if ev.get("mlflow_run_id") else ""))
    for gate in r.gates:
        verdict = "passed" if gate.get("passed") else "failed"
        reasons = "; ".join(gate.get("reasons", []))
        lines.append(f"gate       {gate.get('gate')} {verdict}" + (f": {reasons}" if reasons else ""))
    lines += ["", f"--- {file_name}", body.rstrip("\n")]
    _emit(args, r.to_dict(), "\n".join(lines))
    return 0


def _diff(store: Any, args: argparse.Namespace) -> int:
    from gepa_lab.revisions.publish import render

    r = store.get(args.revision)
    other_ref = args.against or r.parent_revision_id
    other = store.get(other_ref) if other_ref else None
    name, new = render(r.body)
    old = render(other.body)[1] if other else ""
    label = other.id[:12] if other else "(none)"
    lines = list(difflib.unified_diff(old.splitlines(keepends=True), new.splitlines(keepends=True),
                                      fromfile=f"{label}/{name}", tofile=f"{r.id[:12]}/{name}"))
    _emit(args, {"from": other.id if other else None, "to": r.id, "diff": "".join(lines)},
          "".join(lines).rstrip("\n") or "no difference")
    return 0


def _decision_text(verb: str, decision: Any) -> str:
    r = decision.revision
    lines = [f"{verb} {r.id[:12]} ({r.artifact_name} v{r.version}) by {r.decided_by}"]
    if decision.published is not None:
        lines.append(f"published {decision.published}")
    if decision.previous is not None:
        lines.append(f"archived {decision.previous[:12]}")
    return "\n".join(lines)


def _approve(store: Any, args: argparse.Namespace) -> int:
    from gepa_lab.revisions.service import approve

    decision = approve(store, args.revision, args.actor, args.comment, publish_root=Path(args.publish_dir))
    _emit(args, decision.to_dict(), _decision_text("approved", decision))
    return 0


def _reject(store: Any, args: argparse.Namespace) -> int:
    from gepa_lab.revisions.service import reject

    decision = reject(store, args.revision, args.actor, args.comment)
    _emit(args, decision.to_dict(), _decision_text("rejected", decision))
    return 0


def _rollback(store: Any, args: argparse.Namespace) -> int:
    from gepa_lab.revisions.service import rollback

    decision = rollback(store, args.artifact, args.actor, args.comment, to=args.to,
                        publish_root=Path(args.publish_dir))
    _emit(args, decision.to_dict(), _decision_text("re-activated", decision))
    return 0


def _audit(store: Any, args: argparse.Namespace) -> int:
    if args.limit is not None and args.limit < 1:
        raise UsageError("--limit must be at least 1")
    entries = store.audit(args.artifact, args.revision, args.limit)
    rows = [(_when(e.at), e.action, e.artifact_name, (e.revision_id or "-")[:12], e.actor,
             e.comment or e.detail.get("reason") or e.detail.get("status") or "") for e in entries]
    text = _table(("AT (UTC)", "ACTION", "ARTIFACT", "REVISION", "ACTOR", "NOTE"), rows) if rows else "no entries"
    _emit(args, [e.to_dict() for e in entries], text)
    return 0


def _monitor(store: Any, args: argparse.Namespace) -> int:
    from gepa_lab.revisions.monitor import monitor

    result = monitor(store, args.artifact, args.run_dir, split=args.split, seed=args.seed, actor=args.actor)
    regressed = result.delta is not None and result.delta < 0
    verdict = ("no parent to compare with" if result.delta is None else
               "REGRESSED: the active revision scores below its parent (roll back with: python -m "
               f"{PROG} rollback {args.artifact!r} --actor NAME)" if regressed else "holds against its parent")
    text = (f"monitored {result.revision_id[:12]} on {result.cases} {result.split} cases (seed {result.seed}): "
            f"active {_score(result.active_mean)}, parent {_score(result.parent_mean)}, "
            f"delta {_score(result.delta, True)}\n{verdict}")
    _emit(args, {**result.to_dict(), "regressed": regressed}, text)
    return EXIT_REGRESSION if regressed and args.fail_on_regression else 0


def _sweep(store: Any, args: argparse.Namespace) -> int:
    from gepa_lab.revisions.service import sweep

    if args.approval_timeout is None:
        raise UsageError("the approval-timeout sweeper is off by default; pass --approval-timeout DURATION "
                         "(e.g. 72h) to auto-approve revisions pending longer than that")
    outcomes = sweep(store, args.approval_timeout, publish_root=Path(args.publish_dir))
    rows = [(o.revision_id[:12], o.artifact_name, o.outcome, o.detail) for o in outcomes]
    text = _table(("REVISION", "ARTIFACT", "OUTCOME", "DETAIL"), rows) if rows else "nothing pending past the timeout"
    _emit(args, [o.to_dict() for o in outcomes], text)
    return 0


COMMANDS = {"list": _list, "show": _show, "diff": _diff, "approve": _approve, "reject": _reject,
            "rollback": _rollback, "audit": _audit, "monitor": _monitor, "sweep": _sweep}


def _fail(message: str, code: int) -> int:
    print(f"{PROG}: error: {message}", file=sys.stderr)
    return code


def main(argv: Sequence[str] | None = None) -> int:
    from gepa_lab.revisions.errors import InvalidRequest
    from gepa_lab.revisions.store import RevisionStore

    try:
        args = build_parser().parse_args(argv)
    except SystemExit as exc:  # --help (0) or a usage error already printed (2)
        return exc.code if isinstance(exc.code, int) else 2
    args.store = getattr(args, "store", DEFAULT_STORE_URL)
    args.json = getattr(args, "json", False)
    try:
        # No command creates a store (submissions do): a mistyped --store is an error, not a new file.
        with RevisionStore(args.store, create=False) as store:
            return COMMANDS[args.command](store, args)
    except (UsageError, InvalidRequest) as exc:
        return _fail(str(exc), 2)
    except GepaLabError as exc:
        return _fail(str(exc), 1)
