"""The real-model study (docs/real_models.md, experiments/reports/real_lm.md): GEPA on
SmolLM2-135M-Instruct served by llama.cpp on this machine, side by side with SmolLM2's stand-in,
SkillCraft-sim.

Parts (each resumable: a finished run's record is reused, so an interrupted study continues):

  search      per prompt task, search seeds 1..n, parent selection pareto and current_best (the
              order alternates by seed), reflector=prompt_rules: seed vs winner on Holdout, metric
              calls, tokens, wall time;
  lm          reflector=lm (the 135M model reflecting on itself) on the sentiment task;
  repro       every final pool of the `search` part re-scored on Validation under a fresh provider
              seed (temperature 0) and twice at temperature 0.7: do candidate means and the
              per-instance part that Pareto selection acts on reproduce?
  sim         the same search and reproducibility measures on SkillCraft-sim (recipe, weather),
              and on its `fixed_episodes` variant;
  throughput  metric calls per second against the server at evaluation workers 1/2/4.

    python experiments/real_lm_study.py --work /tmp/real_lm            # everything (hours on 2 cores)
    python experiments/real_lm_study.py --work /tmp/real_lm --parts sim --seeds 5
    python experiments/real_lm_study.py --work /tmp/real_lm --report   # the report from what is there

Runs go through the command line (`python -m gepa_lab ... lm.server.url=<one shared server>`),
`tracking=none`. Needs the `.[local]` extra.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from gepa_lab import Case, load_dataset_dir  # noqa: E402
from gepa_lab.core.artifacts import artifact_from_dict  # noqa: E402

TASKS = ("sentiment", "topic", "extract")
FAMILIES = ("recipe", "weather")
PARENTS = ("pareto", "current_best")
REPORT = ROOT / "experiments" / "reports" / "real_lm.md"
CSV = ROOT / "experiments" / "reports" / "real_lm_runs.csv"


# -- running -------------------------------------------------------------------------------------
def gepa_run(run_dir: Path, args: list[str], timeout: float = 7200) -> dict[str, Any]:
    """One run through the command line; its result with the wall time (kept beside the record)."""
    wall_file = run_dir.parent / f"{run_dir.name}.wall.json"
    if (run_dir / "result.json").is_file() and wall_file.is_file():
        return {**json.loads((run_dir / "result.json").read_text()), **json.loads(wall_file.read_text())}
    if run_dir.exists():
        subprocess.run(["rm", "-rf", str(run_dir)], check=True)
    env = {**os.environ, "LITELLM_LOCAL_MODEL_COST_MAP": "True", "MLFLOW_DISABLE_TELEMETRY": "true",
           "HF_DATASETS_OFFLINE": "1", "HF_HUB_OFFLINE": "1"}
    start, load = time.monotonic(), os.getloadavg()[0]
    done = subprocess.run([sys.executable, "-m", "gepa_lab", *args, "tracking=none", "progress=off",
                           f"hydra.run.dir={run_dir}"], cwd=run_dir.parent, env=env, capture_output=True, text=True,
                          timeout=timeout)
    if done.returncode != 0:
        raise RuntimeError(f"{' '.join(args)} failed ({done.returncode}): {done.stderr[-2000:]}")
    wall = {"wall_s": time.monotonic() - start, "load_start": load, "load_end": os.getloadavg()[0]}
    wall_file.write_text(json.dumps(wall))
    return {**json.loads((run_dir / "result.json").read_text()), **wall}


def pool_artifacts(run_dir: Path) -> dict[str, Any]:
    """Candidate id -> artifact of the run's pool (the seed and every accepted child)."""
    experiment = json.loads((run_dir / "experiment.json").read_text())
    out = {}
    for line in (run_dir / "events.jsonl").read_text().splitlines():
        event = json.loads(line)
        if event["kind"] == "candidate_accepted":
            out[event["data"]["candidate_id"]] = artifact_from_dict(dict(event["data"]["artifact"]))
    result = json.loads((run_dir / "result.json").read_text())
    seed = artifact_from_dict(dict(experiment["seed"]["artifact"]))
    out[result["seed_id"]] = seed
    return {p["id"]: out[p["id"]] for p in result["pool"]}


