"""How often each promotion preset promotes the default experiment's winner, and whether the
promoted winners are really better: each run's seed and winner re-scored on Holdout with 20 fresh
seeds (seeds the run never saw).

usage: python experiments/promotion_presets.py [--seeds 1-10] [--fresh 20] [--experiment recipe] [--quick]
Writes experiments/reports/promotion_presets.md. Runs are composed exactly as
`python -m gepa_lab experiment=<name> promotion=<preset> search.random_seed=<n>` would be
(no MLflow, no run directory). SkillCraft-sim numbers calibrate the harness, not an LM.
"""

from __future__ import annotations

import argparse
import math
import os
import platform
import statistics
import sys
import time
from datetime import UTC, datetime
from pathlib import Path

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
os.environ.setdefault("MLFLOW_DISABLE_TELEMETRY", "true")
ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from hydra import compose, initialize_config_dir  # noqa: E402

from gepa_lab import optimize  # noqa: E402
from gepa_lab.cli import build, check_config  # noqa: E402
from gepa_lab.config import register_configs  # noqa: E402
from gepa_lab.data import load_dataset  # noqa: E402

PRESETS = ("lenient", "default", "strict")
FRESH_SEED_BASE = 9_000_000  # far from any seed a run draws (63-bit draws; collisions are negligible)


def parse_seeds(text: str) -> list[int]:
    if "-" in text:
        low, high = text.split("-")
        return list(range(int(low), int(high) + 1))
    return [int(x) for x in text.split(",")]


def run_one(experiment: str, preset: str, seed: int, fresh: int, overrides: list[str]) -> dict[str, object]:
    with initialize_config_dir(config_dir=str(ROOT / "conf"), version_base="1.3"):
        cfg = compose("config", overrides=[f"experiment={experiment}", f"promotion={preset}",
                                           f"search.random_seed={seed}", "tracking=none", "progress=off", *overrides])
    conf = check_config(cfg)
    evaluator, reflector = build("evaluator", cfg.evaluator), build("reflector", cfg.reflector)
    dataset, artifact = load_dataset(conf.dataset)
    started = time.perf_counter()
    result = optimize(artifact, dataset, evaluator, reflector, conf.search, evaluation=conf.evaluation,
                      reflection=conf.reflection, promotion=conf.promotion, name=experiment)
    wall = time.perf_counter() - started
    holdout = list(dataset.holdout)
    deltas = []
    for k in range(fresh):  # paired: seed and winner on the same fresh seed
        base = evaluator.evaluate(artifact, holdout, FRESH_SEED_BASE + k)
        cand = base if result.best_id == result.seed_id else evaluator.evaluate(result.best, holdout,
                                                                                 FRESH_SEED_BASE + k)
        deltas.append(math.fsum(c.score - b.score for b, c in zip(base, cand, strict=True)) / len(holdout))
    return {"seed": seed, "preset": preset, "eligible": result.promotion_eligible, "reason": result.promotion_reason,
            "delta": result.holdout_delta, "interval": result.holdout_interval, "fresh_delta": statistics.mean(deltas),
            "calls": result.metric_calls, "stop": result.stop_reason, "wall": wall}


def report(rows: list[dict[str, object]], args: argparse.Namespace) -> str:
    lines = [
        "# Promotion presets on the default experiment",
        "",
        f"- date: {datetime.now(UTC):%Y-%m-%d %H:%M} UTC; machine: {platform.platform()}, {os.cpu_count()} CPUs, "
        f"Python {platform.python_version()}",
        f"- experiment `{args.experiment}`, random seeds {args.seeds}, every run at its default budget "
        f"(`search.max_metric_calls`, no iteration cap); reproduce: "
        f"`python experiments/promotion_presets.py --seeds {args.seeds} --fresh {args.fresh}`",
        f"- fresh re-evaluation: seed and winner re-scored on the Holdout split with {args.fresh} seeds the run "
        "never saw (paired); a promoted winner is *worse* when its mean fresh delta is below 0.",
        "- SkillCraft-sim is a simulation: these numbers calibrate the harness, not an LM.",
        "",
        "| preset | runs | promoted | promoted but worse on fresh seeds | mean holdout delta | mean fresh delta | "
        "median wall s |",
        "|---|---|---|---|---|---|---|",
    ]
    for preset in PRESETS:
        mine = [r for r in rows if r["preset"] == preset]
        if not mine:
            continue
        promoted = [r for r in mine if r["eligible"]]
        worse = [r for r in promoted if float(r["fresh_delta"]) < 0]  # type: ignore[arg-type]
        lines.append(
            f"| {preset} | {len(mine)} | {len(promoted)} | {len(worse)} | "
            f"{statistics.mean(float(r['delta']) for r in mine):+.4f} | "  # type: ignore[arg-type]
            f"{statistics.mean(float(r['fresh_delta']) for r in mine):+.4f} | "  # type: ignore[arg-type]
            f"{statistics.median(float(r['wall']) for r in mine):.2f} |")  # type: ignore[arg-type]
    lines += ["", "Per run:", "", "| preset | seed | eligible | holdout delta [interval] | fresh delta | calls | "
              "stop | reason |", "|---|---|---|---|---|---|---|---|"]
    for r in rows:
        interval = r["interval"]
        shown = f"{float(r['delta']):+.4f}" + (  # type: ignore[arg-type]
            f" [{interval[0]:+.4f}, {interval[1]:+.4f}]" if interval else "")  # type: ignore[index]
        lines.append(f"| {r['preset']} | {r['seed']} | {r['eligible']} | {shown} | {float(r['fresh_delta']):+.4f} | "  # type: ignore[arg-type]
                     f"{r['calls']} | {r['stop']} | {r['reason']} |")
    return "\n".join(lines) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--seeds", default="1-10")
    parser.add_argument("--fresh", type=int, default=20)
    parser.add_argument("--experiment", default="recipe")
    parser.add_argument("--report", default=str(ROOT / "experiments" / "reports" / "promotion_presets.md"))
    parser.add_argument("--quick", action="store_true", help="2 seeds, 3 fresh seeds, 300 metric calls (for tests)")
    args = parser.parse_args()
    overrides: list[str] = []
    if args.quick:
        args.seeds, args.fresh, overrides = "1-2", 3, ["search.max_metric_calls=300"]
    register_configs()
    rows = [run_one(args.experiment, preset, seed, args.fresh, overrides)
            for seed in parse_seeds(args.seeds) for preset in PRESETS]
    text = report(rows, args)
    Path(args.report).parent.mkdir(parents=True, exist_ok=True)
    Path(args.report).write_text(text, encoding="utf-8")
    print(text)


if __name__ == "__main__":
    main()
