"""Golden record of SkillCraft-sim's behaviour, for refactoring it without changing a number.

    python tests/golden_skillcraft.py record /tmp/golden/before            # scores, replies, tools
    python tests/golden_skillcraft.py record /tmp/golden/before --slow     # + default runs, calibration
    python tests/golden_skillcraft.py compare /tmp/golden/before /tmp/golden/after

Recorded per family: every case of every split scored (score, output, feedback, trace,
objectives) for a grid of artifacts — the seed skill, the reference skill, a non-skill artifact
and the skills produced by chains of offline reflections (feedback reflector at two skill
budgets, tuned reflector) — under several seeds; the same under non-default evaluator settings;
the evaluators' fingerprints and skill profiles; the behaviour tables and tuned vocabularies;
the reflectors' replies; one-line errors for malformed cases and settings; the real-agent
(dspy) tool functions, their descriptions and their replies. With --slow also the default runs
`python -m gepa_lab experiment=<family> tracking=none` (random seeds 1-3, and the tuned
reflector at seed 1) and `experiments/skillcraft_calibration.py --quick`. Records go where you
say (never into the checkout); `compare` prints the first differences and exits 1 on any.
"""

from __future__ import annotations

import argparse
import dataclasses
import gzip
import hashlib
import inspect
import json
import os
import random
import re
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from evaluators.skillcraft import FeedbackReflector, SkillCraftEvaluator, TunedReflector, family_names, get_family  # noqa: E402
from evaluators.skillcraft.rng import Draws  # noqa: E402
from gepa_lab.core.artifacts import artifact_from_dict  # noqa: E402
from gepa_lab.core.contracts import Case  # noqa: E402
from gepa_lab.core.errors import ReflectionRejected  # noqa: E402
from gepa_lab.search.reflection import apply_reply, build_records  # noqa: E402

SPLITS = ("feedback", "validation", "holdout")
SEEDS = (0, 5, 2**63 - 1)
COMPONENTS = ("steps", "pitfalls", "when_to_use", "description")
CHAIN_STEPS = 8
REFLECTORS = {
    "feedback": lambda seed, family: FeedbackReflector(seed=seed),
    "feedback-tight": lambda seed, family: FeedbackReflector(seed=seed, max_skill_chars=400),
    "tuned": lambda seed, family: TunedReflector(seed=seed, family=family),
}
# Tool calls for the real-agent toolsets: (tool name, kwargs), sent twice each (seeded faults).
TOOL_CALLS: dict[str, list[tuple[str, dict[str, Any]]]] = {
    "recipe": [("search_recipes", {"by": "category", "value": "Dessert", "page": 1}),
               ("search_recipes", {"by": "category", "value": "Dessert", "page": 5}),
               ("search_recipes", {"by": "cuisine", "value": "thai", "page": 1}),
               ("search_recipes", {"by": "ingredient", "value": "salt", "page": 2}),
               ("search_recipes", {"by": "category", "value": "Nope", "page": 1}),
               ("get_recipe", {"id": "52002"}), ("get_recipe", {"id": "1"})],
    "weather": [("geocode", {"name": "Zürich"}), ("geocode", {"name": "zurich"}), ("geocode", {"name": "Springfield"}),
                ("get_forecast", {"latitude": 42.36, "longitude": -71.06, "start_date": "2024-07-02",
                                  "end_date": "2024-07-14"}),
                ("get_forecast", {"latitude": 47.37, "longitude": 8.54, "start_date": "2024-07-09",
                                  "end_date": "2024-07-10"}),
                ("get_forecast", {"latitude": 0.0, "longitude": 0.0, "start_date": "2024-07-02",
                                  "end_date": "2024-07-03"}),
                ("get_forecast", {"latitude": 42.36, "longitude": -71.06, "start_date": "2024-06-30",
                                  "end_date": "2024-07-03"})],
    "worldbank": [("get_countries", {"query": "india", "region": ""}), ("get_countries", {"query": "", "region": "SAS"}),
                  ("get_countries", {"query": "", "region": ""}),
                  ("get_indicator", {"country": "IND", "indicator": "SP.POP.TOTL", "date": "2000:2010", "page": 1}),
                  ("get_indicator", {"country": "in", "indicator": "SP.POP.TOTL", "date": "", "page": 3}),
                  ("get_indicator", {"country": "all", "indicator": "NY.GDP.MKTP.CD", "date": "2015", "page": 2}),
                  ("get_indicator", {"country": "XXX", "indicator": "SP.POP.TOTL", "date": "", "page": 1}),
                  ("get_indicator", {"country": "IND", "indicator": "NOPE", "date": "", "page": 1}),
                  ("get_indicator", {"country": "IND", "indicator": "SP.POP.TOTL", "date": "1900", "page": 1})],
    "catfacts": [("get_facts", {"page": 1}), ("get_facts", {"page": 3}), ("get_facts", {"page": 99}),
                 ("get_fact", {"id": "cf1000"}), ("get_fact", {"id": "nope"}),
                 ("get_random_fact", {"max_length": 100}), ("get_random_fact", {"max_length": 0}),
                 ("get_random_fact", {"max_length": 5})],
    "pokemon": [("get_pokemon", {"name": "Venusaur"}), ("get_pokemon", {"name": "wormadam"}),
                ("get_species", {"name": "wormadam"}), ("get_species", {"name": "nope"}),
                ("get_evolution_chain", {"id": 1}), ("get_evolution_chain", {"id": 999}),
                ("get_type", {"name": "fire"}), ("get_type", {"name": "nope"})],
}