def search_part(work: Path, url: str, seeds: range, budget: int) -> list[dict[str, Any]]:
    rows = []
    for task in TASKS:
        finished = {int(d.name.rsplit("-s", 1)[1]) for d in (work / "search" / task).glob("*-s*")
                    if (d / "result.json").is_file()}
        paired = {s for s in finished if all((work / "search" / task / f"{p}-s{s}" / "result.json").is_file()
                                             for p in PARENTS)}
        for seed in sorted(set(seeds) | paired):  # pairs finished by an earlier, longer study are kept
            order = PARENTS if seed % 2 else PARENTS[::-1]  # alternate which policy runs first
            for parent in order:
                run_dir = work / "search" / task / f"{parent}-s{seed}"
                run_dir.parent.mkdir(parents=True, exist_ok=True)
                result = gepa_run(run_dir, [f"experiment=local_{task}", f"search.random_seed={seed}",
                                            f"search/parent={parent}", f"lm.server.url={url}",
                                            f"search.max_metric_calls={budget}"])
                rows.append(row_of("real", task, parent, "prompt_rules", seed, result, run_dir))
                print(f"search {task} {parent} seed {seed}: {rows[-1]['seed_holdout']:.3f} -> "
                      f"{rows[-1]['winner_holdout']:.3f} ({rows[-1]['wall_s']:.0f} s)", flush=True)
    return rows


def lm_part(work: Path, url: str, seeds: range, iterations: int) -> list[dict[str, Any]]:
    rows = []
    for seed in seeds:
        run_dir = work / "lm" / f"sentiment-s{seed}"
        run_dir.parent.mkdir(parents=True, exist_ok=True)
        result = gepa_run(run_dir, ["experiment=local_sentiment", "reflector=lm", f"search.random_seed={seed}",
                                    f"lm.server.url={url}", f"search.max_iterations={iterations}",
                                    "lm.reflection.temperature=0.7", "reflector.samples=2",
                                    "lm.reflection.max_tokens=512"])
        row = row_of("real", "sentiment", "pareto", "lm", seed, result, run_dir)
        kinds = [json.loads(line) for line in (run_dir / "events.jsonl").read_text().splitlines()]
        outcomes = [e["kind"] for e in kinds if e["kind"].startswith(("candidate_", "reflection_rejected"))]
        row.update({k: outcomes.count(k) for k in ("candidate_accepted", "candidate_rejected", "reflection_rejected",
                                                   "candidate_duplicate")})
        row["rejections"] = sorted({e["data"].get("reason", "")[:80] for e in kinds
                                    if e["kind"] == "reflection_rejected"})[:4]
        rows.append(row)
        print(f"lm seed {seed}: {row}", flush=True)
    return rows


def sim_part(work: Path, seeds: range) -> list[dict[str, Any]]:
    rows = []
    for variant, extra in (("sim", []), ("sim-fixed", ["evaluator.fixed_episodes=true"])):
        for family in FAMILIES:
            for seed in seeds:
                for parent in (PARENTS if seed % 2 else PARENTS[::-1]):
                    run_dir = work / variant / family / f"{parent}-s{seed}"
                    run_dir.parent.mkdir(parents=True, exist_ok=True)
                    result = gepa_run(run_dir, [f"experiment={family}", f"search.random_seed={seed}",
                                                f"search/parent={parent}", *extra])
                    rows.append(row_of(variant, family, parent, "feedback", seed, result, run_dir))
    return rows


def row_of(env: str, task: str, parent: str, reflector: str, seed: int, result: dict[str, Any],
           run_dir: Path) -> dict[str, Any]:
    return {"env": env, "task": task, "parent": parent, "reflector": reflector, "seed": seed,
            "seed_validation": result["baseline_validation"]["score"],
            "winner_validation": result["candidate_validation"]["score"],
            "seed_holdout": result["baseline_holdout"]["score"], "winner_holdout": result["candidate_holdout"]["score"],
            "holdout_delta": result["holdout_delta"], "eligible": result["promotion_eligible"],
            "reason": result["promotion_reason"], "metric_calls": result["metric_calls"],
            "proposals": result["proposals"], "pool": len(result["pool"]), "task_tokens": result.get("task_tokens", 0),
            "reflection_tokens": result.get("reflection_tokens", 0), "wall_s": result["wall_s"],
            "load": (result["load_start"] + result["load_end"]) / 2,
            "case_deltas": [c["delta"] for c in result["holdout_cases"]], "run_dir": str(run_dir)}


