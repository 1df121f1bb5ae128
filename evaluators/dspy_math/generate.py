"""Generate the bundled `dspy_math` dataset: multi-step arithmetic word problems with exact
integer answers, in datasets/dspy_math/ (feedback / validation / holdout JSONL, manifest.json with
the split digests, seed_texts.json = the program's unoptimized instructions).

    python -m evaluators.dspy_math.generate            # (re)write datasets/dspy_math/
    python -m evaluators.dspy_math.generate --check    # exit 1 if the files on disk differ

Deterministic: one seeded RNG; each of the ten templates contributes the same number of problems
to every split. A case: {"id", "input": question, "expected": answer, "metadata": {"solution",
"steps", "template"}}; the solution reaches the metric, never the reflector.
"""

from __future__ import annotations

import argparse
import random
import sys
from pathlib import Path
from typing import Any

from gepa_lab import SPLITS, frozen_files

VERSION = "v1"
SEED = 20261201
PER_TEMPLATE_PER_SPLIT = 3  # 10 templates x 3 x 3 splits = 90 problems, 30 per split
NAMES = ("Maya", "Leo", "Ana", "Omar", "Priya", "Jonas", "Mei", "Tomas", "Zara", "Ivan", "Lena", "Kofi")
OUT = Path(__file__).resolve().parents[2] / "datasets" / "dspy_math"

Problem = tuple[str, int, list[str]]  # question, answer, solution steps


def shop(r: random.Random) -> Problem:
    name = r.choice(NAMES)
    a, b, c, d = r.randint(2, 9), r.randint(3, 15), r.randint(2, 8), r.randint(2, 6)
    cost = a * c + b * d
    bill = next(x for x in (20, 50, 100, 200) if x > cost)
    return (f"A shop sells pencils at ${a} each and notebooks at ${b} each. {name} buys {c} pencils and {d} "
            f"notebooks and pays with a ${bill} bill. How many dollars of change does {name} get?",
            bill - cost, [f"pencils {c} x {a} = {a * c}", f"notebooks {d} x {b} = {b * d}",
                          f"total {a * c} + {b * d} = {cost}", f"change {bill} - {cost} = {bill - cost}"])


def crates(r: random.Random) -> Problem:
    d = r.choice((4, 5, 6, 8, 10, 12))
    a, b = r.randint(3, 9), r.choice((6, 8, 10, 12, 20, 24))
    total = a * b
    c = total % d + d * r.randint(0, 2)
    c = c if c < total else total % d
    return (f"A warehouse has {a} boxes with {b} bottles in each. {c} bottles break, and the rest are packed "
            f"into crates of {d} bottles. How many crates are filled?",
            (total - c) // d, [f"bottles {a} x {b} = {total}", f"unbroken {total} - {c} = {total - c}",
                               f"crates {total - c} / {d} = {(total - c) // d}"])


def trip(r: random.Random) -> Problem:
    a, b, c, d = r.choice((40, 50, 60, 80, 90)), r.randint(2, 5), r.choice((30, 45, 70, 100)), r.randint(1, 4)
    return (f"A train travels at {a} km per hour for {b} hours, then at {c} km per hour for {d} hours. How many "
            "kilometres does it travel in total?",
            a * b + c * d, [f"first leg {a} x {b} = {a * b}", f"second leg {c} x {d} = {c * d}",
                            f"total {a * b} + {c * d} = {a * b + c * d}"])


def savings(r: random.Random) -> Problem:
    name = r.choice(NAMES)
    a, b, d = r.randint(5, 20), r.randint(4, 12), r.randint(2, 5)
    saved = a * b
    c = saved % d + d * r.randint(1, 4)
    c = c if c < saved else saved % d
    return (f"{name} saves ${a} every week for {b} weeks, spends ${c} on a gift, and shares the rest equally "
            f"among {d} friends. How many dollars does each friend get?",
            (saved - c) // d, [f"saved {a} x {b} = {saved}", f"left {saved} - {c} = {saved - c}",
                               f"each {saved - c} / {d} = {(saved - c) // d}"])


