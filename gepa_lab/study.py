"""A study is a Hydra sweep (docs/research.md): its runs, read from their run records, compared by
one configuration key, paired by everything else the sweep varied (random seed, experiment, ...);
and the sealed confirmation split, opened once per candidate.

For each value of the key against a baseline value, pooled and per group (`--by`, default the
experiment): the paired difference in holdout gain (the winner's holdout delta; 0 when the seed won)
with a clustered two-way bootstrap interval and a sign-flip test (gepa_lab/comparison.py), better /
tied / worse by a tolerance, the seed-to-seed noise of one holdout score, promotions and false
promotions (promoted, yet no gain on the confirmation split), and cost. Each job counts with its own
decision (its first): a run decided again later under other settings does not change its row.
"""

from __future__ import annotations

import json
import math
import random
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from gepa_lab.comparison import TOLERANCE, paired_comparison
from gepa_lab.core.artifacts import artifact_from_dict
from gepa_lab.core.contracts import Case, Evaluator, split_digest
from gepa_lab.core.errors import GepaLabError, ResumeError
from gepa_lab.core.settings import EvaluationSettings
from gepa_lab.runs.lock import RunLock
from gepa_lab.runs.looks import looks, record_look
from gepa_lab.runs.record import CONFIRMATION_FILE, RunRecord, load_experiment, read_decision, read_view
from gepa_lab.search.evaluation import CaseRunner
from gepa_lab.search.state import draw_seed


class StudyError(GepaLabError):
    """The study cannot be read or compared as asked (exit 1)."""


@dataclass(frozen=True)
class StudyRun:
    run_dir: Path
    overrides: tuple[str, ...]  # the job's command-line overrides (the sweep's axes)
    config: dict[str, Any]
    result: dict[str, Any] | None  # the job's own (first) decision; None while unfinished
    confirmation: dict[str, Any] | None
    decisions: int = 1  # decisions the record holds: more than one, the run was decided again later
    latest: dict[str, Any] | None = None  # the latest decision (what the plain report shows)
    name: str = ""  # the experiment's name

    @property
    def gain(self) -> float | None:
        if self.result is None or not self.result.get("holdout_cases"):
            return None
        return 0.0 if self.result["best_id"] == self.result["seed_id"] else float(self.result["holdout_delta"])

    @property
    def case_gains(self) -> dict[str, float]:
        """Per holdout case, the winner's score minus the seed's (0 when the seed won)."""
        assert self.result is not None
        won = self.result["best_id"] != self.result["seed_id"]
        return {c["case_id"]: float(c["delta"]) if won else 0.0 for c in self.result["holdout_cases"]}

    @property
    def holdout(self) -> str:
        return str((self.result or {}).get("dataset", {}).get("digests", {}).get("holdout", ""))

    @property
    def random_seed(self) -> Any:
        return (self.result or {}).get("seeds", {}).get("random_seed")

    @property
    def promoted(self) -> bool:
        return bool(self.result and self.result["promotion_eligible"])

    @property
    def false_promotion(self) -> bool | None:
        """Promoted, yet no gain on the sealed confirmation split (None: not confirmed)."""
        return None if self.confirmation is None else self.promoted and self.confirmation["delta"] <= 0.0


def load_study(sweep_dir: str | Path) -> list[StudyRun]:
    """Every run of a sweep directory, in job order (a job without a record is left out)."""
    root = Path(sweep_dir)
    if not root.is_dir():
        raise StudyError(f"no sweep directory {root}; pass the hydra.sweep.dir the sweep printed")
    runs = []
    # Hydra's job folders are numbered (`0`, `1`, … or `0_name`): job order, not name order
    number = {p: int(h) if (h := p.name.split("_", 1)[0]).isdigit() else 1 << 30 for p in root.iterdir()}
    for job in sorted(number, key=lambda p: (number[p], p.name)):
        if not (job / "experiment.json").is_file():
            continue
        try:
            experiment = load_experiment(job)
            result = read_view(job)
            latest = int(result["decision_number"]) if result else 0
            first = read_decision(job, 1) if latest > 1 else result
            runs.append(StudyRun(job, tuple(experiment.config.get("overrides") or ()), experiment.config, first,
                                 read_view(job, CONFIRMATION_FILE), latest, result, experiment.name))
        except (OSError, ValueError, KeyError, GepaLabError) as exc:
            raise StudyError(f"cannot read the run in {job}: {exc}") from None
    if not runs:
        raise StudyError(f"{root} holds no gepa-lab runs (no <job>/experiment.json)")
    return runs


