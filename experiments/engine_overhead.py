"""Where a run's time goes: simulator vs harness (run record, cache, checkpoints, workers).

usage: python experiments/engine_overhead.py [--repeats 5] [--iterations 40]
Writes experiments/reports/engine_overhead.md. Budget is raised so every iteration runs.
"""

from __future__ import annotations

import argparse
import os
import platform
import statistics
import sys
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from evaluators.skillcraft import HeuristicReflector, SkillCraftEvaluator  # noqa: E402
from gepa_lab import (  # noqa: E402
    EvaluationSettings,  # noqa: E402
    SearchConfig,
    optimize,
)
from gepa_lab.data import load_artifact, load_dataset_dir  # noqa: E402


class TimedEvaluator(SkillCraftEvaluator):
    """Counts the time spent inside the simulator."""

    seconds = 0.0

    def evaluate(self, artifact, cases, seed):
        started = time.perf_counter()
        try:
            return super().evaluate(artifact, cases, seed)
        finally:
            self.seconds += time.perf_counter() - started


def measure(label: str, repeats: int, iterations: int, record: bool, workers: int = 1) -> dict:
    data = ROOT / "datasets" / "skillcraft" / "recipe"
    dataset, seed = load_dataset_dir(data), load_artifact(data / "seed_skill.json")
    walls, sims, calls = [], [], []
    for r in range(repeats):
        ev = TimedEvaluator()
        with tempfile.TemporaryDirectory() as tmp:
            started = time.perf_counter()
            result = optimize(seed, dataset, ev, HeuristicReflector(seed=r + 1),
                              SearchConfig(max_iterations=iterations, max_metric_calls=100_000, random_seed=r + 1),
                              run_dir=Path(tmp) / "run" if record else None,
                              evaluation=EvaluationSettings(workers=workers))
            walls.append(time.perf_counter() - started)
        sims.append(ev.seconds)
        calls.append(result.metric_calls)
    wall, sim, n = statistics.median(walls), statistics.median(sims), statistics.median(calls)
    return {"label": label, "wall": wall, "sim": sim, "calls": n, "harness_ms_per_call": (wall - sim) / n * 1e3}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--iterations", type=int, default=40)
    parser.add_argument("--out", default=str(ROOT / "experiments" / "reports" / "engine_overhead.md"))
    args = parser.parse_args()
    rows = [
        measure("in memory (no run_dir)", args.repeats, args.iterations, record=False),
        measure("run record + cache + checkpoints", args.repeats, args.iterations, record=True),
        measure("same, evaluation.workers=4 (threads)", args.repeats, args.iterations, record=True, workers=4),
    ]
    lines = [
        "# Engine overhead on SkillCraft-sim",
        "",
        f"- date: {datetime.now(UTC):%Y-%m-%d %H:%M} UTC; machine: {platform.platform()}, {os.cpu_count()} CPUs, "
        f"Python {platform.python_version()}",
        f"- {args.iterations} iterations of the recipe experiment per run, median of {args.repeats} random seeds; "
        f"reproduce: `python experiments/engine_overhead.py --repeats {args.repeats} --iterations {args.iterations}`",
        "- simulator time is measured inside `evaluate`; harness time is the rest (selection, reflection, records,",
        "  cache, checkpoints, thread hand-off).",
        "",
        "| configuration | metric calls | wall s | simulator s | harness ms per metric call |",
        "|---|---|---|---|---|",
    ]
    for row in rows:
        lines.append(f"| {row['label']} | {row['calls']:.0f} | {row['wall']:.2f} | {row['sim']:.2f} | "
                     f"{row['harness_ms_per_call']:.2f} |")
    lines.append("")
    Path(args.out).write_text("\n".join(lines))
    print("\n".join(lines))


if __name__ == "__main__":
    main()
