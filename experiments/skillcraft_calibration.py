"""Calibration of SkillCraft-sim for every registered family, and the offline reflectors'
results reported as headroom closed.

    python experiments/skillcraft_calibration.py                 # all families, feedback + tuned, 10 runs
    python experiments/skillcraft_calibration.py --families weather --runs 20
    python experiments/skillcraft_calibration.py --quick       # seconds; a smoke test (report in a temp folder)

Per family: the seed and the hand-written reference skill on every split (mean, pass rate,
tokens, loops), µs per case evaluation, paired vs unpaired variance of a one-edit comparison,
which single reference steps help which cases, and two overfitting probes. Per family and
offline reflector: `--runs` runs of the real engine (`gepa_lab.optimize`, random seeds 1..N,
`max_metric_calls=--budget`, `max_iterations=None`), each winner scored on Holdout with the run's
holdout seed(s) beside the seed and the reference skill, and

    headroom closed = (winner − seed) / (reference − seed)

split into the score's quality part and its efficiency part (0.01·eff on a pass), with pass
rates, loop rates and the paired vs unpaired variance of the winner − seed difference.
These numbers calibrate the harness on a simulator; they are not measurements of an LM.
"""

from __future__ import annotations

import argparse
import datetime as dt
import functools
import logging
import os
import platform
import statistics
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from evaluators.skillcraft import FeedbackReflector, SkillCraftEvaluator, TunedReflector  # noqa: E402
from evaluators.skillcraft.evaluator import DEFAULT_TOKEN_BUDGET, DEFAULT_USD_PER_1K_TOKENS  # noqa: E402
from evaluators.skillcraft.family import family_names, get_family  # noqa: E402
from evaluators.skillcraft.grading import efficiency_part  # noqa: E402
from evaluators.skillcraft.reflectors.vocabulary import load_vocabulary, vocabulary_names  # noqa: E402
from evaluators.skillcraft.rng import derived_rng  # noqa: E402
from gepa_lab import SearchConfig, optimize  # noqa: E402
from gepa_lab.core.artifacts import SkillSpec, artifact_from_dict  # noqa: E402
from gepa_lab.core.contracts import Case, Evaluation  # noqa: E402
from gepa_lab.data import load_artifact, load_dataset_dir  # noqa: E402

SPLITS = ("feedback", "validation", "holdout")
LOOP_REPEATS = 5  # identical tool calls that make a run a loop
REFLECTORS: dict[str, Callable[[int, str], Any]] = {
    "feedback": lambda seed, family: FeedbackReflector(seed=seed),
    "tuned": lambda seed, family: TunedReflector(seed=seed, family=family),
}


@dataclass
class Settings:
    families: list[str]
    reflectors: list[str]
    runs: int
    budget: int
    stat_seeds: int
    pair_seeds: int
    extras: bool  # heterogeneity and overfitting probes


def skill(base: dict[str, Any], **changes: Any) -> SkillSpec:
    data = {k: v for k, v in base.items() if k != "kind"}
    data.update(changes)
    art = artifact_from_dict(data)
    assert isinstance(art, SkillSpec)
    return art


def is_loop(ev: SkillCraftEvaluator, art: Any, case: Case, seed: int) -> bool:
    _, episode = ev.run_episode(art, case, seed)
    counts = Counter((c.tool, c.args) for c in episode.calls)
    return bool(counts) and max(counts.values()) >= LOOP_REPEATS


@dataclass
class Scored:
    """Per-case means over one or more seeds, and the parts of the score."""

    score: float
    quality_part: float
    efficiency_part: float
    passed: float
    loops: float
    tokens: float


def scored(ev: SkillCraftEvaluator, art: Any, cases: list[Case], seeds: list[int]) -> Scored:
    rows: list[Evaluation] = []
    loops = 0
    for s in seeds:
        res = ev.evaluate(art, cases, s)
        rows += res
        loops += sum(is_loop(ev, art, c, s) for c in cases)
    eff = [efficiency_part(r.objectives, ev.token_budget) for r in rows]
    return Scored(
        score=statistics.mean(r.score for r in rows),
        quality_part=statistics.mean(r.score - e for r, e in zip(rows, eff, strict=True)),
        efficiency_part=statistics.mean(eff),
        passed=statistics.mean(r.objectives["passed"] for r in rows),
        loops=loops / len(rows),
        tokens=statistics.mean(r.objectives["agent_tokens"] for r in rows),
    )