def canon(value: Any) -> Any:
    """JSON-able, order-stable form (sets sorted, dataclasses and patterns unfolded)."""
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {f.name: canon(getattr(value, f.name)) for f in dataclasses.fields(value)}
    if isinstance(value, dict):
        return {str(k): canon(v) for k, v in value.items()}
    if isinstance(value, (set, frozenset)):
        return sorted(canon(v) for v in value)
    if isinstance(value, (list, tuple)):
        return [canon(v) for v in value]
    if isinstance(value, re.Pattern):
        return {"pattern": value.pattern, "flags": value.flags}
    if callable(value):
        return f"<callable {getattr(value, '__name__', type(value).__name__)}>"
    return value


def load_cases(family: str) -> list[Case]:
    out = []
    for split in SPLITS:
        for line in (ROOT / "datasets" / "skillcraft" / family / f"{split}.jsonl").read_text("utf-8").splitlines():
            out.append(Case.from_dict(json.loads(line)))
    return out


def seed_skill(family: str) -> Any:
    return artifact_from_dict(json.loads((ROOT / "datasets" / "skillcraft" / family / "seed_skill.json").read_text()))


def error_of(fn: Any) -> str:
    try:
        fn()
    except Exception as exc:  # the golden record keeps whatever was raised
        return f"{type(exc).__name__}: {exc}"
    return "no error"


def chains(family: str, ev: SkillCraftEvaluator, cases: list[Case]) -> tuple[list[Any], list[dict[str, Any]]]:
    """Skills made by chains of reflections, and every reply on the way."""
    arts, replies = [], []
    for kind, make in REFLECTORS.items():
        for rseed in (0, 3):
            reflector = make(rseed, family)
            art = seed_skill(family)
            for k in range(CHAIN_STEPS):
                component = COMPONENTS[k % len(COMPONENTS)]
                batch = random.Random(f"{family}/{kind}/{rseed}/{k}").sample(cases, 3)
                records = build_records(batch, ev.evaluate(art, batch, 7 * k + rseed))
                reply = reflector.reflect(art, component, records)
                replies.append({"reflector": kind, "seed": rseed, "step": k, "component": component,
                                "reply": canon(reply)})
                try:
                    art, _ = apply_reply(art, component, reply)
                except ReflectionRejected as exc:
                    replies[-1]["rejected"] = str(exc)
                arts.append(art)
            # A non-skill block of text goes through the feedback reflector's block path.
            block = {"name": "prompt", "instructions": "Answer the task.\nUse the tools."}
            records = build_records(cases[-3:], ev.evaluate(seed_skill(family), cases[-3:], rseed))
            replies.append({"reflector": kind, "seed": rseed, "component": "instructions",
                            "reply": canon(reflector.reflect(block, "instructions", records))})
    return arts, replies


