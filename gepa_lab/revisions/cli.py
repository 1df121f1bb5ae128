"""`python -m gepa_lab.revisions`: list, show, diff, approve, reject, rollback, audit, monitor, sweep,
sync-registry, upgrade.

Every command takes `--store URL` (default: sqlite:///revisions.db in the working directory, the
store `submit=true` uses) and `--json`. Errors are one line on stderr: exit 2 for bad arguments,
1 for a refused or failed request (not found, already decided, stale parent, store errors), 3 for
`monitor --fail-on-regression` when the active revision scores below its parent. `list` and
`audit` on a store that does not exist yet say so and exit 0.
"""

from __future__ import annotations

import argparse
import difflib
import json
import os
import re
import shlex
from collections.abc import Callable, Sequence
from dataclasses import asdict
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

from gepa_lab.core.contracts import SPLITS
from gepa_lab.core.errors import GepaLabError, fail, one_line_parser
from gepa_lab.core.redact import redact
from gepa_lab.revisions.errors import InvalidRequest, RegistryNotUpdated, StoreMissing
from gepa_lab.revisions.publish import DEFAULT_PUBLISH_ROOT, render
from gepa_lab.revisions.registry import PromptRegistry
from gepa_lab.revisions.service import approve, reject, rollback, sweep
from gepa_lab.revisions.store import STATUSES, RevisionStore, fmt_score
from gepa_lab.revisions.urls import DEFAULT_STORE_URL
from gepa_lab.tracking import mlflow_links

PROG = "gepa_lab.revisions"
EXIT_REGRESSION = 3
HOLDOUT_NOTE = ("HOLDOUT is each run's seed -> winner on that run's own holdout draw (DELTA is that pair's "
                "difference): compare deltas, or `monitor` revisions on one seed, not scores across rows")


_Parser = one_line_parser(PROG)


def _duration(text: str) -> timedelta:
    if not (match := re.fullmatch(r"\s*(\d+(?:\.\d+)?)\s*([smhd])\s*", text)):
        raise argparse.ArgumentTypeError(f"{text!r} is not a duration; write e.g. 90m, 72h or 3d")
    # A zero or too long duration is refused by service.sweep (the one check, for the CLI and the API alike).
    try:
        return timedelta(seconds=float(match.group(1)) * {"s": 1, "m": 60, "h": 3600, "d": 86400}[match.group(2)])
    except OverflowError:  # longer than a timedelta holds: too long for service.sweep as well
        return timedelta.max


def build_parser() -> argparse.ArgumentParser:
    common = _Parser(add_help=False)
    common.add_argument("--store", default=argparse.SUPPRESS, metavar="URL",
                        help=f"SQLAlchemy URL of the revision store (default {DEFAULT_STORE_URL})")
    common.add_argument("--json", action="store_true", default=argparse.SUPPRESS, help="machine-readable output")
    ref = _Parser(add_help=False)
    ref.add_argument("revision", help="id, unique id prefix, or <artifact>@v<version>")
    decision = _Parser(add_help=False)
    decision.add_argument("--actor", required=True, help="who decides (recorded in the audit log)")
    decision.add_argument("--comment", default=None, type=redact, help="why (recorded in the audit log, redacted)")
    registry = _Parser(add_help=False)
    registry.add_argument("--tracking-uri", default=os.environ.get("MLFLOW_TRACKING_URI") or None, metavar="URI",
                          help="MLflow tracking URI whose prompt registry names the active revision (alias "
                               "production; `show`: where the revision's run is); default $MLFLOW_TRACKING_URI, "
                               "unset: no registry")
    publishing = _Parser(add_help=False, parents=[registry])
    publishing.add_argument("--publish-dir", default=DEFAULT_PUBLISH_ROOT, metavar="DIR",
                            help="managed directory; each artifact is published in DIR/<artifact name>/ "
                                 f"(default ./{DEFAULT_PUBLISH_ROOT})")

    parser = _Parser(prog=f"python -m {PROG}", description="Review, publish and roll back artifact revisions.",
                     parents=[common])
    sub = parser.add_subparsers(dest="command", required=True, parser_class=_Parser)
    p = sub.add_parser("list", parents=[common], help="revisions, newest version last")
    p.add_argument("--artifact", help="only this artifact")
    p.add_argument("--status", action="append", choices=STATUSES, help="only these statuses (repeatable)")
    sub.add_parser("show", parents=[common, ref, registry], help="one revision: status, evidence, gates, body")
    p = sub.add_parser("diff", parents=[common, ref], help="the published file of a revision against its parent")
    p.add_argument("--against", metavar="REVISION|FILE",
                   help="compare with this revision, or a seed file, instead of the parent")
    sub.add_parser("approve", parents=[common, ref, decision, publishing],
                   help="publish a pending_approval revision (archives the active one)")
    sub.add_parser("reject", parents=[common, ref, decision], help="reject a pending revision")
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
    p.add_argument("--split", default="holdout", choices=SPLITS)
    p.add_argument("--seed", type=int, default=0, help="evaluation seed (same seed each time: drift shows)")
    p.add_argument("--actor", default="monitor")
    p.add_argument("--fail-on-regression", action="store_true",
                   help=f"exit {EXIT_REGRESSION} when the active revision scores below its parent")
    p = sub.add_parser("sweep", parents=[common, publishing],
                       help="opt-in: auto-approve (actor auto-expire) revisions pending longer than a timeout")
    p.add_argument("--approval-timeout", type=_duration, default=None, metavar="DURATION",
                   help="e.g. 72h; without it the sweeper does nothing (off by default)")
    sub.add_parser("sync-registry", parents=[common, registry],
                   help="rebuild the MLflow prompt registry view: every approved revision, production = active")
    sub.add_parser("upgrade", parents=[common],
                   help="migrate the store's schema to this gepa-lab's revision (back it up first)")
    return parser


