"""A study is a Hydra sweep (docs/research.md): its runs, read from their run records, compared by
one configuration key, paired by everything else the sweep varied (random seed, experiment, ...).

For each value of the key against a baseline value: the paired difference in holdout gain (the
winner's holdout delta; 0 when the seed won) with a bootstrap interval, how many pairs were
better / tied / worse, promotions and false promotions (promoted, yet the sealed confirmation
split shows no gain: known only for runs confirmed with `report --confirm`), and cost.
"""

from __future__ import annotations

import json
import math
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from gepa_lab.core.errors import GepaLabError
from gepa_lab.runs.record import load_experiment, read_confirmation, read_result
from gepa_lab.search.promotion import paired_interval

TIE = 1e-9
RESAMPLES = 10_000


class StudyError(GepaLabError):
    """The study cannot be read or compared as asked (exit 1)."""


@dataclass(frozen=True)
class StudyRun:
    run_dir: Path
    overrides: tuple[str, ...]  # the job's command-line overrides (the sweep's axes)
    config: dict[str, Any]
    result: dict[str, Any] | None  # the latest decision; None while unfinished
    confirmation: dict[str, Any] | None

    @property
    def gain(self) -> float | None:
        if self.result is None or not self.result.get("holdout_cases"):
            return None
        return 0.0 if self.result["best_id"] == self.result["seed_id"] else float(self.result["holdout_delta"])

    @property
    def promoted(self) -> bool:
        return bool(self.result and self.result["promotion_eligible"])

    @property
    def false_promotion(self) -> bool | None:
        """Promoted, yet no gain on the sealed confirmation split (None: not confirmed)."""
        if self.confirmation is None:
            return None
        return self.promoted and self.confirmation["delta"] <= TIE


def load_study(sweep_dir: str | Path) -> list[StudyRun]:
    """Every run of a sweep directory, in job order (a job without a record is left out)."""
    root = Path(sweep_dir)
    if not root.is_dir():
        raise StudyError(f"no sweep directory {root}; pass the hydra.sweep.dir the sweep printed")
    runs = []
    for job in sorted(root.iterdir(), key=lambda p: (_job_number(p.name), p.name)):
        if not (job / "experiment.json").is_file():
            continue
        try:
            experiment = load_experiment(job)
            runs.append(StudyRun(job, tuple(experiment.config.get("overrides") or ()), experiment.config,
                                 read_result(job), read_confirmation(job)))
        except (OSError, ValueError) as exc:
            raise StudyError(f"cannot read the run in {job}: {exc}") from None
    if not runs:
        raise StudyError(f"{root} holds no gepa-lab runs (no <job>/experiment.json)")
    return runs


def _job_number(name: str) -> int:
    head = name.split("_", 1)[0]
    return int(head) if head.isdigit() else 1 << 30


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
            raise StudyError(f"--compare {key}: the runs have no such configuration key (try a config group such "
                             "as search/parent, or a key such as search.minibatch_size)")
        node = node[part]
    return node if isinstance(node, str) else json.dumps(node, sort_keys=True)


def pair_key(run: StudyRun, key: str) -> tuple[str, ...]:
    """Everything the sweep varied except `key`: runs with equal pair keys are compared."""
    target = key.replace("/", ".")
    return tuple(sorted(o for o in run.overrides if not within(override_key(o), target)))


def _mean(values: Sequence[float]) -> float:
    return math.fsum(values) / len(values) if values else math.nan