def garden(r: random.Random) -> Problem:
    a, b, c = r.randint(3, 8), r.randint(4, 10), r.randint(2, 6)
    grown = a * b * c
    d = r.randint(1, grown // 3)
    return (f"A garden has {a} rows of {b} tomato plants. Each plant gives {c} tomatoes, and {d} tomatoes spoil. "
            "How many good tomatoes are there?",
            grown - d, [f"plants {a} x {b} = {a * b}", f"tomatoes {a * b} x {c} = {grown}",
                        f"good {grown} - {d} = {grown - d}"])


def classes(r: random.Random) -> Problem:
    a, b = r.randint(3, 7), r.randint(20, 32)
    c, e = r.randint(1, 4), r.randint(2, 9)
    present = a * (b - c)
    return (f"A school has {a} classes of {b} students. {c} students are absent from each class, and {e} "
            "visitors join the assembly. How many people are at the assembly?",
            present + e, [f"present per class {b} - {c} = {b - c}", f"students {a} x {b - c} = {present}",
                          f"with visitors {present} + {e} = {present + e}"])


def baking(r: random.Random) -> Problem:
    b = r.choice((12, 15, 20, 24))
    a, k, extra = r.choice((150, 200, 250, 300)), r.randint(2, 6), r.choice((50, 75, 100))
    c = b * k
    return (f"A recipe uses {a} grams of flour for every {b} cookies. A baker makes {c} cookies and also uses "
            f"{extra} grams of flour to dust the table. How many grams of flour are used?",
            a * k + extra, [f"batches {c} / {b} = {k}", f"flour {k} x {a} = {a * k}",
                            f"with dusting {a * k} + {extra} = {a * k + extra}"])


def ages(r: random.Random) -> Problem:
    name = r.choice(NAMES)
    a, b, c, d = r.randint(4, 12), r.randint(2, 6), r.randint(2, 3), r.randint(2, 10)
    brother = a + b
    return (f"{name} is {a} years old. {name}'s brother is {b} years older, and their aunt is {c} times as old as "
            f"the brother. How old will the aunt be in {d} years?",
            c * brother + d, [f"brother {a} + {b} = {brother}", f"aunt {c} x {brother} = {c * brother}",
                              f"in {d} years {c * brother} + {d} = {c * brother + d}"])


def tickets(r: random.Random) -> Problem:
    a, b, c, d = r.randint(12, 25), r.randint(5, 11), r.randint(1, 3), r.randint(2, 5)
    total = a * c + b * d
    e = r.randint(3, min(15, total - 1))
    return (f"Adult tickets cost ${a} and child tickets cost ${b}. A family of {c} adults and {d} children uses "
            f"a coupon worth ${e}. How many dollars do they pay?",
            total - e, [f"adults {c} x {a} = {a * c}", f"children {d} x {b} = {b * d}",
                        f"before coupon {a * c} + {b * d} = {total}", f"after coupon {total} - {e} = {total - e}"])


def tank(r: random.Random) -> Problem:
    b, c, d, e = r.randint(8, 20), r.randint(5, 15), r.randint(2, 7), r.randint(3, 10)
    start = r.choice((0, 50, 100))
    filled = b * c
    e = min(e, (start + filled) // d)
    return (f"A tank holds {start} litres of water. It is filled at {b} litres per minute for {c} minutes, then "
            f"drained at {d} litres per minute for {e} minutes. How many litres are in the tank now?",
            start + filled - d * e, [f"added {b} x {c} = {filled}", f"drained {d} x {e} = {d * e}",
                                     f"now {start} + {filled} - {d * e} = {start + filled - d * e}"])


TEMPLATES = (shop, crates, trip, savings, garden, classes, baking, ages, tickets, tank)


def build_cases() -> dict[str, list[dict[str, Any]]]:
    rng = random.Random(SEED)
    out: dict[str, list[dict[str, Any]]] = {s: [] for s in SPLITS}
    seen: set[str] = set()
    for make in TEMPLATES:
        for split in SPLITS:
            made = 0
            while made < PER_TEMPLATE_PER_SPLIT:
                question, answer, steps = make(rng)
                if question in seen or answer <= 0:
                    continue
                seen.add(question)
                made += 1
                out[split].append({"input": question, "expected": str(answer),  # the id comes after the shuffle
                                   "metadata": {"solution": "; ".join(steps), "steps": str(len(steps)),
                                                "template": make.__name__}})
    for split in SPLITS:  # interleave templates; ids stay in file order
        rng.shuffle(out[split])
        for n, row in enumerate(out[split], start=1):
            row["id"] = f"math-{split[0]}{n:03d}"
    return out


def render_files() -> dict[str, str]:
    files = frozen_files(build_cases(), "dspy-math", VERSION, seed_artifact="seed_texts.json",
                         generator="python -m evaluators.dspy_math.generate",
                         note="Generated multi-step arithmetic word problems with exact integer answers.")
    from evaluators.dspy_math.program import make_program
    from gepa_lab.lm import seed_json

    return {**files, "seed_texts.json": seed_json(make_program())}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", type=Path, default=OUT)
    ap.add_argument("--check", action="store_true", help="compare with the files on disk, write nothing")
    args = ap.parse_args(argv)
    files = render_files()
    if args.check:
        stale = [n for n, t in files.items()
                 if not (args.out / n).is_file() or (args.out / n).read_text(encoding="utf-8") != t]
        if stale:
            print(f"stale: {', '.join(stale)} (run python -m evaluators.dspy_math.generate)", file=sys.stderr)
        return 1 if stale else 0
    args.out.mkdir(parents=True, exist_ok=True)
    for name, text in files.items():
        (args.out / name).write_text(text, encoding="utf-8")
    print(f"wrote {len(files)} files to {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
