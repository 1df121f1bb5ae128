"""Run the default recipe experiment for several random seeds and report what the harness decided.

usage: python experiments/recipe_seed_sweep.py [--seeds 1-10] [--reflector feedback|tuned]
                                               [--out experiments/reports/recipe_seed_sweep.md]
Same engine, evaluator and (default) reflector as `python -m gepa_lab experiment=recipe`, without
MLflow: the whole 1,000-call metric budget, no iteration cap.
"""

from __future__ import annotations

import argparse
import os
import platform
import sys
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from evaluators.skillcraft import FeedbackReflector, SkillCraftEvaluator, TunedReflector  # noqa: E402
from gepa_lab import SearchConfig, optimize  # noqa: E402
from gepa_lab.data import load_artifact, load_dataset_dir  # noqa: E402


def parse_seeds(text: str) -> list[int]:
    if "-" in text:
        lo, hi = text.split("-")
        return list(range(int(lo), int(hi) + 1))
    return [int(x) for x in text.split(",")]


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--seeds", default="1-10")
    parser.add_argument("--reflector", choices=("feedback", "tuned"), default="feedback")
    parser.add_argument("--out", default=str(ROOT / "experiments" / "reports" / "recipe_seed_sweep.md"))
    args = parser.parse_args()
    data = ROOT / "datasets" / "skillcraft" / "recipe"
    dataset = load_dataset_dir(data)
    seed = load_artifact(data / "seed_skill.json")
    rows = []
    for random_seed in parse_seeds(args.seeds):
        started = time.perf_counter()
        with tempfile.TemporaryDirectory() as run_dir:
            reflector = (FeedbackReflector(seed=random_seed) if args.reflector == "feedback"
                         else TunedReflector(seed=random_seed, family="recipe"))
            r = optimize(seed, dataset, SkillCraftEvaluator(), reflector,
                         SearchConfig(random_seed=random_seed, max_metric_calls=1000, max_iterations=None),
                         run_dir=run_dir)
        seconds = time.perf_counter() - started
        drops = [c for c in r.holdout_cases if c["critical"] and c["delta"] < 0]
        rows.append((random_seed, r, seconds, min((c["delta"] for c in drops), default=0.0)))
        print(f"seed {random_seed}: {r.promotion_reason} ({seconds:.2f}s)", file=sys.stderr)

    eligible = sum(r.promotion_eligible for _, r, _, _ in rows)
    lines = [
        "# Recipe experiment across random seeds",
        "",
        f"The default `experiment=recipe` (SkillCraft-sim recipe family, `{args.reflector}` reflector, 1,000 metric",
        "calls, no iteration cap) run once per random seed, with the run record written to a temp dir.",
        "",
        f"- date: {datetime.now(UTC):%Y-%m-%d %H:%M} UTC",
        f"- machine: {platform.platform()}; {os.cpu_count()} CPUs; Python {platform.python_version()}",
        f"- reproduce: `python experiments/recipe_seed_sweep.py --seeds {args.seeds} --reflector {args.reflector}`",
        "",
        "| seed | candidates | calls | validation seed → winner | holdout seed → winner | delta | worst critical drop | decision | seconds |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for s, r, sec, worst in rows:
        lines.append(
            f"| {s} | {r.candidate_count} | {r.metric_calls} | {r.baseline_validation.score:.4f} → "
            f"{r.candidate_validation.score:.4f} | {r.baseline_holdout.score:.4f} → {r.candidate_holdout.score:.4f} | "
            f"{r.holdout_delta:+.4f} | {worst:+.6f} | {r.promotion_reason} | {sec:.2f} |"
        )
    improved_val = sum(r.candidate_validation.score > r.baseline_validation.score for _, r, _, _ in rows)
    improved_ho = sum(r.holdout_delta > 0 for _, r, _, _ in rows)
    lines += [
        "",
        f"Validation improved in {improved_val}/{len(rows)} runs, holdout improved in {improved_ho}/{len(rows)}, "
        f"eligible in {eligible}/{len(rows)}. Mean wall time per run "
        f"{sum(sec for _, _, sec, _ in rows) / len(rows):.2f} s (engine + simulator + run record).",
        "",
    ]
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text("\n".join(lines))
    print(args.out)


if __name__ == "__main__":
    main()