def compare(runs: Sequence[StudyRun], key: str, baseline: str | None = None) -> list[dict[str, Any]]:
    """One row per value of `key` other than the baseline (the first job's value unless given): its
    columns, and the paired differences in holdout gain (`diffs`, for the plot)."""
    finished = [r for r in runs if r.gain is not None]
    if not finished:
        raise StudyError("no finished run with a holdout decision in the study")
    values = list(dict.fromkeys(value_of(r, key) for r in finished))
    base = baseline if baseline is not None else values[0]
    if base not in values:
        raise StudyError(f"--baseline {base!r} is not a value of {key} in the study (values: {', '.join(values)})")
    if len(values) < 2:
        raise StudyError(f"the study has only one value of {key} ({base}); sweep it over two or more")
    by_pair = {pair_key(r, key): r for r in finished if value_of(r, key) == base}
    return [{"value": value, "baseline": base, **_row([(by_pair[pair_key(r, key)], r) for r in finished
                                                      if value_of(r, key) == value and pair_key(r, key) in by_pair])}
            for value in values if value != base]


def _row(pairs: list[tuple[StudyRun, StudyRun]]) -> dict[str, Any]:
    """A row of `compare` from its (baseline run, run) pairs, runs with equal pair keys."""
    diffs = [float(run.gain or 0.0) - float(base.gain or 0.0) for base, run in pairs]
    low, high = paired_interval(diffs, 0.95, RESAMPLES, 0) if diffs else (math.nan, math.nan)
    ours, theirs = [run for _, run in pairs], [base for base, _ in pairs]

    def falses(group: list[StudyRun]) -> str:
        known = [r.false_promotion for r in group if r.false_promotion is not None]
        return f"{sum(known)}/{len(known)} confirmed" if known else "-"

    return {"diffs": diffs, "pairs": len(pairs), "gain": _mean([float(r.gain or 0.0) for r in ours]),
            "baseline gain": _mean([float(r.gain or 0.0) for r in theirs]), "difference": _mean(diffs),
            "low": low, "high": high, "better": sum(d > TIE for d in diffs), "tied": sum(abs(d) <= TIE for d in diffs),
            "worse": sum(d < -TIE for d in diffs), "promoted": sum(r.promoted for r in ours),
            "baseline promoted": sum(r.promoted for r in theirs), "false promotions": falses(ours),
            "baseline false promotions": falses(theirs),
            "metric calls": _mean([float(r.result["metric_calls"]) for r in ours if r.result]),
            "cost usd": _mean([math.fsum((r.result or {}).get("cost_usd", {}).values()) for r in ours])}


def holdout_reuse(runs: Sequence[StudyRun]) -> dict[str, int]:
    """Decisions per holdout digest: a study that keeps the best of many configurations judged on
    one holdout has tuned on it."""
    counts: Counter[str] = Counter()
    for run in runs:
        if run.result is not None:
            counts[run.result["dataset"]["digests"].get("holdout", "")] += int(run.result.get("decision_number", 1))
    return dict(counts)


def plot_compare(rows: Sequence[dict[str, Any]], key: str, path: Path) -> None:
    """Per value (a row of `compare`): each pair's difference in holdout gain (dots), the mean and its interval."""
    from matplotlib.figure import Figure

    base = str(rows[0]["baseline"])[:24]
    figure = Figure(figsize=(max(4.0, 1.6 * len(rows) + 2.0), 3.6), layout="constrained")
    axes = figure.add_subplot()
    for x, row in enumerate(rows):
        diffs = row["diffs"]
        offsets = [0.3 * (i / max(1, len(diffs) - 1) - 0.5) for i in range(len(diffs))]
        axes.scatter([x - 0.15 + o for o in offsets], diffs, s=10, alpha=0.5, color=f"C{x % 10}")
        axes.errorbar([x + 0.2], [row["difference"]],
                      yerr=[[row["difference"] - row["low"]], [row["high"] - row["difference"]]],
                      fmt="D", color="black", capsize=4)
    axes.axhline(0.0, color="grey", linewidth=0.8)
    axes.set_xticks(range(len(rows)), [str(r["value"])[:24] for r in rows], fontsize=8)
    axes.set_xlim(-0.6, len(rows) - 0.4)
    axes.set_ylabel(f"holdout gain minus {base}", fontsize=8)
    axes.set_title(f"{key} vs {base}: one dot per pair;\ndiamond: mean difference, 95% CI", fontsize=9)
    figure.savefig(path, dpi=110)