# -- output -------------------------------------------------------------------------------------
def _when(moment: datetime | None) -> str:
    return "-" if moment is None else moment.strftime("%Y-%m-%d %H:%M")


def _table(headers: Sequence[str], rows: Sequence[Sequence[Any]]) -> str:
    cells = [[str(c) for c in headers]] + [["-" if c is None else str(c) for c in row] for row in rows]
    widths = [max(len(row[i]) for row in cells) for i in range(len(headers))]
    return "\n".join("  ".join(c.ljust(w) for c, w in zip(row, widths, strict=True)).rstrip() for row in cells)


def _emit(args: argparse.Namespace, data: Any, text: str) -> None:
    print(json.dumps(data, indent=2, ensure_ascii=False, default=str) if args.json else text)


# -- commands -----------------------------------------------------------------------------------
def _list(store: Any, args: argparse.Namespace) -> None:
    revisions = store.revisions(args.artifact, args.status or ())
    rows = [(r.id[:12], r.artifact_name, r.version, r.status,
             f"{fmt_score(r.evidence.get('baseline_score'))}->{fmt_score(r.evidence.get('candidate_score'))}",
             fmt_score(r.evidence.get("delta"), signed=True), _when(r.submitted_at), r.decided_by) for r in revisions]
    text = _table(("REVISION", "ARTIFACT", "VER", "STATUS", "HOLDOUT", "DELTA", "SUBMITTED (UTC)", "DECIDED BY"),
                  rows) + f"\n({HOLDOUT_NOTE})" if rows else "no revisions"
    _emit(args, [r.to_dict() for r in revisions], text)


def _monitored(m: dict[str, Any]) -> str:
    return (f"{m.get('split')} seed {m.get('seed')}, {m.get('cases')} cases: active {fmt_score(m.get('active_mean'))} "
            f"vs parent {fmt_score(m.get('parent_mean'))} (delta {fmt_score(m.get('delta'), signed=True)})")


def _show(store: Any, args: argparse.Namespace) -> None:
    r = store.get(args.revision)
    ev = r.evidence
    file_name, body = render(r.body)
    lines = [f"revision   {r.id}", f"artifact   {r.artifact_name} v{r.version} ({r.kind}, {r.action})",
             f"status     {r.status}" + (f" by {r.status_by} at {_when(r.status_at)} UTC" if r.status_by else "")
             + (f": {r.status_reason}" if r.status_reason else ""),
             f"parent     {r.parent_revision_id or 'none (create)'}", f"source     {r.source}",
             f"submitted  {_when(r.submitted_at)} UTC"]
    lines += [f"decided    by {r.decided_by} at {_when(r.decided_at)} UTC"
              + (f": {r.decision_comment}" if r.decision_comment else "")] if r.decided_by else []
    lines += [f"published  {r.published_path}"] if r.published_path else []
    lines.append(f"evidence   holdout {fmt_score(ev.get('baseline_score'))} -> {fmt_score(ev.get('candidate_score'))} "
                 f"(delta {fmt_score(ev.get('delta'), signed=True)}, {ev.get('case_count')} cases); dataset "
                 f"{ev.get('dataset_id')} {ev.get('dataset_version')}; experiment {ev.get('experiment_id')}"
                 + (f"; MLflow run {ev['mlflow_run_id']}" if ev.get("mlflow_run_id") else ""))
    if link := _run_link(ev, args.tracking_uri):
        lines.append(f"mlflow     {link}")
    for gate in r.gates:
        verdict = "passed" if gate.get("passed") else "failed"
        reasons = "; ".join(gate.get("reasons", []))
        lines.append(f"gate       {gate.get('gate')} {verdict}" + (f": {reasons}" if reasons else ""))
    monitoring = store.monitoring(r.id)
    lines += [f"monitored  {_when(m.at)} UTC by {m.actor}: {_monitored(m.to_dict())}" for m in monitoring]
    lines += ["", f"--- {file_name}", body.rstrip("\n")]
    _emit(args, {**r.to_dict(), "monitoring": [m.to_dict() for m in monitoring]}, "\n".join(lines))