def mean_score(ev: SkillCraftEvaluator, art: Any, cases: list[Case], seed: int) -> float:
    return statistics.mean(r.score for r in ev.evaluate(art, cases, seed))


def split_stats(ev: SkillCraftEvaluator, art: Any, cases: list[Case], seeds: range) -> dict[str, float]:
    means, passed, tokens, calls, loaded, loops = [], [], [], [], [], 0
    for s in seeds:
        res = ev.evaluate(art, cases, s)
        means.append(statistics.mean(r.score for r in res))
        for case, r in zip(cases, res, strict=True):
            passed.append(r.objectives["passed"])
            tokens.append(r.objectives["agent_tokens"])
            calls.append(r.objectives["tool_calls"])
            loaded.append(r.objectives["skill_loaded"])
            loops += is_loop(ev, art, case, s)
    return {"mean": statistics.mean(means), "sd": statistics.stdev(means) if len(means) > 1 else 0.0,
            "pass": statistics.mean(passed), "tokens": statistics.mean(tokens), "calls": statistics.mean(calls),
            "loaded": statistics.mean(loaded), "loops": loops / len(passed)}


def loop_tokens(ev: SkillCraftEvaluator, art: Any, cases: list[Case], seeds: range) -> tuple[float, float, float, float]:
    """(share of runs looping, median tokens looping, median tokens otherwise, share of loops without artifact)."""
    looping, plain, nofile = [], [], 0
    for s in seeds:
        for case in cases:
            _, ep = ev.run_episode(art, case, s)
            counts = Counter((c.tool, c.args) for c in ep.calls)
            if counts and max(counts.values()) >= LOOP_REPEATS:
                looping.append(ep.tokens)
                nofile += ep.artifact is None
            else:
                plain.append(ep.tokens)
    n = len(looping) + len(plain)
    if not looping:
        return 0.0, 0.0, statistics.median(plain), 0.0
    return len(looping) / n, statistics.median(looping), statistics.median(plain), nofile / len(looping)


def timing(ev: SkillCraftEvaluator, arts: list[Any], cases: list[Case], seeds: range,
           repeats: int = 3) -> tuple[float, int]:
    """µs per case evaluation: the best of `repeats` passes (other processes only ever add time)."""
    for a in arts:
        ev.evaluate(a, cases, 0)  # warm the profile / task caches, as a run does
    best, n = float("inf"), 0
    for _ in range(repeats):
        start = time.perf_counter()
        n = 0
        for a in arts:
            for s in seeds:
                ev.evaluate(a, cases, s)
                n += len(cases)
        best = min(best, (time.perf_counter() - start) / n * 1e6)
    return best, n


def variance_ratio(ev: SkillCraftEvaluator, parent: Any, child: Any, cases: list[Case],
                   seeds: list[int]) -> dict[str, float]:
    p = {s: mean_score(ev, parent, cases, s) for s in seeds}
    c = {s: mean_score(ev, child, cases, s) for s in seeds}
    paired = [c[s] - p[s] for s in seeds]
    unpaired = [c[s] - p[seeds[(i + 1) % len(seeds)]] for i, s in enumerate(seeds)]
    vp, vu = statistics.variance(paired), statistics.variance(unpaired)
    return {"delta": statistics.mean(paired), "paired": vp, "unpaired": vu, "ratio": vp / vu if vu else float("nan")}


def per_case(ev: SkillCraftEvaluator, art: Any, cases: list[Case], seeds: range) -> dict[str, float]:
    out: dict[str, list[float]] = {c.id: [] for c in cases}
    for s in seeds:
        for r in ev.evaluate(art, cases, s):
            out[r.case_id].append(r.score)
    return {k: statistics.mean(v) for k, v in out.items()}


@dataclass
class Run:
    family: str
    reflector: str
    random_seed: int
    seed: Scored
    winner: Scored
    reference: Scored
    eligible: bool
    pool: int
    proposals: int
    chars: int
    paired_var: float
    unpaired_var: float
    seconds: float

    @property
    def closed(self) -> float:
        room = self.reference.score - self.seed.score
        return (self.winner.score - self.seed.score) / room if room > 0 else float("nan")