def override_key(override: str) -> str:
    """The config key a command-line override sets, a group's `/` written `.` (`+search/parent=x`:
    `search.parent`)."""
    return override.split("=", 1)[0].lstrip("+~").replace("/", ".")


def within(key: str, outer: str) -> bool:
    """`key` is `outer` or a key inside it (both written with `.`)."""
    return key == outer or key.startswith(outer + ".")


def value_of(run: StudyRun, key: str) -> str:
    """The run's value of `key`: its override when the sweep set it, else its config group choice
    (`search/parent`) or its configuration value (`search.minibatch_size`)."""
    target = key.replace("/", ".")
    for override in run.overrides:
        name = override_key(override)
        if within(name, target):
            return override.split("=", 1)[1] if name == target else override
    choices = run.config.get("hydra_choices") or {}
    if key in choices:
        return str(choices[key])
    node: Any = run.config
    for part in target.split("."):
        if not isinstance(node, dict) or part not in node:
            raise StudyError(f"--compare/--by {key}: the runs have no such configuration key (try a config group "
                             "such as search/parent, or a key such as search.minibatch_size)")
        node = node[part]
    return node if isinstance(node, str) else json.dumps(node, sort_keys=True)


def pair_key(run: StudyRun, key: str) -> tuple[str, ...]:
    """Everything the sweep varied except `key`: runs with equal pair keys are compared."""
    target = key.replace("/", ".")
    return tuple(sorted(o for o in run.overrides if not within(override_key(o), target)))


def _mean(values: Sequence[float]) -> float:
    return math.fsum(values) / len(values) if values else math.nan


def compare(runs: Sequence[StudyRun], key: str, baseline: str | None = None, by: str | None = None,
            tolerance: float = TOLERANCE) -> list[dict[str, Any]]:
    """One row per value of `key` other than the baseline (the first job's value unless given) and
    per group of `by` (the pooled row first, group `all`): its columns, and its pairs (`pairs_data`).
    Refused when a pair's runs were judged on different holdout splits."""
    finished = [r for r in runs if r.gain is not None]
    waiting = len(runs) - len(finished)
    unfinished = f"; {waiting} run{'s' * (waiting != 1)} of the sweep have no decision yet: complete it" \
        if waiting else ""
    if not finished:
        raise StudyError(f"no finished run with a holdout decision in the study{unfinished}")
    values = list(dict.fromkeys(value_of(r, key) for r in finished))
    base = baseline if baseline is not None else values[0]
    if base not in values:
        raise StudyError(f"--baseline {base!r} is not a value of {key} in the study's finished runs (values: "
                         f"{', '.join(values)}){unfinished}")
    if len(values) < 2:
        raise StudyError(f"the study's finished runs have only one value of {key} ({base})"
                         + (unfinished or "; sweep it over two or more"))
    by_pair = {pair_key(r, key): r for r in finished if value_of(r, key) == base}
    rows = []
    for value in (v for v in values if v != base):
        pairs = [(by_pair[pk], r) for r in finished
                 if value_of(r, key) == value and (pk := pair_key(r, key)) in by_pair]
        _same_split(pairs, key)
        groups: dict[str, list[tuple[StudyRun, StudyRun]]] = {"all": pairs}
        for pair in pairs if by else ():
            groups.setdefault(value_of(pair[1], str(by)), []).append(pair)
        rows += [{"value": value, "baseline": base, "group": group, **_row(members, key, tolerance)}
                 for group, members in groups.items() if members]
    return rows


def _same_split(pairs: list[tuple[StudyRun, StudyRun]], key: str) -> None:
    for base, run in pairs:
        if base.holdout != run.holdout:
            raise StudyError(f"--compare {key} is refused: {value_of(base, key)} and {value_of(run, key)} are judged "
                             f"on different holdout splits ({base.holdout[:12]} vs {run.holdout[:12]}), so their "
                             "gains are not paired; compare a setting swept within each split instead (its "
                             "report has a row per experiment)")