def unique(arts: list[Any]) -> list[Any]:
    seen, out = set(), []
    for art in arts:
        key = json.dumps(art if isinstance(art, dict) else art.to_dict(), sort_keys=True)
        if key not in seen:
            seen.add(key)
            out.append(art)
    return out


def profile_of(ev: SkillCraftEvaluator, art: Any) -> Any:
    return canon(ev.profile(art))


def record_family(family: str, out: dict[str, Any], evals: Any) -> None:
    spec = get_family(family)
    ev = SkillCraftEvaluator(family=family)
    cases = load_cases(family)
    out["fingerprint"][family] = ev.fingerprint()
    out["tables"][family] = {"behaviours": canon(spec.behaviours), "topic": canon(spec.topic),
                             "cap_nouns": canon(spec.cap_nouns), "seed_skill": spec.seed_skill,
                             "reference_skill": spec.reference_skill,
                             "tuned": canon(TunedReflector(family=family).vocab)}
    children, replies = chains(family, ev, cases)
    out["replies"][family] = replies
    prompt = {"kind": "prompt", "name": "p", "text": "Follow next_page to the end.\nRetry rate_limited calls."}
    arts = unique([seed_skill(family), artifact_from_dict(dict(spec.reference_skill)), *children]) + [prompt]
    out["profiles"][family] = [profile_of(ev, a) for a in arts]
    for i, art in enumerate(arts):
        for seed in SEEDS:
            for r in ev.evaluate(art, cases, seed):
                evals.write(json.dumps({"family": family, "art": i, "seed": seed, **r.to_dict()}, sort_keys=True) + "\n")
    variants = {"budget": {"token_budget": 50_000, "usd_per_1k_tokens": 0.01},
                "agent": {"agent_config": {"max_tool_calls": 12, "turn_latency_ms": 100.0, "system_tokens": 900}}}
    for name, kwargs in variants.items():
        vev = SkillCraftEvaluator(family=family, **kwargs)
        out["fingerprint"][f"{family}/{name}"] = vev.fingerprint()
        for i, art in enumerate(arts[:2]):
            for r in vev.evaluate(art, cases, 1):
                evals.write(json.dumps({"family": family, "variant": name, "art": i, **r.to_dict()}, sort_keys=True)
                            + "\n")
    out["errors"][family] = errors(family, ev, cases)
    out["tools"][family] = tools(family, ev, cases)


def errors(family: str, ev: SkillCraftEvaluator, cases: list[Case]) -> list[str]:
    case = cases[0]
    art = seed_skill(family)
    broken = [
        {**case.metadata, "scale": "x9"}, {**case.metadata, "task": "not json"}, {**case.metadata, "task": "[1, 2]"},
        {k: v for k, v in case.metadata.items() if k != "task"}, {**case.metadata, "family": "nope"},
        {**case.metadata, "family": "weather" if family != "weather" else "recipe"},
        {**case.metadata, "task": json.dumps({})},
    ]
    found = [error_of(lambda m=m: ev.evaluate(art, [dataclasses.replace(case, metadata=m)], 1)) for m in broken]
    found.append(error_of(lambda: ev.evaluate(art, [dataclasses.replace(case, expected="not json")], 1)))
    found.append(error_of(lambda: SkillCraftEvaluator(family="nope")))
    found.append(error_of(lambda: SkillCraftEvaluator(family=family, token_budget=0)))
    found.append(error_of(lambda: SkillCraftEvaluator(family=family, usd_per_1k_tokens=-1)))
    found.append(error_of(lambda: SkillCraftEvaluator(family=family, agent_config={"nope": 1})))
    found.append(error_of(lambda: TunedReflector(family="nope")))
    found.append(error_of(lambda: FeedbackReflector(max_skill_chars=10)))
    return found