@functools.cache
def family_data(family: str) -> tuple[Any, Any]:
    """(dataset, seed artifact) of a family, loaded once."""
    data = REPO / "datasets" / "skillcraft" / family
    return load_dataset_dir(data), load_artifact(data / "seed_skill.json")


def one_run(family: str, reflector: str, random_seed: int, settings: Settings) -> Run:
    spec = get_family(family)
    dataset, seed_art = family_data(family)
    reference = skill(spec.reference_skill)
    ev = SkillCraftEvaluator(family=family)
    started = time.perf_counter()
    result = optimize(seed_art, dataset, ev, REFLECTORS[reflector](random_seed, family),
                      SearchConfig(random_seed=random_seed, max_metric_calls=settings.budget, max_iterations=None))
    seconds = time.perf_counter() - started
    holdout = list(dataset.holdout)
    hseeds = [int(s) for s in result.seeds.get("holdout_seeds", [result.seeds["holdout_seed"]])]
    best = result.best
    # Paired vs unpaired: the winner − seed holdout difference over fresh seeds, same or shifted.
    rng = derived_rng("calibration-pairs", family, reflector, random_seed)
    extra = [rng.randrange(2**63) for _ in range(settings.pair_seeds)]
    w = {s: mean_score(ev, best, holdout, s) for s in extra}
    b = {s: mean_score(ev, seed_art, holdout, s) for s in extra}
    paired = [w[s] - b[s] for s in extra]
    unpaired = [w[s] - b[extra[(i + 1) % len(extra)]] for i, s in enumerate(extra)]
    return Run(
        family=family, reflector=reflector, random_seed=random_seed,
        seed=scored(ev, seed_art, holdout, hseeds), winner=scored(ev, best, holdout, hseeds),
        reference=scored(ev, reference, holdout, hseeds), eligible=result.promotion_eligible,
        pool=result.candidate_count, proposals=result.proposals,
        chars=sum(len(x) for x in (best.description, best.when_to_use, *best.steps, *best.pitfalls))
        if isinstance(best, SkillSpec) else 0,
        paired_var=statistics.variance(paired) if len(paired) > 1 else 0.0,
        unpaired_var=statistics.variance(unpaired) if len(unpaired) > 1 else 0.0,
        seconds=seconds,
    )


def _mean(xs: list[float]) -> float:
    return statistics.mean(xs) if xs else float("nan")


def _sd(xs: list[float]) -> float:
    return statistics.stdev(xs) if len(xs) > 1 else 0.0


def headroom_rows(runs: list[Run]) -> list[str]:
    out = []
    for family in dict.fromkeys(r.family for r in runs):
        for reflector in dict.fromkeys(r.reflector for r in runs):
            rs = [r for r in runs if r.family == family and r.reflector == reflector]
            if not rs:
                continue
            s, w, ref = (_mean([getattr(r, k).score for r in rs]) for k in ("seed", "winner", "reference"))
            closed = (w - s) / (ref - s) if ref > s else float("nan")
            per_run = [r.closed for r in rs]
            q = [_mean([getattr(r, k).quality_part for r in rs]) for k in ("seed", "winner", "reference")]
            e = [_mean([getattr(r, k).efficiency_part for r in rs]) for k in ("seed", "winner", "reference")]
            qc = (q[1] - q[0]) / (q[2] - q[0]) if q[2] > q[0] else float("nan")
            p = [_mean([getattr(r, k).passed for r in rs]) for k in ("seed", "winner", "reference")]
            lo = [_mean([getattr(r, k).loops for r in rs]) for k in ("seed", "winner", "reference")]
            vp, vu = _mean([r.paired_var for r in rs]), _mean([r.unpaired_var for r in rs])
            out.append(
                f"| {family} | {reflector} | {len(rs)} | {s:.3f} / {w:.3f} / {ref:.3f} | **{closed:.0%}** "
                f"({_mean(per_run):.0%} ± {_sd(per_run):.0%}) | {q[0]:.3f} / {q[1]:.3f} / {q[2]:.3f} ({qc:.0%}) | "
                f"{e[0]:.4f} / {e[1]:.4f} / {e[2]:.4f} | {p[0]:.0%} / {p[1]:.0%} / {p[2]:.0%} | "
                f"{lo[0]:.0%} / {lo[1]:.0%} / {lo[2]:.0%} | {vp:.1e} vs {vu:.1e} (×{vu / vp if vp else float('nan'):.0f}) | "
                f"{sum(r.eligible for r in rs)}/{len(rs)} |")
    return out


