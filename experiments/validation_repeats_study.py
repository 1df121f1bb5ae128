"""Does Pareto's deficit survive validation repeats? (docs/research.md, "Validation repeats").

Two sweeps of `study=policies` restricted to `search/parent=pareto,current_best` (SkillCraft-sim
recipe and weather, random seeds 1-20, merge off / on): one with `search.validation_repeats=3`, one
with 1 (the order the runs were taken in; the simulator is deterministic, so it changes timings
only). Then `report --compare search/parent` on each, and `--compare search.validation_repeats`
(per parent rule, per family) on a directory linking both sweeps' jobs. Writes README.md (commit,
machine, load, durations) beside the reports.

    python experiments/validation_repeats_study.py [--sweeps multirun/study_validation_repeats]
        [--out experiments/reports/study_validation_repeats] [--jobs 2]

A sweep directory that already holds finished jobs skips them (a killed study is completed by
running this again).
"""

from __future__ import annotations

import argparse
import os
import platform
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _load() -> str:
    return " ".join(Path("/proc/loadavg").read_text().split()[:3]) if Path("/proc/loadavg").exists() else "?"


def _sweep(repeats: int, sweep_dir: Path, jobs: int) -> str:
    start, load = time.monotonic(), _load()
    subprocess.run([sys.executable, "-m", "gepa_lab", "-m", "study=policies", "search/parent=pareto,current_best",
                    f"search.validation_repeats={repeats}", "progress=off", "hydra/launcher=parallel",
                    f"hydra.launcher.n_jobs={jobs}", f"hydra.sweep.dir={sweep_dir}"], cwd=ROOT, check=True)
    return f"r={repeats}: {time.monotonic() - start:.0f} s, load (1/5/15 min) {load} at start, {_load()} at end"


def _linked(sweeps: Path) -> Path:
    """Both sweeps' jobs in one directory (r = 3 renumbered from 1000), for --compare validation_repeats."""
    both = sweeps / "both"
    both.mkdir(parents=True, exist_ok=True)
    for repeats, offset in ((1, 0), (3, 1000)):
        for job in (sweeps / f"r{repeats}").iterdir():
            head, _, rest = job.name.partition("_")
            if head.isdigit() and not (link := both / f"{int(head) + offset}_{rest}").exists():
                link.symlink_to(job.resolve())
    return both


def _report(sweep: Path, out: Path, *args: str) -> None:
    subprocess.run([sys.executable, "-m", "gepa_lab.report", "--sweep", str(sweep), "--out", str(out), *args],
                   cwd=ROOT, check=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--sweeps", type=Path, default=ROOT / "multirun" / "study_validation_repeats")
    parser.add_argument("--out", type=Path, default=ROOT / "experiments" / "reports" / "study_validation_repeats")
    parser.add_argument("--jobs", type=int, default=2)
    args = parser.parse_args()
    sweeps = args.sweeps.resolve()
    timings = [_sweep(r, sweeps / f"r{r}", args.jobs) for r in (3, 1)]
    for repeats in (1, 3):
        _report(sweeps / f"r{repeats}", args.out / f"r{repeats}", "--compare", "search/parent")
    both = _linked(sweeps)
    _report(both, args.out / "r3_vs_r1", "--compare", "search.validation_repeats", "--baseline", "1",
            "--by", "search/parent")
    _report(both, args.out / "r3_vs_r1_by_family", "--compare", "search.validation_repeats", "--baseline", "1")
    commit = subprocess.run(["git", "rev-parse", "HEAD"], cwd=ROOT, capture_output=True, text=True).stdout.strip()
    (args.out / "README.md").write_text(
        "# Validation repeats: Pareto vs current_best at r = 1 and r = 3 (SkillCraft-sim)\n\n"
        f"`{' '.join(sys.argv)}` at commit {commit}; {platform.machine()}, {os.cpu_count()} CPUs, Python "
        f"{platform.python_version()}; {args.jobs} joblib workers per sweep\n\n" + "".join(f"- {t}\n" for t in timings)
        + "\nr1/, r3/: `report --compare search/parent`; r3_vs_r1/: `--compare search.validation_repeats --by "
        "search/parent`; r3_vs_r1_by_family/: per family. SkillCraft-sim numbers: they calibrate the harness, "
        "not an LM.\n", encoding="utf-8")


if __name__ == "__main__":
    main()