def _row(pairs: list[tuple[StudyRun, StudyRun]], key: str, tolerance: float) -> dict[str, Any]:
    """A row of `compare` from its (baseline run, run) pairs, runs with equal pair keys."""
    diffs = [float(run.gain or 0.0) - float(base.gain or 0.0) for base, run in pairs]
    cases = [[run.case_gains[c] - gains[c] for c in gains] for base, run in pairs if (gains := base.case_gains)]
    result = paired_comparison(diffs, [base.random_seed for base, _ in pairs], cases,
                               strata=[base.holdout for base, _ in pairs], tolerance=tolerance)
    ours, theirs = [run for _, run in pairs], [base for base, _ in pairs]

    def falses(group: list[StudyRun]) -> str:
        known = [r for r in group if r.false_promotion is not None]
        again = sum(int((r.confirmation or {}).get("openings_before", 0)) > 0 for r in known)
        return (f"{sum(bool(r.false_promotion) for r in known)}/{len(known)} confirmed"
                + (f" ({again} on a split opened before)" if again else "")) if known else "-"

    pairs_data = [{"baseline": value_of(base, key), "holdout": base.result["dataset"]["id"],  # type: ignore[index]
                   "random seed": base.random_seed, "pair": " ".join(pair_key(base, key)),
                   "baseline run": base.run_dir.name, "run": run.run_dir.name, "baseline gain": base.gain,
                   "gain": run.gain, "difference": diff, "case differences": json.dumps(case)}
                  for (base, run), diff, case in zip(pairs, diffs, cases, strict=True)]
    return {"pairs_data": pairs_data, "pairs": result.pairs, "clusters": result.clusters,
            "gain": _mean([float(r.gain or 0.0) for r in ours]),
            "baseline gain": _mean([float(r.gain or 0.0) for r in theirs]), "difference": result.estimate,
            "low": result.low, "high": result.high, "p": result.p_value, "better": result.better,
            "tied": result.tied, "worse": result.worse, "noise": seed_noise([*ours, *theirs]),
            "promoted": sum(r.promoted for r in ours), "baseline promoted": sum(r.promoted for r in theirs),
            "false promotions": falses(ours), "baseline false promotions": falses(theirs),
            "metric calls": _mean([float(r.result["metric_calls"]) for r in ours if r.result]),
            "cost usd": _mean([math.fsum((r.result or {}).get("cost_usd", {}).values()) for r in ours]),
            "why no interval": result.why}


def seed_noise(runs: Sequence[StudyRun]) -> float:
    """The seed-to-seed noise of one holdout score: the standard deviation, across random seeds, of
    the seed artifact's holdout mean (the same artifact on the same cases, only the evaluation seed
    differs), per holdout split (and number of holdout repeats); several: the root mean of their
    variances."""
    scores: dict[tuple[str, str, int], dict[Any, float]] = defaultdict(dict)
    for run in runs:
        if run.result is not None:
            key = (run.holdout, run.result["seed_id"], run.result.get("holdout_repeats", 1))
            scores[key][run.random_seed] = run.result["baseline_holdout"]["score"]
    variances = [float(np.var(list(s.values()), ddof=1)) for s in scores.values() if len(s) > 1]
    return math.sqrt(_mean(variances)) if variances else math.nan


def opposite_signs(rows: Sequence[dict[str, Any]]) -> list[str]:
    """Values whose per-group effects point in opposite directions: their pooled row averages them
    (a group whose every pair is tied has no direction)."""
    lines = []
    for value in dict.fromkeys(r["value"] for r in rows):
        groups = [r for r in rows if r["value"] == value and r["group"] != "all" and r["tied"] < r["pairs"]]
        if any(r["difference"] > 0 for r in groups) and any(r["difference"] < 0 for r in groups):
            effects = ", ".join(f"{r['group']} {r['difference']:+.4f}" for r in groups)
            lines.append(f"{value}: the groups' effects differ in sign ({effects}); the pooled row averages "
                         "opposite effects: read the rows, not the pool")
    return lines


def holdout_looks(runs: Sequence[StudyRun]) -> list[str]:
    """Per holdout split: the study's decisions on it and every decision the look ledger counts."""
    lines = []
    by_split: dict[str, list[StudyRun]] = defaultdict(list)
    for run in runs:
        if run.result is not None and run.holdout:
            by_split[run.holdout].append(run)
    for digest, members in by_split.items():
        name = members[0].result["dataset"]["id"]  # type: ignore[index]
        lines.append(f"holdout split {name} ({digest[:12]}): {sum(r.decisions for r in members)} decisions in this "
                     f"study, {len(looks('holdout', digest))} in the look ledger; keeping the best of them tunes on "
                     "it: confirm the choice with `--confirm` on the sealed confirmation split")
    again = [r.run_dir.name for r in runs if r.decisions > 1]
    if again:
        lines.append(f"decided again later (the study uses each job's own first decision): {', '.join(again)}")
    return lines