def criterion_lines(runs: list[Run], reflector: str = "feedback") -> list[str]:
    """Issue 10's done criterion: the family-agnostic reflector closes a measurable share of the
    Holdout headroom — the per-run closed share's mean minus two standard errors is above zero."""
    out, met, families = [], 0, list(dict.fromkeys(r.family for r in runs if r.reflector == reflector))
    for family in families:
        closed = [r.closed for r in runs if r.family == family and r.reflector == reflector]
        mean, se = _mean(closed), _sd(closed) / len(closed) ** 0.5
        ok = mean - 2 * se > 0
        met += ok
        out.append(f"- {family}: {mean:.0%} ± {2 * se:.0%} (mean ± 2 s.e. over {len(closed)} runs; "
                   f"{sum(c > 0 for c in closed)}/{len(closed)} runs above the seed) — "
                   + ("measurable" if ok else "**not measurable**"))
    head = (f"**Done criterion (issue 10)**: `reflector={reflector}` closes a measurable share of the Holdout headroom "
            f"on **{met} of {len(families)}** families (required: 4 of 5).\n")
    return [head, *out]


def family_section(family: str, settings: Settings, w: Callable[[str], None]) -> None:
    spec = get_family(family)
    ev = SkillCraftEvaluator(family=family)
    dataset, _ = family_data(family)
    splits = {s: list(dataset.split(s)) for s in SPLITS}
    every = [c for s in SPLITS for c in splits[s]]
    seed_art, ref = skill(spec.seed_skill), skill(spec.reference_skill)
    seeds = range(settings.stat_seeds)
    w(f"## Family `{family}`\n")
    w("Cases: " + ", ".join(f"{s} {len(splits[s])}" for s in SPLITS)
      + f"; statistics over evaluation seeds 0–{settings.stat_seeds - 1}.\n")
    w("| skill | split | mean score ± sd | pass | tokens | tool calls | loaded | looping |")
    w("|---|---|---|---|---|---|---|---|")
    for label, art in (("seed", seed_art), ("reference", ref)):
        for s in SPLITS:
            st = split_stats(ev, art, splits[s], seeds)
            w(f"| {label} | {s} | {st['mean']:.3f} ± {st['sd']:.3f} | {st['pass']:.0%} | {st['tokens']:,.0f} | "
              f"{st['calls']:.1f} | {st['loaded']:.0%} | {st['loops']:.0%} |")
    share, lt, pt, nofile = loop_tokens(ev, seed_art, every, seeds)
    share_ref, _, _, _ = loop_tokens(ev, ref, every, seeds)
    w(f"\n- Loops (≥ {LOOP_REPEATS} identical tool calls): {share:.0%} of seed-skill case runs, {share_ref:.0%} with "
      f"the reference skill; a looping run's median tokens {lt:,.0f} vs {pt:,.0f} otherwise"
      + (f" (×{lt / pt:.1f})" if pt else "") + f"; {nofile:.0%} of loops end without an artifact.")
    us, n = timing(ev, [seed_art, ref], every, seeds)
    w(f"- Speed: {us:.0f} µs per case evaluation (best of 3 passes of {n:,} evaluations each, pure Python, "
      "this machine).")
    # The child adds the reference item with the largest effect on Validation (a realistic edit).
    items = list(spec.reference_skill["steps"]) + list(spec.reference_skill["pitfalls"])

    def with_item(x: str) -> SkillSpec:
        return skill(spec.seed_skill, steps=list(spec.seed_skill["steps"]) + [x])

    extra = max(items, key=lambda x: statistics.mean(mean_score(ev, with_item(x), splits["validation"], k)
                                                      for k in range(3)))
    child = with_item(extra)
    pair = max(20, settings.stat_seeds) if settings.extras else max(3, settings.stat_seeds)
    vr = variance_ratio(ev, seed_art, child, splits["validation"], list(range(pair)))
    w(f"- Common random numbers: seed vs seed + \"{extra}\" on Validation over "
      f"{pair} seeds: mean difference {vr['delta']:+.4f}, variance paired {vr['paired']:.2e} "
      f"vs unpaired {vr['unpaired']:.2e} (paired is {1 / vr['ratio']:.0f}× tighter).")
    if settings.extras:
        cases = splits["validation"] + splits["holdout"]
        base = per_case(ev, seed_art, cases, range(8))
        w(f"\nSingle reference items added to the seed: Validation + Holdout cases ({len(cases)}) whose mean over "
          "8 seeds rises / falls by more than 0.02.\n")
        w("| added item | improved | worse |")
        w("|---|---|---|")
        best: dict[str, tuple[float, str]] = {}
        for item in list(spec.reference_skill["steps"]) + list(spec.reference_skill["pitfalls"]):
            sc = per_case(ev, skill(spec.seed_skill, steps=list(spec.seed_skill["steps"]) + [item]), cases, range(8))
            up = [c for c in sc if sc[c] > base[c] + 0.02]
            down = [c for c in sc if sc[c] < base[c] - 0.02]
            for c in up:
                if sc[c] - base[c] > best.get(c, (0.0, ""))[0]:
                    best[c] = (sc[c] - base[c], item)
            w(f"| {item[:70]}{'…' if len(item) > 70 else ''} | {len(up)} | {len(down)} |")
        w(f"\nDistinct per-case best items: {len({v[1] for v in best.values()})}.\n")
        bloat = load_vocabulary(family).bloat if family in vocabulary_names() else ()
        probes = {"seed without its pitfalls (looks free on easy scales)": (skill(spec.seed_skill, pitfalls=[]), seed_art)}
        if bloat:
            probes["reference + 8 verbose paragraphs (vs reference)"] = (
                skill(spec.reference_skill, steps=list(spec.reference_skill["steps"]) + list(bloat) * 2), ref)
        w("| probe: mean score change | feedback | validation | holdout |")
        w("|---|---|---|---|")
        for label, (art, against) in probes.items():
            deltas = [statistics.mean(per_case(ev, art, splits[s], range(10)).values())
                      - statistics.mean(per_case(ev, against, splits[s], range(10)).values()) for s in SPLITS]
            w(f"| {label} | " + " | ".join(f"{d:+.3f}" for d in deltas) + " |")
    w("")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--families", default=",".join(family_names()), help="comma-separated (default: all registered)")
    ap.add_argument("--reflectors", default="feedback,tuned", help="comma-separated: feedback, tuned")
    ap.add_argument("--runs", type=int, default=10, help="engine runs per family and reflector (random seeds 1..N)")
    ap.add_argument("--budget", type=int, default=1000, help="search.max_metric_calls of each run")
    ap.add_argument("--stat-seeds", type=int, default=20, help="evaluation seeds per skill statistic")
    ap.add_argument("--pair-seeds", type=int, default=10, help="holdout seeds for paired vs unpaired variance")
    ap.add_argument("--quick", action="store_true", help="2 runs, budget 150, 2 seeds, no extras (a smoke test)")
    ap.add_argument("--out", type=Path, default=None, help="the report (default experiments/reports/"
                    "skillcraft_calibration.md; with --quick a file in a new temporary folder)")
    args = ap.parse_args(argv)
    if args.out is None:  # a smoke test never overwrites the committed report
        args.out = (Path(tempfile.mkdtemp(prefix="skillcraft_calibration_")) if args.quick
                    else REPO / "experiments" / "reports") / "skillcraft_calibration.md"
    families = [f.strip() for f in args.families.split(",") if f.strip()]
    for f in families:
        get_family(f)  # unknown family: a clear error before any work
    reflectors = [r.strip() for r in args.reflectors.split(",") if r.strip()]
    unknown = [r for r in reflectors if r not in REFLECTORS]
    if unknown:
        ap.error(f"unknown reflector(s) {unknown}; known: {', '.join(REFLECTORS)}")
    settings = Settings(families, reflectors, args.runs, args.budget, args.stat_seeds, args.pair_seeds, True)
    if args.quick:
        settings = Settings(families, reflectors, 2, 150, 2, 3, False)
    logging.disable(logging.CRITICAL)  # the engine's progress lines
    t0 = time.perf_counter()
    lines: list[str] = []
    w = lines.append
    w("# SkillCraft-sim calibration and headroom closed\n")
    w("SkillCraft-sim is a **simulation**: a seeded simulated agent calls local tools over generated fixtures and a "
      "rubric grades its JSON artifact. These numbers calibrate the harness (selection, paired comparison, "
      "promotion) on a task with a realistic statistical shape; they are not measurements of an LM.\n")
    w(f"- date: {dt.datetime.now(dt.UTC).strftime('%Y-%m-%d %H:%M UTC')}; platform: {platform.platform()}; "
      f"cpu count: {os.cpu_count()}; python {platform.python_version()}")
    w(f"- evaluator defaults: token_budget {DEFAULT_TOKEN_BUDGET:,}, usd_per_1k_tokens {DEFAULT_USD_PER_1K_TOKENS}")
    w(f"- runs: random seeds 1–{settings.runs} per family and reflector, `max_metric_calls={settings.budget}`, "
      "`max_iterations=None`, other search settings at their defaults")
    w(f"- reproduce: `python experiments/skillcraft_calibration.py{' --quick' if args.quick else ''}"
      f" --families {','.join(families)} --reflectors {','.join(reflectors)}`\n")

    runs: list[Run] = []
    skipped = []
    for family in families:
        for reflector in reflectors:
            if reflector == "tuned" and family not in vocabulary_names():
                skipped.append(family)  # the tuned reflector needs the family's own vocabulary
                continue
            for rs in range(1, settings.runs + 1):
                runs.append(one_run(family, reflector, rs, settings))
    w("## Headroom closed on Holdout\n")
    w("Per family and offline reflector, means over the runs of the Holdout score of the shipped seed skill, the "
      "run's winner and the hand-written reference skill, all scored with each run's holdout seed. "
      "**Headroom closed** = (winner − seed) / (reference − seed) of those means (in brackets: mean ± sd of the "
      "per-run ratio). The score's *quality part* (score minus the efficiency credit; its headroom share in "
      "brackets) and *efficiency part* (0.01·eff on a pass, 0 on a fail) are shown separately. Loops: share of "
      f"case runs with ≥ {LOOP_REPEATS} identical tool calls. Variance: of the winner − seed Holdout mean over "
      f"{settings.pair_seeds} fresh seeds, paired (both with the same seed) vs unpaired (different seeds).\n")
    w("| family | reflector | runs | holdout seed / winner / reference | headroom closed | quality part s / w / r "
      "(closed) | efficiency part s / w / r | pass s / w / r | loops s / w / r | variance paired vs unpaired | "
      "eligible |")
    w("|---|---|---|---|---|---|---|---|---|---|---|")
    lines.extend(headroom_rows(runs))
    if "feedback" in reflectors:
        w("")
        lines.extend(criterion_lines(runs))
    if skipped:
        w(f"\nNo `tuned` rows for {', '.join(skipped)}: the family has no tuned vocabulary "
          "(evaluators/skillcraft/reflectors/vocabularies/).")
    w("\n`tuned` is co-designed with the simulator (its remedies are worded for the behaviours' concepts and its "
      "diagnoses match each grader's messages): an upper reference, not evidence. `feedback` knows no family.\n")
    w("### Runs\n")
    w("| family | reflector | random_seed | holdout seed → winner (reference) | closed | pool | proposals | "
      "winner chars | eligible | seconds |")
    w("|---|---|---|---|---|---|---|---|---|---|")
    for r in runs:
        w(f"| {r.family} | {r.reflector} | {r.random_seed} | {r.seed.score:.3f} → {r.winner.score:.3f} "
          f"({r.reference.score:.3f}) | {r.closed:+.0%} | {r.pool} | {r.proposals} | {r.chars} | "
          f"{'yes' if r.eligible else 'no'} | {r.seconds:.1f} |")
    w("")
    for family in families:
        family_section(family, settings, w)
    w(f"_Generated by `python experiments/skillcraft_calibration.py` in {time.perf_counter() - t0:.0f} s._")
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text("\n".join(lines) + "\n", encoding="utf-8")
    print("\n".join(lines))
    print(f"report: {args.out}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