# -- reproducibility of the per-instance structure -------------------------------------------------
def instance_structure(a: np.ndarray, b: np.ndarray) -> dict[str, float]:
    """Two scorings (candidates x cases) of one pool: do candidate means reproduce, does the
    per-instance part (what is left after candidate and case means) reproduce, and does a
    candidate that alone holds a case's top score hold it again?"""
    def residual(x: np.ndarray) -> np.ndarray:
        return x - x.mean(axis=1, keepdims=True) - x.mean(axis=0, keepdims=True) + x.mean()

    def corr(x: np.ndarray, y: np.ndarray) -> float:
        x, y = x.ravel(), y.ravel()
        return float(np.corrcoef(x, y)[0, 1]) if x.std() > 0 and y.std() > 0 else float("nan")

    sole, kept = 0, 0
    for j in range(a.shape[1]):
        top = np.flatnonzero(a[:, j] == a[:, j].max())
        if len(top) == 1 and a.shape[0] > 1:
            sole += 1
            kept += int(b[top[0], j] == b[:, j].max() and (b[:, j] == b[:, j].max()).sum() == 1)
    return {"candidates": a.shape[0], "means_corr": corr(a.mean(axis=1), b.mean(axis=1)),
            "instance_corr": corr(residual(a), residual(b)), "sole_holders": sole,
            "sole_kept": kept / sole if sole else float("nan"),
            "identical": float(np.mean(a == b))}


def repro_real(work: Path, url: str) -> list[dict[str, Any]]:
    from evaluators.prompt_task import PromptEvaluator
    from gepa_lab.lm import LMSettings

    rows = []
    cache = work / "repro_real.json"
    done = json.loads(cache.read_text()) if cache.is_file() else {}
    for run_dir in sorted(d for d in (work / "search").glob("*/pareto-s*") if (d / "result.json").is_file()):
        key = str(run_dir.relative_to(work))
        if key not in done:
            experiment = json.loads((run_dir / "experiment.json").read_text())
            evaluator_cfg = experiment["config"]["evaluator"]
            pool = pool_artifacts(run_dir)
            result = json.loads((run_dir / "result.json").read_text())
            dataset = load_dataset_dir(ROOT / experiment["config"]["dataset"]["path"])
            original = np.array([p["validation_scores"] for p in result["pool"]])
            scorings = {}
            for name, temperature, seed in (("t0_fresh", 0.0, 101), ("t07_a", 0.7, 202), ("t07_b", 0.7, 303)):
                evaluator = PromptEvaluator(LMSettings(model="openai/smollm2-135m-instruct", api_base=url,
                                                       api_key_env=None, max_tokens=32, temperature=temperature),
                                            metric=evaluator_cfg["metric"], labels=evaluator_cfg["labels"])
                scorings[name] = [[ev.score for ev in evaluator.evaluate(pool[p["id"]], list(dataset.validation), seed)]
                                  for p in result["pool"]]
            done[key] = {"original": original.tolist(), **scorings}
            cache.write_text(json.dumps(done))
        data = {k: np.array(v) for k, v in done[key].items()}
        task = key.split("/")[1]
        rows.append({"env": "real", "task": task, "run": key, "pair": "T=0: recorded vs fresh seed",
                     **instance_structure(data["original"], data["t0_fresh"])})
        rows.append({"env": "real", "task": task, "run": key, "pair": "T=0.7: seed A vs seed B",
                     **instance_structure(data["t07_a"], data["t07_b"])})
    return rows


def repro_sim(work: Path) -> list[dict[str, Any]]:
    from evaluators.skillcraft.evaluator import SkillCraftEvaluator

    rows = []
    for variant in ("sim", "sim-fixed"):
        for run_dir in sorted(d for d in (work / variant).glob("*/pareto-s*") if (d / "result.json").is_file()):
            family = run_dir.parent.name
            result = json.loads((run_dir / "result.json").read_text())
            pool = pool_artifacts(run_dir)
            evaluator = SkillCraftEvaluator(family, fixed_episodes=variant == "sim-fixed")
            dataset = load_dataset_dir(ROOT / "datasets" / "skillcraft" / family)
            cases: list[Case] = list(dataset.validation)
            fresh = [[ev.score for ev in evaluator.evaluate(pool[p["id"]], cases, 777)] for p in result["pool"]]
            original = np.array([p["validation_scores"] for p in result["pool"]])
            rows.append({"env": variant, "task": family, "run": str(run_dir.relative_to(work)),
                         "pair": "recorded vs fresh seed", **instance_structure(original, np.array(fresh))})
    return rows


