"""The CI job summary of one `submit=true` run (docs/revisions.md §The CI flow):

    python -m gepa_lab.revisions.ci RUN_DIR [LOG] >> "$GITHUB_STEP_SUMMARY"

Markdown from the run record (promotion.json, result.json, experiment.json): what was decided and
why, what the store did with the winner, the MLflow run's link when the run logged to a tracking
server, and the commands a reviewer pastes (with the store's URL, never a password). A run that
did not reach a decision gets its one-line error (and its fix) from LOG, the optimize step's
output. Always exits 0: the optimize step's exit code is the job's verdict.
"""

from __future__ import annotations

import shlex
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from gepa_lab.core.redact import redact
from gepa_lab.revisions.store import fmt_score, parse_url
from gepa_lab.runs.files import read_dict
from gepa_lab.runs.record import simulated

REVIEW = "python -m gepa_lab.revisions"
SIMULATED = "SkillCraft-sim: these scores calibrate the harness, not an LM"


def mlflow_link(links: dict[str, Any]) -> str | None:
    """The run's page when the run was tracked on an MLflow server (the tracker's `mlflow_run_url`);
    None for a local store, whose page exists only on the machine that ran it."""
    return url if isinstance(url := links.get("mlflow_run_url"), str) and "mlflow_ui_command" not in links else None


def _store(result: dict[str, Any], experiment: dict[str, Any]) -> str | None:
    if store := (result.get("revision") or {}).get("store"):
        return str(store)
    url = (experiment.get("config") or {}).get("submitter", {}).get("url")
    try:
        return parse_url(url).render_as_string(hide_password=True) if isinstance(url, str) else None
    except Exception:  # an unusable URL: the run's own error says so
        return None


def _headline(promotion: dict[str, Any], revision: dict[str, Any]) -> str:
    reason = str(promotion.get("submission_reason") or "")
    if not promotion.get("eligible"):
        return "not eligible: nothing submitted"
    if not promotion.get("submit"):
        return "eligible (submit=false: nothing submitted)"
    if reason.startswith("revision submission refused"):
        return "refused by the revision store: nothing stored"
    if reason.startswith("revision submission failed"):
        return "submission FAILED"
    again = " (already submitted by another run)" if revision.get("resubmitted") else ""
    return f"revision {str(promotion.get('revision_id'))[:12]} is {promotion.get('revision_status')}{again}"


def _seed_file(config: dict[str, Any]) -> str | None:
    """The seed file the run read (`dataset.path` / `dataset.seed_artifact`), as the checkout names it."""
    dataset = config.get("dataset") or {}
    seed = dataset.get("seed_artifact")
    return str(Path(str(dataset.get("path") or ".")) / seed) if isinstance(seed, str) else None


def _review(revision_id: str, store: str | None, tracking: str | None, seed: str | None) -> list[str]:
    where = f" --store {shlex.quote(store)}" if store else ""
    registry = f" --tracking-uri {shlex.quote(tracking)}" if tracking else ""
    against = f" --against {shlex.quote(seed)}" if seed else ""  # a first revision: against its seed file
    short = revision_id[:12]
    return ["", "Review it from any checkout (the store's password comes from `PGPASSWORD` or `~/.pgpass`):", "",
            "```bash", f"{REVIEW} show {short}{where}", f"{REVIEW} diff {short}{against}{where}",
            f"{REVIEW} approve {short} --actor YOUR_NAME{where}{registry}",
            f"{REVIEW} reject {short} --actor YOUR_NAME --comment WHY{where}", "```"]


def failure(run_dir: Path, log: Path | str | None) -> str:
    """Why a run reached no decision: the log's last `gepa_lab: error:` line (one line that names
    the problem and its fix), else its last line (a crash's exception)."""
    try:
        text = Path(log).read_text(encoding="utf-8", errors="replace") if log else ""
    except OSError:
        text = ""
    lines = [x.strip() for x in text.splitlines() if x.strip()]
    errors = [x for x in lines if x.startswith("gepa_lab: error:")] or lines[-1:]
    why = f"```text\n{redact(errors[-1])}\n```\n" if errors else "The optimize step left no log.\n"
    return f"## gepa-lab: the run failed before a decision\n\n{why}\nRun record: `{run_dir}`.\n"


def summary(run_dir: Path | str, log: Path | str | None = None) -> str:
    run_dir = Path(run_dir)
    if not (promotion := read_dict(run_dir / "promotion.json")):
        return failure(run_dir, log)
    result, experiment = read_dict(run_dir / "result.json"), read_dict(run_dir / "experiment.json")
    config = experiment.get("config") or {}
    revision = result.get("revision") or {}
    store = _store(result, experiment)
    link = mlflow_link(result.get("links") or {})
    title = f"{config.get('experiment_name', experiment.get('name', '?'))}, search.random_seed " \
            f"{(config.get('search') or {}).get('random_seed', '?')}"
    baseline, candidate = result.get("baseline_holdout") or {}, result.get("candidate_holdout") or {}
    lines = [f"## gepa-lab {title}: {_headline(promotion, revision)}", "",
             f"- **decision**: {'ELIGIBLE' if promotion.get('eligible') else 'NOT ELIGIBLE'}: "
             f"{promotion.get('reason')}",
             f"- **holdout**: seed {fmt_score(baseline.get('score'))} -> winner {fmt_score(candidate.get('score'))} "
             f"(delta {fmt_score(promotion.get('holdout_delta'), signed=True)}, {candidate.get('cases', '?')} cases)"
             + (f"; {SIMULATED}" if simulated(config) else ""),
             f"- **revision store**: {promotion.get('submission_reason')}"]
    if store:
        lines.append(f"- **store**: `{store}`")
    if link:
        lines.append(f"- **MLflow run**: [{result['links']['mlflow_run_id']}]({link})")
    if promotion.get("revision_id"):
        tracking = (result.get("links") or {}).get("mlflow_tracking_uri") if link else None
        seed = None if revision.get("parent_revision_id") else _seed_file(config)
        lines += _review(str(promotion["revision_id"]), store, tracking, seed)
    elif store:
        lines += ["", f"The store's revisions: `{REVIEW} list{' --store ' + shlex.quote(store)}`"]
    lines.append(f"\nRun record: `{run_dir}` (uploaded with this job).")
    return "\n".join(lines) + "\n"


def main(argv: Sequence[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    if len(args) not in (1, 2):
        print("usage: python -m gepa_lab.revisions.ci RUN_DIR [LOG]", file=sys.stderr)
        return 2
    print(summary(*args), end="")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