def tools(family: str, ev: SkillCraftEvaluator, cases: list[Case]) -> dict[str, Any]:
    """The real agent's tool functions: what dspy reads from them, and their replies."""
    import dspy

    from evaluators.skillcraft_dspy.toolsets import build_toolset

    out: dict[str, Any] = {}
    hard = next(c for c in cases if c.metadata["scale"] == "h1")
    for case in (cases[0], hard):
        task = ev.task(case)
        toolset = build_toolset(family, ev.world, task, Draws(3, case.id))
        funcs = {fn.__name__: fn for fn in toolset.functions}
        described = []
        for fn in toolset.functions:
            tool = dspy.Tool(fn)
            described.append({"name": tool.name, "desc": tool.desc, "args": canon(tool.args),
                              "signature": str(inspect.signature(fn))})
        replies = []
        for name, kwargs in TOOL_CALLS[family] * 2:
            replies.append(canon(funcs[name](**kwargs)))
        replies.append(canon(funcs["write_file"](path="x.json", content="{}")))
        replies.append(canon(funcs["claim_done"]()))
        out[case.id] = {"tools": described, "replies": replies, "calls": canon(toolset.calls),
                        "writes": toolset.writes, "claimed": toolset.claimed, "context": toolset.context_tokens,
                        "written": toolset.written("x.json")}
    return out


def run_default(family: str, seed: int, reflector: str, tmp: Path) -> dict[str, Any]:
    run_dir = tmp / f"run-{family}-{seed}-{reflector}"
    env = {**os.environ, "LITELLM_LOCAL_MODEL_COST_MAP": "True", "MLFLOW_DISABLE_TELEMETRY": "true"}
    done = subprocess.run([sys.executable, "-m", "gepa_lab", f"experiment={family}", "tracking=none",
                           f"search.random_seed={seed}", f"reflector={reflector}", f"hydra.run.dir={run_dir}"],
                          cwd=tmp, env=env, capture_output=True, text=True)
    if done.returncode:
        return {"exit": done.returncode, "stderr": done.stderr[-2000:]}
    result = json.loads((run_dir / "result.json").read_text())
    keep = ("best", "best_id", "seed_id", "baseline_validation", "candidate_validation", "baseline_holdout",
            "candidate_holdout", "candidate_count", "metric_calls", "stop_reason", "promotion_eligible",
            "promotion_reason", "promotion_rules", "holdout_cases", "cost_usd", "proposals", "pool",
            "holdout_interval", "holdout_delta", "validation_case_ids")
    summary = [line for line in done.stdout.splitlines() if not line.strip().startswith("record")]
    return {"result": {k: result.get(k) for k in keep}, "summary": summary}  # the pool's ids are in `pool`


def calibration(tmp: Path) -> list[str]:
    out = tmp / "calibration.md"
    subprocess.run([sys.executable, str(ROOT / "experiments" / "skillcraft_calibration.py"), "--quick",
                    "--out", str(out)], cwd=tmp, check=True, capture_output=True, text=True)
    # Timing, date and machine lines vary between runs; every other line must match.
    return stable_lines(out.read_text().splitlines())


def stable_lines(lines: list[str]) -> list[str]:
    """The report without what varies between runs: timing, date, machine, a run's seconds."""
    volatile = re.compile(r"µs per case|generated|machine|python |Python |date|seconds|wall", re.IGNORECASE)
    run_row = re.compile(r"^\| \w+ \| (?:feedback|tuned) \| \d+ \|.*\| [\d.]+ \|$")
    return [line.rsplit("|", 2)[0] if run_row.match(line) else line for line in lines if not volatile.search(line)]