def _run_link(evidence: dict[str, Any], tracking_uri: str | None) -> str | None:
    """The run's page as the run stored it, else built from its id and `--tracking-uri`; for a
    local store, with the command that serves it."""
    url, command, run_id = (evidence.get(k) for k in ("mlflow_run_url", "mlflow_ui_command", "mlflow_run_id"))
    if not url and run_id:
        if not tracking_uri:
            return f"run {run_id} (pass --tracking-uri URI for its link)"
        url, command = mlflow_links.run_url(tracking_uri, None, run_id), mlflow_links.ui_command(tracking_uri)
    return url and str(url) + (f" (serve it first: {command})" if command else "")


def _diff(store: Any, args: argparse.Namespace) -> None:
    r = store.get(args.revision)
    if (against := args.against or r.parent_revision_id) is None:
        raise InvalidRequest(f"revision {r.id[:12]} is {r.artifact_name}'s first: it has no parent; compare it with "
                             "the seed file its run started from: --against <seed file>")
    name, new = render(r.body)
    if Path(against).is_file():  # a seed file (an artifact's JSON, as the run read it)
        try:
            source, label, old = against, against, render(json.loads(Path(against).read_text(encoding="utf-8")))[1]
        except (OSError, ValueError, TypeError) as exc:
            raise InvalidRequest(f"--against {against}: not a seed artifact file ({exc})") from None
    else:
        other = store.get(against)
        source, label, old = other.id, f"{other.id[:12]}/{name}", render(other.body)[1]
    diff = "".join(difflib.unified_diff(old.splitlines(keepends=True), new.splitlines(keepends=True),
                                        fromfile=label, tofile=f"{r.id[:12]}/{name}"))
    _emit(args, {"from": source, "to": r.id, "diff": diff}, diff.rstrip("\n") or "no difference")


def _registry(args: argparse.Namespace) -> Any:
    return PromptRegistry(args.tracking_uri) if args.tracking_uri else None


def _decided(args: argparse.Namespace, verb: str, decide: Callable[[], Any]) -> None:
    """Run a decision and print it; when only the registry update failed, print the (committed)
    decision too, then the error."""
    try:
        decision, error = decide(), None
    except RegistryNotUpdated as exc:
        decision, error = exc.decision, exc
    r = decision.revision
    lines = [f"{verb} {r.id[:12]} ({r.artifact_name} v{r.version}) by {r.status_by}"]
    # The registry's version numbers count approvals, not submissions: say which revision a version is.
    uri = decision.registered
    registry = uri and f"{uri} (MLflow prompt version {uri.rsplit('/', 1)[-1]} is revision v{r.version})"
    facts = (("published {}", decision.published), ("alias production -> {}", registry),
             ("archived {}", decision.previous and decision.previous[:12]))
    lines += [template.format(value) for template, value in facts if value is not None]
    _emit(args, decision.to_dict(), "\n".join(lines))
    if error is not None:
        raise error


def _approve(store: Any, args: argparse.Namespace) -> None:
    _decided(args, "approved", lambda: approve(store, args.revision, args.actor, args.comment,
                                               publish_root=args.publish_dir, registry=_registry(args)))


def _reject(store: Any, args: argparse.Namespace) -> None:
    _decided(args, "rejected", lambda: reject(store, args.revision, args.actor, args.comment))


def _rollback(store: Any, args: argparse.Namespace) -> None:
    _decided(args, "re-activated", lambda: rollback(store, args.artifact, args.actor, args.comment, to=args.to,
                                                    publish_root=args.publish_dir, registry=_registry(args)))


def _audit(store: Any, args: argparse.Namespace) -> None:
    if args.limit is not None and args.limit < 1:
        raise InvalidRequest("--limit must be at least 1")
    entries = store.audit(args.artifact, args.revision, args.limit)
    rows = [(_when(e.at), e.action, e.artifact_name, (e.revision_id or "-")[:12], e.actor, _monitored(e.detail)
             if e.action == "monitored" else str(e.comment or e.detail.get("reason") or e.detail.get("status") or ""))
            for e in entries]
    text = _table(("AT (UTC)", "ACTION", "ARTIFACT", "REVISION", "ACTOR", "NOTE"), rows) if rows else "no entries"
    _emit(args, [e.to_dict() for e in entries], text)