def plot_compare(rows: Sequence[dict[str, Any]], key: str, path: Path) -> None:
    """Per row of `compare`: each pair's difference in holdout gain (dots), the mean and its interval."""
    from matplotlib.figure import Figure

    base = str(rows[0]["baseline"])[:24]
    figure = Figure(figsize=(max(4.0, 1.6 * len(rows) + 2.0), 3.6), layout="constrained")
    axes = figure.add_subplot()
    for x, row in enumerate(rows):
        diffs = [pair["difference"] for pair in row["pairs_data"]]
        offsets = [0.3 * (i / max(1, len(diffs) - 1) - 0.5) for i in range(len(diffs))]
        axes.scatter([x - 0.15 + o for o in offsets], diffs, s=10, alpha=0.5, color=f"C{x % 10}")
        if row["low"] is not None:
            axes.errorbar([x + 0.2], [row["difference"]],
                          yerr=[[row["difference"] - row["low"]], [row["high"] - row["difference"]]],
                          fmt="D", color="black", capsize=4)
    axes.axhline(0.0, color="grey", linewidth=0.8)
    axes.set_xticks(range(len(rows)), [f"{r['value']}"[:24] + ("" if r["group"] == "all" else f"\n{r['group']}")
                                       for r in rows], fontsize=8)
    axes.set_xlim(-0.6, len(rows) - 0.4)
    axes.set_ylabel(f"holdout gain minus {base}", fontsize=8)
    axes.set_title(f"{key} vs {base}: one dot per pair;\ndiamond: mean difference, 95% CI (clusters x cases)",
                   fontsize=9)
    figure.savefig(path, dpi=110)


# -- the confirmation: a sealed split, opened once per candidate -------------------------------------
def confirm(run_dir: str | Path, evaluator: Evaluator, cases: Sequence[Case],
            evaluation: EvaluationSettings | None = None) -> dict[str, Any]:
    """Score a finished run's seed and winner on the dataset's sealed confirmation split (a third
    stage of evidence after the search and the holdout decision), record it in the run record and in
    the look ledger (keyed by the split's digest), and return it. A split is opened once per winner,
    whichever run directory (a copy included) asks; an opening after others says how many came before."""
    path, digest = Path(run_dir), split_digest(cases)
    with RunLock(path):
        record, recorded = RunRecord.reopen(path)
        try:
            if not recorded.finished:
                raise ResumeError(f"cannot confirm {path}: the run has not finished (resume it first)")
            result = recorded.latest_result()
            seen = [row for row in looks("confirmation", digest) if row["key"] == result["best_id"]]
            if seen or recorded.confirmation is not None:
                where = seen[0].get("run_dir") if seen else path
                raise ResumeError(f"the confirmation split {digest[:12]} was already opened for winner "
                                  f"{result['best_id'][:12]} (from {where}); a sealed split is opened once per "
                                  "candidate")
            seed_value = draw_seed(random.Random(f"confirmation/{result['seeds']['random_seed']}"))
            means, paid = _score_both(evaluator, evaluation, record, recorded.experiment["seed"]["artifact"], result,
                                      cases, seed_value)
            earlier = record_look("confirmation", digest, result["best_id"], run_dir=str(path.resolve()),
                                  delta=means[1] - means[0])
            data = {"decision": result["decision_number"], "cases": len(cases), "seed": seed_value,
                    "baseline": means[0], "candidate": means[1], "delta": means[1] - means[0],
                    "promoted": bool(result["promotion_eligible"]), "paid_evaluations": paid, "digest": digest,
                    "openings_before": len(earlier)}
            record.confirmation(data)
            return data
        finally:
            record.close()


def _score_both(evaluator: Evaluator, evaluation: EvaluationSettings | None, record: RunRecord,
                seed: dict[str, Any], result: dict[str, Any], cases: Sequence[Case],
                seed_value: int) -> tuple[tuple[float, float], int]:
    """The seed's and the winner's mean on `cases` with one seed, and the evaluations paid."""
    runner = CaseRunner(evaluator, evaluation, record)
    try:
        base = runner.run(artifact_from_dict(seed), result["seed_id"], cases, seed_value)
        cand = base if result["best_id"] == result["seed_id"] else runner.run(
            artifact_from_dict(result["best"]), result["best_id"], cases, seed_value)
    finally:
        runner.close()
    base_mean, cand_mean = (math.fsum(ev.score for ev in evals) / len(evals) for evals in (base, cand))
    return (base_mean, cand_mean), runner.paid