def record(out_dir: Path, slow: bool) -> None:
    out_dir.mkdir(parents=True, exist_ok=True)
    data: dict[str, Any] = {k: {} for k in ("fingerprint", "tables", "replies", "profiles", "errors", "tools")}
    data["families"] = list(family_names())
    with gzip.open(out_dir / "evaluations.jsonl.gz", "wt", encoding="utf-8") as evals:
        for family in family_names():
            record_family(family, data, evals)
            print(f"{family}: recorded", file=sys.stderr)
    data["datasets"] = {str(p.relative_to(ROOT)): hashlib.sha256(p.read_bytes()).hexdigest()
                        for p in sorted((ROOT / "datasets" / "skillcraft").rglob("*")) if p.is_file()}
    (out_dir / "golden.json").write_text(json.dumps(data, sort_keys=True, indent=1, ensure_ascii=False))
    if slow:
        with tempfile.TemporaryDirectory() as tmp:
            runs = {f"{f}/{s}/{r}": run_default(f, s, r, Path(tmp)) for f in family_names()
                    for s, r in ((1, "feedback"), (2, "feedback"), (3, "feedback"), (1, "tuned"))}
            (out_dir / "runs.json").write_text(json.dumps(runs, sort_keys=True, indent=1, ensure_ascii=False))
            (out_dir / "calibration.json").write_text(json.dumps(calibration(Path(tmp)), indent=1, ensure_ascii=False))


def _diff(a: Any, b: Any, path: str, found: list[str], limit: int = 20) -> None:
    if len(found) >= limit or a == b:
        return
    if isinstance(a, dict) and isinstance(b, dict):
        for k in sorted(set(a) | set(b)):
            if k not in a or k not in b:
                found.append(f"{path}/{k}: only in {'after' if k in b else 'before'}")
            else:
                _diff(a[k], b[k], f"{path}/{k}", found, limit)
    elif isinstance(a, list) and isinstance(b, list) and len(a) == len(b):
        for i, (x, y) in enumerate(zip(a, b, strict=True)):
            _diff(x, y, f"{path}[{i}]", found, limit)
    elif not (isinstance(a, str) and isinstance(b, str) and a.startswith("<callable") and b.startswith("<callable")):
        # (a function's name is not behaviour: only that a callable stands there is compared)
        found.append(f"{path}: {json.dumps(a, ensure_ascii=False)[:300]} != {json.dumps(b, ensure_ascii=False)[:300]}")


def compare(before: Path, after: Path) -> int:
    found: list[str] = []
    for name in ("golden.json", "runs.json", "calibration.json"):
        if (before / name).exists() and (after / name).exists():
            a, b = json.loads((before / name).read_text()), json.loads((after / name).read_text())
            if name == "calibration.json":
                a, b = stable_lines(a), stable_lines(b)
            _diff(a, b, name, found)
            print(f"{name}: compared")
    with gzip.open(before / "evaluations.jsonl.gz", "rt") as a, gzip.open(after / "evaluations.jsonl.gz", "rt") as b:
        n = 0
        for n, (x, y) in enumerate(zip(a, b, strict=True), start=1):
            if x != y:
                _diff(json.loads(x), json.loads(y), f"evaluations[{n}]", found)
        print(f"evaluations: {n} compared")
    for line in found:
        print(line)
    print("IDENTICAL" if not found else f"{len(found)} difference(s) shown")
    return 1 if found else 0


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="cmd", required=True)
    rec = sub.add_parser("record")
    rec.add_argument("out", type=Path)
    rec.add_argument("--slow", action="store_true", help="also the default runs and the quick calibration")
    cmp_ = sub.add_parser("compare")
    cmp_.add_argument("before", type=Path)
    cmp_.add_argument("after", type=Path)
    args = ap.parse_args(argv)
    if args.cmd == "record":
        record(args.out, args.slow)
        return 0
    return compare(args.before, args.after)


if __name__ == "__main__":
    raise SystemExit(main())
