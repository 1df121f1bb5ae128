"""`python -m gepa_lab.report [--sweep ID|DIR | --experiment NAME]`: a study's runs, one row per run
(experiment x seed -> winner, holdout delta with its interval, eligible, metric calls, cost, stop
reason, earlier looks at its holdout split, the researcher's note: conclusion and next hypothesis),
printed as a table and written as CSV, Markdown and a plot (docs/study.md), with links when the runs
were tracked: each run's MLflow page, the experiment's decision view and MLflow's comparison of them.

`--sweep DIR` reads the sweep's run records (tracked or not); `--sweep ID` and `--experiment NAME`
read the parent runs the MLflow tracker logged (`tags.gepa.run_kind = 'parent'`, by the tags
`sweep_id` / `experiment`) through MLflow's client API, a SQLite store and a shared `mlflow server`
alike; a run resumed into a new MLflow run appears once (the latest of its `gepa.experiment_id`).
Both give the same numbers. `--sweep DIR --compare KEY [--baseline VALUE] [--by KEY]` compares the
sweep's runs by one configuration key, paired by everything else the sweep varied
(gepa_lab/study.py; docs/research.md); `--confirm RUN_DIR...` opens the dataset's sealed
confirmation split once for each chosen run's winner.

Exit codes: 0 report written; 1 no matching run, or the store cannot be read; 2 bad arguments.
Errors are one line on stderr.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import re
from collections import defaultdict
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from gepa_lab.comparison import TOLERANCE
from gepa_lab.core.errors import describe, fail, one_line_parser, run_main
from gepa_lab.runs.record import simulated
from gepa_lab.summary import HOLDOUT_REUSE_WARNING
from gepa_lab.tracking import mlflow_links
from gepa_lab.tracking.mlflow_links import ENV_DEFAULTS, PARENT_FILTER, masked, run_url, sqlite_path, unreachable

PROG = "gepa_lab.report"
NOTE_WIDTH = 60  # the table's note and next columns; report.md lists every note whole


class ReportError(Exception):
    """The report or note cannot be made or stored (exit 1)."""


def study_parser(prog: str, description: str) -> argparse.ArgumentParser:
    """The parser of `report` and `note`, with what both take: which study, in which MLflow store."""
    parser = one_line_parser(prog)(prog=f"python -m {prog}", description=description)
    which = parser.add_mutually_exclusive_group()
    which.add_argument("--sweep", metavar="ID|DIR",
                       help="a sweep's id (MLflow tag sweep_id) or its directory (hydra.sweep.dir)")
    which.add_argument("--experiment", metavar="NAME", help="every run of a gepa experiment (tag experiment)")
    parser.add_argument("--tracking-uri", metavar="URI",
                        help="MLflow store (default: $MLFLOW_TRACKING_URI, else sqlite:///<cwd>/mlflow.db)")
    parser.add_argument("--mlflow-experiment", default="gepa-lab", metavar="NAME",
                        help="the MLflow experiment the runs were logged to (tracking.experiment; default gepa-lab)")
    return parser


def build_parser() -> argparse.ArgumentParser:
    parser = study_parser(PROG, "Table of a study's runs, from their run records (--sweep DIR) or MLflow "
                          "(experiment x seed -> winner, holdout delta, eligible, metric calls, cost, stop reason); "
                          "also written as CSV, Markdown and a plot.")
    parser.add_argument("--out", metavar="DIR", help="where report.csv, report.md and holdout_delta.png go "
                        "(default: reports/<sweep-ID | experiment-NAME | all>)")
    parser.add_argument("--no-plot", action="store_true", help="skip holdout_delta.png")
    parser.add_argument("--compare", metavar="KEY", help="compare the sweep's runs by this config key or group "
                        "(e.g. search/parent, search.minibatch_size), paired by the sweep's other axes")
    parser.add_argument("--baseline", metavar="VALUE", help="with --compare: the value the others are held "
                        "against (default: the first job's)")
    parser.add_argument("--by", metavar="KEY", help="with --compare: a row per value of this key beside the pooled "
                        "row (default: experiment, when the sweep varies it)")
    parser.add_argument("--tolerance", type=float, default=TOLERANCE, metavar="T", help="with --compare: the "
                        f"score's resolution (default {TOLERANCE}): a pair is tied when every holdout case's "
                        "difference is within T")
    parser.add_argument("--confirm", nargs="+", metavar="RUN_DIR", help="score these finished runs' seed and "
                        "winner once on the dataset's sealed confirmation split")
    return parser


def sweep_selector(text: str) -> str:
    """`--sweep`: an id as given, or the id of an existing sweep directory."""
    from gepa_lab.cli import sweep_id

    if "/" in text and not os.path.isdir(text):  # a path, not an id: its id would match nothing
        raise UsageError(f"--sweep {text}: no such folder; give the sweep's directory (hydra.sweep.dir) or its id")
    return sweep_id(text) if os.path.isdir(text) else text


# -- reading MLflow -------------------------------------------------------------------------------
def client_for(uri: str) -> Any:
    """An MLflow client on an existing store (a missing SQLite file or an unreachable server is a
    `ReportError`: reading never creates a store)."""
    from mlflow import MlflowClient

    why, db = unreachable(uri), sqlite_path(uri)
    if why is not None:
        raise ReportError(why)
    if db is not None and not db.is_file():
        raise ReportError(f"no MLflow store at {db}; run from the directory that holds mlflow.db or pass "
                          "--tracking-uri")
    return MlflowClient(tracking_uri=uri)


def parent_runs(client: Any, mlflow_experiment: str, where: str) -> list[Any]:
    found = client.get_experiment_by_name(mlflow_experiment)
    if found is None:
        raise ReportError(f"no MLflow experiment {mlflow_experiment!r} in the store (--mlflow-experiment)")
    where = f"{PARENT_FILTER} and {where}" if where else PARENT_FILTER
    return list(client.search_runs([found.experiment_id], where, max_results=50_000))  # MLflow's most in one search


def frame_of(runs: Sequence[Any], uri: str) -> Any:
    """One row per gepa run (the latest MLflow run of each `gepa.experiment_id`), sorted; `runs` is
    not empty (its rows' keys are the columns)."""
    latest = {run.data.tags.get("gepa.experiment_id") or run.info.run_id: run
              for run in sorted(runs, key=lambda r: r.info.start_time)}
    rows = []  # one per gepa run
    for run in latest.values():
        tags, metrics = defaultdict(str, run.data.tags), defaultdict(lambda: math.nan, run.data.metrics)
        finished = run.info.status == "FINISHED" and tags["promotion_eligible"] in ("true", "false")
        # `winner` since gepa-lab 0.1 (issue 22); older runs name it best_candidate_id
        seed_won = tags["rule.candidate_improved_validation"] == "failed"
        winner = (tags["winner"] or ("seed" if seed_won else tags["best_candidate_id"][:12])) if finished else "-"
        rows.append({
            "experiment": tags["experiment"], "seed": tags["random_seed"], "job": tags["sweep_job"],
            "status": run.info.status, "winner": winner, "holdout_delta": metrics["holdout_delta"],
            "holdout_delta_low": metrics["holdout_delta_low"], "holdout_delta_high": metrics["holdout_delta_high"],
            "eligible": tags["promotion_eligible"] == "true" if finished else None,
            "metric_calls": metrics["total_metric_calls"], "cost_usd": metrics["total_cost_usd"],
            "holdout_reuse": metrics["holdout_reuse"], "stop_reason": tags["stop_reason"],
            "reason": tags["promotion_reason"], "run_id": run.info.run_id,
            "gepa_experiment_id": tags["gepa.experiment_id"], "run_dir": tags["run_dir"],
            "simulated": tags["simulated"] == "true", "conclusion": tags["conclusion"],
            "next_hypothesis": tags["next_hypothesis"],
            "run_url": run_url(uri, run.info.experiment_id, run.info.run_id)})
    return _table(rows, "run_id")


def _table(rows: list[dict[str, Any]], last: str) -> Any:
    """The report's rows as a frame (integer columns typed), sorted by experiment, seed, job, `last`."""
    import pandas as pd

    frame = pd.DataFrame(rows)
    frame[["seed", "job"]] = frame[["seed", "job"]].apply(pd.to_numeric, errors="coerce").astype("Int64")
    frame["metric_calls"] = frame["metric_calls"].astype("Float64").round().astype("Int64")
    return frame.sort_values(["experiment", "seed", "job", last], na_position="last").reset_index(drop=True)


def records_frame(runs: Sequence[Any]) -> Any:
    """`frame_of`'s table from a sweep's run records (gepa_lab/study.py `StudyRun`s): the latest
    decision of each run, its MLflow links when it was tracked."""
    from gepa_lab.runs.lock import holder

    rows = []
    for run in runs:
        result, links = run.latest or {}, (run.latest or {}).get("links") or {}
        interval = result.get("holdout_interval") or [math.nan, math.nan]
        notes = run.run_dir / "notes.jsonl"  # `python -m gepa_lab.note` appends them; the latest counts
        lines = notes.read_text(encoding="utf-8").splitlines() if notes.is_file() else []
        note = json.loads(lines[-1]) if lines else {}
        rows.append({
            "experiment": run.name, "seed": run.config.get("search", {}).get("random_seed"),
            "job": (run.config.get("sweep") or {}).get("job"),
            "status": "FINISHED" if result else "RUNNING" if holder(run.run_dir) else "UNFINISHED",
            "winner": ("seed" if result["best_id"] == result["seed_id"] else result["best_id"][:12]) if result else "-",
            "holdout_delta": result["holdout_delta"] if result.get("holdout_cases") else math.nan,
            "holdout_delta_low": interval[0], "holdout_delta_high": interval[1],
            "eligible": bool(result["promotion_eligible"]) if result else None,
            "metric_calls": result.get("metric_calls", math.nan),
            "cost_usd": math.fsum(result["cost_usd"].values()) if result else math.nan,
            "holdout_reuse": math.nan if result.get("holdout_reuse") is None else result["holdout_reuse"],
            "stop_reason": result.get("stop_reason", ""), "reason": result.get("promotion_reason", ""),
            "run_id": links.get("mlflow_run_id", ""), "gepa_experiment_id": result.get("experiment_id", ""),
            "run_dir": str(run.run_dir), "simulated": simulated(run.config),
            "conclusion": note.get("conclusion", ""), "next_hypothesis": note.get("next", ""),
            # the run's own page on the UI its summary named (the summary's link is the decisions view)
            "run_url": url.partition("#")[0] + run_url("", links.get("mlflow_experiment_id"), links["mlflow_run_id"])
            if (url := links.get("mlflow_run_url")) else ""})
    return _table(rows, "run_dir")


# -- writing ---------------------------------------------------------------------------------------
def _delta(row: Any) -> str:
    if math.isnan(row.holdout_delta):
        return "-"
    text = f"{row.holdout_delta:+.4f}"
    if not (math.isnan(row.holdout_delta_low) or math.isnan(row.holdout_delta_high)):
        text += f" [{row.holdout_delta_low:+.4f}, {row.holdout_delta_high:+.4f}]"
    return text


def display_table(frame: Any) -> Any:
    """The human table: one formatted text cell per column."""
    import pandas as pd

    def text(value: Any, fmt: str = "{}") -> str:
        return "-" if pd.isna(value) else fmt.format(value)

    return pd.DataFrame([{
        "experiment": row.experiment, "seed": text(row.seed), "job": text(row.job), "status": row.status,
        "winner": row.winner, "holdout delta": _delta(row),
        "eligible": {True: "yes", False: "no"}.get(row.eligible, "-"), "metric calls": text(row.metric_calls),
        "cost": text(row.cost_usd, "${:.4f}"), "looks": text(row.holdout_reuse, "{:.0f}"),
        "stop reason": row.stop_reason or "-",
        "note": _cut(row.conclusion), "next": _cut(row.next_hypothesis),
    } for row in frame.itertuples(index=False)])


def _cut(note: str) -> str:
    return (note[:NOTE_WIDTH - 1] + "…" if len(note) > NOTE_WIDTH else note) or "-"


def note_lines(frame: Any) -> list[str]:
    """Every run's note whole (Markdown), for report.md."""
    import pandas as pd

    lines = [f"- {row.experiment} seed {'-' if pd.isna(row.seed) else row.seed}: {row.conclusion}"
             + (f" *Next:* {row.next_hypothesis}" if row.next_hypothesis else "")
             for row in frame.itertuples(index=False) if row.conclusion]
    return ["## Notes", "", *lines, ""] if lines else []


def link_lines(uri: str, frame: Any, mlflow_experiment_id: str) -> list[str]:
    """Where to look in MLflow: the experiment's decision view and a comparison of these runs."""
    lines = [f"MLflow, the runs table: {mlflow_links.experiment_url(uri, mlflow_experiment_id)}",
             "MLflow, these runs compared: "
             + mlflow_links.compare_url(uri, [mlflow_experiment_id], list(frame["run_id"]))]
    command = mlflow_links.ui_command(uri)
    return lines + ([f"(serve the links first: {command})"] if command else [])


def markdown(table: Any, title: str, notes: Sequence[str]) -> str:
    lines = [f"# {title}", "", *notes, "", "| " + " | ".join(table.columns) + " |",
             "|" + "|".join("---" for _ in table.columns) + "|"]
    lines += ["| " + " | ".join(str(v).replace("|", "\\|") for v in row) + " |"
              for row in table.itertuples(index=False)]
    return "\n".join(lines) + "\n"


def summary_lines(frame: Any) -> list[str]:
    """Per experiment: runs, finished, eligible, mean holdout delta."""
    out = []
    for name, group in frame.groupby("experiment", sort=True):
        done = group[group["eligible"].notna()]
        deltas = done["holdout_delta"].dropna()
        mean = f", mean holdout delta {deltas.mean():+.4f}" if len(deltas) else ""
        eligible = int(done["eligible"].astype(bool).sum()) if len(done) else 0
        sim = " (SkillCraft-sim: simulated numbers that calibrate the harness, not an LM)" \
            if group["simulated"].any() else ""
        out.append(f"{name}: {len(group)} runs, {len(done)} finished, {eligible} eligible{mean}{sim}")
        reuse = group["holdout_reuse"].max()
        if reuse >= HOLDOUT_REUSE_WARNING:
            out.append(f"{name}: up to {int(reuse)} earlier decisions were taken on its holdout split (the look "
                       "ledger): keeping the best of them tunes on it (confirm with --confirm)")
    return out


def plot(frame: Any, path: Path, title: str) -> None:
    """Holdout delta per run (x: experiment / seed), its interval as an error bar; filled = eligible."""
    from matplotlib.figure import Figure

    done = frame[frame["holdout_delta"].notna()].reset_index(drop=True)
    figure = Figure(figsize=(max(4.0, 0.5 * len(done) + 2.0), 3.6), layout="constrained")
    axes = figure.add_subplot()
    colours = {name: f"C{i % 10}" for i, name in enumerate(sorted(set(done["experiment"])))}
    for x, row in enumerate(done.itertuples(index=False)):
        low, high = row.holdout_delta_low, row.holdout_delta_high
        err = None if math.isnan(low) or math.isnan(high) else [[row.holdout_delta - low], [high - row.holdout_delta]]
        colour = colours[row.experiment]
        axes.errorbar([x], [row.holdout_delta], yerr=err, fmt="o", color=colour, capsize=3,
                      markerfacecolor=colour if row.eligible is True else "white")
    axes.axhline(0.0, color="grey", linewidth=0.8)
    axes.set_xticks(range(len(done)), [f"{r.experiment}\nseed {r.seed}" for r in done.itertuples(index=False)],
                    fontsize=7)
    axes.set_ylabel("holdout delta (winner - seed)")
    axes.set_title(f"{title}\n(filled: eligible; bars: interval when recorded)", fontsize=9)
    for name, colour in colours.items():
        axes.plot([], [], "o", color=colour, label=name)
    if colours:
        axes.legend(fontsize=7, loc="best")
    figure.savefig(path, dpi=110)


# -- command -------------------------------------------------------------------------------------
def main(argv: Sequence[str] | None = None) -> int:
    return run_command(build_parser(), argv, _command)


def run_command(parser: argparse.ArgumentParser, argv: Sequence[str] | None,
                command: Callable[[argparse.Namespace], int]) -> int:
    """Parse, set the offline defaults, run (`report` and `note`)."""
    try:
        args = parser.parse_args(argv)
    except SystemExit as exc:  # --help (0) or a usage error already printed (2)
        return exc.code if isinstance(exc.code, int) else 2
    for name, value in ENV_DEFAULTS.items():
        os.environ.setdefault(name, value)
    return command(args)


def _command(args: argparse.Namespace) -> int:
    if args.confirm:
        return confirm_runs(args.confirm)
    from gepa_lab.study import StudyError
    from gepa_lab.tracking.mlflow_tracker import default_uri

    uri = args.tracking_uri or default_uri()
    try:
        if args.compare:
            lines, written = compare_sweep(args)
        elif args.sweep and Path(args.sweep).is_dir():
            lines, written = report_records(args)
        else:
            lines, written = report_runs(args, uri)
    except UsageError as exc:
        return fail(PROG, str(exc), 2)
    except (ReportError, StudyError) as exc:
        return fail(PROG, str(exc), 1)
    except OSError as exc:
        return fail(PROG, f"cannot write the report: {exc}", 1)
    except Exception as exc:  # an MLflow error: one line, never a traceback
        return fail(PROG, f"cannot read {masked(uri)}: {describe(exc)}", 1)
    print(*lines, "written: " + ", ".join(str(p) for p in written), sep="\n")
    return 0


def selection(args: argparse.Namespace) -> tuple[str, str, str]:
    """(MLflow filter, title, report folder) of `--sweep` / `--experiment`; a bad one is a usage error."""
    if args.sweep is not None:
        if not args.sweep.strip():
            raise UsageError("--sweep needs a sweep id or directory")
        selected = sweep_selector(args.sweep)
        if not re.fullmatch(r"[\w.\-]+", selected):
            raise UsageError(f"--sweep {args.sweep!r} is neither a sweep id nor a sweep directory")
        return f"tags.sweep_id = '{selected}'", f"sweep {selected}", f"sweep-{selected}"
    if args.experiment is not None:
        if not re.fullmatch(r"[\w.\-]+", args.experiment):
            raise UsageError(f"--experiment {args.experiment!r} is not an experiment name")
        return f"tags.experiment = '{args.experiment}'", f"experiment {args.experiment}", \
            f"experiment-{args.experiment}"
    return "", "all runs", "all"


class UsageError(ValueError):
    """A bad argument value found after parsing (exit 2)."""


def _write(args: argparse.Namespace, slug: str, stem: str, frame: Any, markdown_text: str,
           plot_to: Callable[[Path], None], plot_name: str) -> list[Path]:
    """The report's files in `--out` (default reports/<slug>): CSV, Markdown and, unless --no-plot, the plot."""
    out = Path(args.out) if args.out else Path("reports") / slug
    out.mkdir(parents=True, exist_ok=True)
    written = [out / f"{stem}.csv", out / f"{stem}.md"]
    frame.to_csv(written[0], index=False)
    written[1].write_text(markdown_text, encoding="utf-8")
    if not args.no_plot:
        plot_to(out / plot_name)
        written.append(out / plot_name)
    return written


def report_runs(args: argparse.Namespace, uri: str) -> tuple[list[str], list[Path]]:
    where, title, slug = selection(args)
    runs = parent_runs(client_for(uri), args.mlflow_experiment, where)
    if not runs:
        raise ReportError(f"no gepa-lab runs in {masked(uri)} match {where or 'the experiment'} "
                          f"(MLflow experiment {args.mlflow_experiment!r})")
    frame = frame_of(runs, uri)
    return _report(args, frame, title, slug, f"MLflow store: {masked(uri)} (experiment {args.mlflow_experiment!r})",
                   link_lines(uri, frame, runs[0].info.experiment_id))


def report_records(args: argparse.Namespace) -> tuple[list[str], list[Path]]:
    """`--sweep DIR`: the same report from the sweep's run records (MLflow links when the runs have them)."""
    from gepa_lab.study import load_study

    _, title, slug = selection(args)
    runs = load_study(args.sweep)
    frame = records_frame(runs)
    links = next((lk for r in runs if (lk := (r.latest or {}).get("links") or {}).get("mlflow_tracking_uri")), {})
    tracked = frame[frame["run_id"] != ""]
    return _report(args, frame, title, slug, f"run records in {args.sweep}",
                   link_lines(links["mlflow_tracking_uri"], tracked, links["mlflow_experiment_id"]) if links else [],
                   sweep_status(Path(args.sweep), runs))


def _report(args: argparse.Namespace, frame: Any, title: str, slug: str, source: str, links: list[str],
            status: Sequence[str] = ()) -> tuple[list[str], list[Path]]:
    table, summary = display_table(frame), [*summary_lines(frame), *status]
    notes = [f"{source}; {len(frame)} runs.", "", *[f"- {line}" for line in summary], "",
             *[f"{line}  " for line in links]]
    text = markdown(table, f"gepa-lab report: {title}", notes) + "\n".join(["", *note_lines(frame)])
    written = _write(args, slug, "report", frame, text, lambda path: plot(frame, path, f"gepa-lab: {title}"),
                     "holdout_delta.png")
    return [table.to_string(index=False), "", *summary, *links], written


def sweep_status(sweep: Path, runs: Sequence[Any]) -> list[str]:
    """The sweep's jobs without a decision (never started, killed, failed), and the command that
    completes the sweep (finished jobs are skipped, unfinished ones resume: docs/study.md)."""
    from omegaconf import DictConfig, OmegaConf

    from gepa_lab.cli import sweep_jobs

    decided = {frozenset(r.overrides) for r in runs if r.latest is not None}
    try:
        config = OmegaConf.load(sweep / "multirun.yaml")
        assert isinstance(config, DictConfig)
        jobs, task = sweep_jobs(config), [str(o) for o in config.hydra.overrides.task]
    except Exception:  # not a Hydra sweep directory (or one Hydra cannot expand here): the records tell
        jobs, task = [list(r.overrides) for r in runs], None
    missing = [str(number) for number, job in enumerate(jobs) if frozenset(job) not in decided]
    if not missing:
        return []
    shown = ", ".join(missing[:12]) + (f" and {len(missing) - 12} more" if len(missing) > 12 else "")
    again = (f": complete the sweep with `python -m gepa_lab -m {' '.join(task)} hydra.sweep.dir={sweep}` "
             "(finished jobs are skipped, unfinished ones resume)") if task is not None else ""
    return [f"{len(missing)} of {len(jobs)} jobs have no decision (jobs {shown}){again}"]


def compare_sweep(args: argparse.Namespace) -> tuple[list[str], list[Path]]:
    """`--compare KEY`: the paired comparison of a sweep's runs (table, CSV of rows and of pairs,
    Markdown, plot)."""
    import pandas as pd

    from gepa_lab.study import StudyError, holdout_looks, load_study, opposite_signs, plot_compare
    from gepa_lab.study import compare as compare_runs

    if not args.sweep or not Path(args.sweep).is_dir():
        raise UsageError("--compare needs --sweep <the sweep directory> (hydra.sweep.dir)")
    runs = load_study(args.sweep)
    status = sweep_status(Path(args.sweep), runs)
    by = args.by if args.by is not None else (
        "experiment" if args.compare != "experiment" and len({r.name for r in runs}) > 1 else None)
    try:
        rows = compare_runs(runs, args.compare, args.baseline, by, args.tolerance)
    except StudyError as exc:  # name the unfinished jobs and the command that completes the sweep
        raise StudyError(" ".join([str(exc), *status])) from None
    frame = pd.DataFrame(rows).drop(columns="pairs_data", errors="ignore").rename(columns={"group": by or "group"})
    pairs = pd.DataFrame([{"value": row["value"], **pair} for row in rows if row["group"] == "all"
                          for pair in row["pairs_data"]])
    whys = sorted({f"{r['value']} ({r['group']}): no interval: {r['why no interval']}" for r in rows
                   if r["why no interval"]})
    notes = [f"{len(runs)} runs in {args.sweep}; pairs share every other swept value; gain = the winner's holdout "
             "delta (0 when the seed won); difference = mean paired difference in gain; interval: 95% percentile "
             "bootstrap resampling clusters (pairs of one holdout split and random seed) and holdout cases; p: "
             f"two-sided sign-flip test over clusters; tied: every holdout case within +-{args.tolerance:g} (the "
             "score's resolution), else better / worse by the sign; noise: the seed-to-seed standard deviation "
             "of one holdout score (the seed artifact's holdout mean across random seeds)."
             + (f" Rows per {by} beside the pooled row (all)." if by else ""),
             *whys, *opposite_signs(rows), *holdout_looks(runs), *status]
    if any(r.result and r.result.get("warnings") for r in runs):
        notes.append("Some runs carry pre-flight warnings (see their result.json).")
    if any(simulated(r.config) for r in runs):
        notes.append("SkillCraft-sim runs: these numbers calibrate the harness, not an LM.")
    stem = f"compare-{args.compare.replace('/', '.')}"
    written = _write(args, f"sweep-{sweep_selector(args.sweep)}", stem, frame,
                     markdown(frame.round(4), f"{args.compare}: paired comparison", notes),
                     lambda path: plot_compare(rows, args.compare, path), f"{stem}.png")
    written.insert(1, written[0].with_name(f"pairs-{args.compare.replace('/', '.')}.csv"))
    pairs.to_csv(written[1], index=False)
    logged = log_compare(args, runs, frame, written)
    shown = frame.round(4)[["value", by or "group", "pairs", "clusters", "difference", "low", "high", "p", "better",
                            "tied", "worse", "noise", "promoted", "baseline promoted", "false promotions"]]
    return [shown.to_string(index=False), "", *notes, *([f"MLflow, this comparison: {logged}"] if logged else [])], \
        written


def log_compare(args: argparse.Namespace, runs: Sequence[Any], frame: Any, files: Sequence[Path]) -> str | None:
    """The comparison as one run of `<experiment>-studies` (table, Markdown, CSV, plot), beside the
    sweep's parent runs, when the sweep was tracked in MLflow or `--tracking-uri` names a store;
    returns the run's page."""
    from gepa_lab.tracking.mlflow_tracker import default_uri

    configs = [r.config.get("tracking") or {} for r in runs]
    tracking = next((t for t in configs if "mlflow" in str(t.get("_target_", ""))), {})
    if not tracking and not args.tracking_uri:
        return None
    uri = args.tracking_uri or tracking.get("uri") or default_uri()
    client = client_for(uri)
    name = f"{tracking.get('experiment') or args.mlflow_experiment}-studies"
    run_id = None
    try:
        found = client.get_experiment_by_name(name)
        experiment_id = found.experiment_id if found else client.create_experiment(name)
        run_id = client.create_run(experiment_id, run_name=f"compare {args.compare}", tags={
            "gepa.kind": "study_compare", "sweep_id": sweep_selector(args.sweep), "compare_key": args.compare,
            "baseline": str(frame["baseline"].iloc[0])}).info.run_id
        client.log_table(run_id, frame, f"compare-{args.compare.replace('/', '.')}.json")
        for path in files:
            client.log_artifact(run_id, str(path))
    except Exception as exc:  # the files are written: say why MLflow has no copy
        if run_id is not None:
            client.set_terminated(run_id, "FAILED")
        raise ReportError(f"the comparison is written but not logged to {masked(uri)}: {describe(exc)}") from exc
    client.set_terminated(run_id)
    return run_url(uri, experiment_id, run_id)


def confirm_runs(run_dirs: Sequence[str]) -> int:
    """`--confirm RUN_DIR...`: each run's seed and winner on the sealed confirmation split, once per
    winner: the run's evaluator and dataset rebuilt from its record."""
    from gepa_lab.core.errors import GepaLabError
    from gepa_lab.core.settings import from_mapping
    from gepa_lab.data import DatasetSource, load_confirmation
    from gepa_lab.runs.record import load_experiment
    from gepa_lab.study import confirm

    try:
        for run_dir in run_dirs:
            experiment = load_experiment(run_dir)
            source = experiment.config.get("dataset")
            if not isinstance(source, dict):
                raise ReportError(f"{run_dir} recorded no dataset configuration (only command-line runs do); it "
                                  "cannot be confirmed from here")
            evaluator, settings = experiment.evaluator()  # a run that recorded no evaluator: ValueError
            cases = load_confirmation(from_mapping(DatasetSource, source, "dataset"), experiment.dataset)
            data = confirm(run_dir, evaluator, cases, settings)
            print(f"{run_dir}: confirmation delta {data['delta']:+.4f} over {data['cases']} cases "
                  f"(seed {data['baseline']:.4f} -> winner {data['candidate']:.4f}; promoted "
                  f"{'yes' if data['promoted'] else 'no'}; {data['paid_evaluations']} evaluations paid)"
                  + reopened(data))
    except BrokenPipeError:  # the reader left: `run_main` ends quietly
        raise
    except (GepaLabError, ReportError, ValueError, OSError) as exc:
        return fail(PROG, str(exc), 1)
    return 0


def reopened(confirmation: dict[str, Any]) -> str:
    """What an opening after the first must say wherever its result appears."""
    before = int(confirmation.get("openings_before", 0))
    return (f"; NOT a first look: the split was opened {before} time{'s' * (before != 1)} before (for other "
            "winners), so it is no longer unseen by this study") if before else ""


if __name__ == "__main__":
    run_main(main)