def _monitor(store: Any, args: argparse.Namespace) -> int:
    from gepa_lab.revisions.monitor import monitor

    result = monitor(store, args.artifact, args.run_dir, split=args.split, seed=args.seed, actor=args.actor)
    regressed = result.delta is not None and result.delta < 0
    verdict = ("no parent to compare with" if result.delta is None else
               "REGRESSED: the active revision scores below its parent (roll back with: python -m "
               f"{PROG} rollback {shlex.quote(args.artifact)} --actor NAME)" if regressed
               else "holds against its parent")
    text = (f"monitored {result.revision_id[:12]} on {result.cases} {result.split} cases (seed {result.seed}): "
            f"active {fmt_score(result.active_mean)}, parent {fmt_score(result.parent_mean)}, "
            f"delta {fmt_score(result.delta, signed=True)}\n{verdict}")
    _emit(args, {**result.to_dict(), "regressed": regressed}, text)
    return EXIT_REGRESSION if regressed and args.fail_on_regression else 0


def _sweep(store: Any, args: argparse.Namespace) -> None:
    if args.approval_timeout is None:
        raise InvalidRequest("the approval-timeout sweeper is off by default; pass --approval-timeout DURATION "
                             "(e.g. 72h) to auto-approve revisions pending longer than that")
    outcomes = sweep(store, args.approval_timeout, publish_root=args.publish_dir, registry=_registry(args))
    rows = [(o.revision_id[:12], o.artifact_name, o.outcome, o.detail) for o in outcomes]
    text = _table(("REVISION", "ARTIFACT", "OUTCOME", "DETAIL"), rows) if rows else "nothing pending past the timeout"
    _emit(args, [asdict(o) for o in outcomes], text)


def _sync_registry(store: Any, args: argparse.Namespace) -> None:
    if (registry := _registry(args)) is None:
        raise InvalidRequest("sync-registry needs the MLflow server: pass --tracking-uri URI or set "
                             "MLFLOW_TRACKING_URI")
    synced = registry.sync(store)
    rows = [(s.artifact_name, s.prompt, s.registered, s.production) for s in synced]
    text = (_table(("ARTIFACT", "PROMPT", "REGISTERED NOW", "PRODUCTION VERSION"), rows) if rows
            else "no approved revisions to register")
    _emit(args, [asdict(s) for s in synced], text)


def _upgrade(store: Any, args: argparse.Namespace) -> None:
    (before, after), url = store.migrated, store.display_url
    text = (f"revision store {url} is at schema revision {after}; nothing to do" if before == after
            else f"upgraded revision store {url} from schema revision {before} to {after}")
    _emit(args, {"store": url, "from": before, "to": after}, text)


# Each prints its result; only `monitor` returns an exit code (others: 0).
COMMANDS: dict[str, Callable[[Any, argparse.Namespace], int | None]] = {
    "list": _list, "show": _show, "diff": _diff, "approve": _approve, "reject": _reject, "rollback": _rollback,
    "audit": _audit, "monitor": _monitor, "sweep": _sweep, "sync-registry": _sync_registry, "upgrade": _upgrade}


def _run(args: argparse.Namespace) -> int:
    try:
        # No command creates a store (submissions do): a mistyped --store is an error, not a new file.
        store = RevisionStore(args.store, create=False, upgrade=args.command == "upgrade")
    except StoreMissing as exc:
        if args.command not in ("list", "audit"):  # a store that does not exist yet has no revisions
            raise
        _emit(args, [], f"no revisions yet: {exc} (the first run with submit=true creates it)")
        return 0
    with store:
        return COMMANDS[args.command](store, args) or 0


def main(argv: Sequence[str] | None = None) -> int:
    try:
        # --store and --json go before or after the command (SUPPRESS keeps the other place from resetting them)
        args = build_parser().parse_args(argv, argparse.Namespace(store=DEFAULT_STORE_URL, json=False))
    except SystemExit as exc:  # --help (0) or a usage error already printed (2)
        return exc.code if isinstance(exc.code, int) else 2
    try:
        return _run(args)
    except InvalidRequest as exc:  # a bad argument value found after parsing
        return fail(PROG, str(exc), 2)
    except StoreMissing as exc:
        return fail(PROG, f"{exc}; pass the store's URL with --store (a run with submit=true creates a new one)", 1)
    except GepaLabError as exc:
        return fail(PROG, str(exc), 1)