# -- throughput ------------------------------------------------------------------------------------
def throughput(work: Path, url: str, rounds: int = 3) -> list[dict[str, Any]]:
    """Metric calls per second through the engine's evaluation path at workers 1/2/4 (order
    rotated per round), on the sentiment validation split with a prompt that makes one-word replies."""
    from concurrent.futures import ThreadPoolExecutor

    from evaluators.prompt_task import PromptEvaluator
    from gepa_lab import PromptArtifact
    from gepa_lab.lm import LMSettings

    dataset = load_dataset_dir(ROOT / "datasets" / "prompt" / "sentiment")
    cases = list(dataset.feedback[:40])
    prompt = PromptArtifact("Classify the sentiment of this review.\nAnswer with one word: negative or positive.")
    evaluator = PromptEvaluator(LMSettings(model="openai/smollm2-135m-instruct", api_base=url, api_key_env=None,
                                           max_tokens=32), labels=["negative", "positive"])
    evaluator.evaluate(prompt, cases[:2], 1)  # warm: the first request loads litellm
    rows = []
    for r in range(rounds):
        order = [1, 2, 4][r % 3:] + [1, 2, 4][:r % 3]
        for workers in order:
            start, load = time.monotonic(), os.getloadavg()[0]
            with ThreadPoolExecutor(workers) as pool:
                list(pool.map(evaluator.evaluate, [prompt] * len(cases), [[c] for c in cases], [1000 + r] * len(cases)))
            elapsed = time.monotonic() - start
            rows.append({"round": r, "workers": workers, "calls": len(cases), "seconds": elapsed,
                         "calls_per_s": len(cases) / elapsed, "load": load})
            print(f"throughput round {r} workers {workers}: {len(cases) / elapsed:.2f} calls/s", flush=True)
    return rows


# -- the report ------------------------------------------------------------------------------------
def machine() -> str:
    cpu = next((line.split(":", 1)[1].strip() for line in Path("/proc/cpuinfo").read_text().splitlines()
                if line.startswith("model name")), platform.processor())
    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True,
                            text=True).stdout.strip()
    dirty = subprocess.run(["git", "status", "--porcelain", "--", "gepa_lab", "evaluators"], cwd=ROOT,
                           capture_output=True, text=True).stdout.strip()
    return (f"{os.cpu_count()} x {cpu}, {os.sysconf('SC_PAGE_SIZE') * os.sysconf('SC_PHYS_PAGES') / 2**30:.0f} GiB, "
            f"Python {platform.python_version()}, commit {commit}{' (+ uncommitted changes)' if dirty else ''}")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--work", type=Path, required=True, help="where the runs live (reused when present)")
    parser.add_argument("--parts", default="search,lm,repro,sim,throughput")
    parser.add_argument("--seeds", type=int, default=5)
    parser.add_argument("--budget", type=int, default=600)
    parser.add_argument("--lm-iterations", type=int, default=12)
    parser.add_argument("--report", action="store_true", help="only write the report from the work dir")
    args = parser.parse_args()
    args.work.mkdir(parents=True, exist_ok=True)
    parts = set() if args.report else set(args.parts.split(","))
    seeds = range(1, args.seeds + 1)
    results_file = args.work / "results.json"
    results: dict[str, Any] = json.loads(results_file.read_text()) if results_file.is_file() else {}
    if parts & {"search", "lm", "repro", "throughput"}:
        from gepa_lab.lm import ServerSettings, serving

        with serving(ServerSettings(), args.work) as url:
            assert url is not None
            if "throughput" in parts:  # measured once (delete throughput.json to measure again)
                cached = args.work / "throughput.json"
                if not cached.is_file():
                    cached.write_text(json.dumps(throughput(args.work, url)))
                results["throughput"] = json.loads(cached.read_text())
            if "search" in parts:
                results["search"] = search_part(args.work, url, seeds, args.budget)
            if "lm" in parts:
                results["lm"] = lm_part(args.work, url, seeds, args.lm_iterations)
            if "repro" in parts:
                results["repro_real"] = repro_real(args.work, url)
            results_file.write_text(json.dumps(results))
    if "sim" in parts:
        results["sim"] = sim_part(args.work, seeds)
        results["repro_sim"] = repro_sim(args.work)
    results_file.write_text(json.dumps(results))
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from real_lm_report import write_report

    write_report(results, REPORT, CSV, machine())
    print(f"wrote {REPORT.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
