"""Writes the three prompt tasks under datasets/prompt/ (the real-model tasks of docs/real_models.md):

- sentiment: short product / place reviews -> `positive` or `negative` (contrast and negation
  sentences included, where the last clause or the negation decides);
- topic: news headlines -> `sports`, `business`, `science` or `entertainment`;
- extract: travel sentences -> the city the traveller arrives in (the other city is a distractor).

Every case is built from templates and word lists written for this project, with a fixed RNG, so
the files regenerate byte for byte: `python experiments/prompt_datasets.py` (or `--check` to
verify the committed files). Each task: 200 Feedback, 30 Validation, 25 Holdout cases (a default
run fits in minutes on a 135M model on 2 cores; validation + 2 x holdout = 80 metric calls, the
smallest budget a run can start with).
"""

from __future__ import annotations

import argparse
import json
import random
import sys
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from gepa_lab.data import frozen_files  # noqa: E402

SIZES = {"feedback": 200, "validation": 30, "holdout": 25}

# -- sentiment ------------------------------------------------------------------------------------
THINGS = ["the blender", "this phone case", "the hotel room", "the pasta", "this novel", "the headphones",
          "the delivery", "the new update", "this backpack", "the museum tour", "the coffee", "the laptop charger",
          "the yoga class", "the rental car", "this board game", "the dentist's office", "the bakery's bread",
          "the train journey", "this vacuum cleaner", "the concert", "the sofa", "the running shoes", "the app",
          "the campsite", "the printer", "the sushi", "the tablet", "the customer support", "the gym", "the film"]
GOOD = ["works perfectly", "exceeded my expectations", "was worth every penny", "made my week",
        "is exactly as described", "was a real pleasure", "arrived early and in great shape",
        "is the best I have tried", "was spotless", "is sturdy and well made", "tasted wonderful",
        "kept me hooked until the end", "is quiet and powerful", "was friendly and quick", "felt luxurious",
        "is easy to set up", "did everything I needed", "was great value", "holds up after months of use"]
BAD = ["broke after a week", "was a complete waste of money", "never worked properly", "smelled of smoke",
       "arrived damaged", "is flimsy and cheap", "tasted stale", "was painfully slow", "kept crashing",
       "was dirty and cramped", "stopped charging after two days", "bored me to tears", "was rude and unhelpful",
       "is far too loud", "fell apart in the wash", "was overpriced for what you get", "leaked everywhere",
       "is impossible to assemble", "left me with a headache"]
OPENERS = ["", "Honestly, ", "Well, ", "To be fair, ", "I have to say ", "Overall, ", "In short, "]
NEG_GOOD = ["is not bad at all", "never let me down", "could not have been better", "did not disappoint",
            "was nothing short of great"]
NEG_BAD = ["was not worth it", "did not live up to the hype", "is nothing special", "never arrived on time",
           "was not what I ordered"]


def _sentiment(rng: random.Random) -> tuple[str, str, str]:
    thing, label = rng.choice(THINGS), rng.choice(["positive", "negative"])
    good, bad = rng.choice(GOOD), rng.choice(BAD)
    form = rng.choice(["plain", "plain", "negation", "contrast", "despite", "two"])
    if form == "plain":
        text = f"{rng.choice(OPENERS)}{thing} {good if label == 'positive' else bad}."
    elif form == "negation":
        text = f"{rng.choice(OPENERS)}{thing} {rng.choice(NEG_GOOD if label == 'positive' else NEG_BAD)}."
    elif form == "contrast":  # the clause after "but" decides
        first, last = (bad, good) if label == "positive" else (good, bad)
        text = f"At first {thing} {first}, but after a while it {last}."
    elif form == "despite":
        flaw, other = (bad, good) if label == "positive" else (good, bad)
        text = f"Even though the packaging {flaw}, {thing} {other}." if rng.random() < 0.5 else \
            f"{thing.capitalize()} {other}, even if the manual {flaw}."
    else:
        again = rng.choice(GOOD if label == "positive" else BAD)
        first = good if label == "positive" else bad
        text = f"{thing.capitalize()} {first} and {again}." if again != first else f"{thing.capitalize()} {first}."
        text += rng.choice([" Would buy again.", " Recommended.", ""] if label == "positive"
                           else [" Returning it.", " Avoid.", ""])
    return text[0].upper() + text[1:], label, form


# -- topic ----------------------------------------------------------------------------------------
TEAMS = ["Riverside United", "the Harbour Hawks", "Northgate FC", "the Valley Lions", "Eastport Rovers",
         "the Capital Comets", "Westfield Athletic", "the Mountain Bears"]
FIRMS = ["Lumen Foods", "Corvid Airlines", "Pellar Bank", "Tidewater Energy", "Quillon Motors", "Brightmarket",
         "Oakridge Insurance", "Nimbus Telecom"]
PLACES = ["the Andes", "Borneo", "the Arctic", "the Sahara", "Lake Baikal", "the Great Barrier Reef", "Patagonia",
          "Madagascar"]
STARS = ["Mira Castell", "Jon Aveline", "Priya Solano", "Theo Marsh", "Lena Okafor", "Sam Whitlock", "Ada Ferreira"]
# Every template has slots, so each label has well over a hundred distinct headlines.
TOPIC_TEMPLATES: dict[str, list[str]] = {
    "sports": ["{team} beat {team2} {n}-1 to reach the cup final", "{team} sign a striker on a {n}-year deal",
               "Injury rules captain out of {team}'s season opener", "{star} wins the city marathon in record time",
               "{team2} fire their coach after {n} straight defeats", "Late penalty earns {team} a draw with {team2}",
               "Tennis: {star} knocked out in round {n}", "{team} fans celebrate first title in {n}0 years"],
    "business": ["{firm} shares fall {n}% after weak quarterly earnings", "{firm} to cut {n},200 jobs in restructuring",
                 "{firm} agrees takeover of rival for ${n}bn", "Central bank holds interest rates at {n}.5%",
                 "{firm} reports record profits on strong demand in {place}", "{firm} shares jump {n}% on a new CEO",
                 "{firm} opens new factory, creating {n}00 jobs", "Inflation eases to {n}.1%, data show"],
    "science": ["Researchers discover a new species of frog in {place}", "Telescope spots water vapour on a planet "
                "{n}0 light years away", "Study of {n},000 people links gut bacteria to sleep quality",
                "Ice cores from {place} reveal climate shifts {n}0,000 years ago", "New battery chemistry stores {n} "
                "times more energy, engineers say", "Scientists map {n} million neurons in a fruit fly brain",
                "Vaccine trial with {n},000 volunteers shows strong results", "Fossil found in {place} rewrites bird "
                "evolution"],
    "entertainment": ["{star} to star in a sequel to last year's hit", "Band announces reunion tour after {n} years",
                      "{star}'s debut novel tops the bestseller list", "Streaming series with {star} renewed for "
                      "season {n}", "Film festival opens with a documentary about {place}", "{star} wins best "
                      "actress award at the {n}th annual gala", "{star} cancels {n} shows over a vocal injury",
                      "Animated film set in {place} breaks box-office records"],
}


def _topic(rng: random.Random) -> tuple[str, str, str]:
    label = rng.choice(sorted(TOPIC_TEMPLATES))
    template = rng.choice(TOPIC_TEMPLATES[label])
    team, team2 = rng.sample(TEAMS, 2)
    star = rng.choice(STARS)
    text = template.format(team=team, team2=team2, firm=rng.choice(FIRMS), place=rng.choice(PLACES), star=star,
                           n=rng.randint(2, 9))
    return text[0].upper() + text[1:], label, label


# -- extraction: the arrival city -----------------------------------------------------------------
CITIES = ["Lisbon", "Oslo", "Cairo", "Lima", "Hanoi", "Dublin", "Nairobi", "Quito", "Porto", "Krakow", "Seville",
          "Toronto", "Osaka", "Tunis", "Zagreb", "Bergen", "Valencia", "Perth", "Denver", "Tbilisi"]
NAMES = ["Ana", "Omar", "Lucia", "Kenji", "Fatima", "Tom", "Ines", "Pavel", "Grace", "Diego", "Mei", "Yusuf"]
EXTRACT_TEMPLATES = [
    "{name} flew from {a} to {b} on Monday.",
    "After a week in {a}, {name} took the night train to {b}.",
    "{name} landed in {b} after a long flight from {a}.",
    "The bus from {a} arrived in {b} two hours late.",
    "{name} is moving to {b}; she has lived in {a} for ten years.",
    "From {a}, {name} drove all the way to {b}.",
    "{name}'s connecting flight left {a} at noon and reached {b} by evening.",
    "Booking confirmed: one adult, departing {a}, arriving {b}.",
    "The storm forced the plane from {a} to land in {b} instead of {c}.",
    "{name} never liked {a}, so the trip ended in {b}.",
    "Leaving {a} behind, {name} sailed on to {b}.",
    "{name} will spend the summer in {b}, far from home in {a}.",
]


def _extract(rng: random.Random) -> tuple[str, str, str]:
    template = rng.choice(EXTRACT_TEMPLATES)
    a, b, c = rng.sample(CITIES, 3)
    return template.format(name=rng.choice(NAMES), a=a, b=b, c=c), b, str(EXTRACT_TEMPLATES.index(template))


TASKS: dict[str, tuple[str, Callable[[random.Random], tuple[str, str, str]], str]] = {
    "sentiment": ("sent", _sentiment, "Classify the sentiment of this review."),
    "topic": ("topic", _topic, "What is this headline about?"),
    "extract": ("city", _extract, "Extract the destination city from the text."),
}


def build(task: str) -> dict[str, str]:
    prefix, make, seed_prompt = TASKS[task]
    rng = random.Random(f"gepa-lab prompt task {task}")
    seen: set[str] = set()
    rows: dict[str, list[dict[str, object]]] = {split: [] for split in SIZES}
    for split, size in SIZES.items():
        while len(rows[split]) < size:
            text, label, form = make(rng)
            if text in seen:
                continue
            seen.add(text)
            rows[split].append({"id": f"{prefix}-{split[0]}{len(rows[split]) + 1:03d}", "input": text,
                                "expected": label, "metadata": {"form": form}})
    files = frozen_files(rows, id=f"prompt/{task}", version="v1", seed_artifact="seed_prompt.json",
                         generator="python experiments/prompt_datasets.py")
    files["seed_prompt.json"] = json.dumps({"kind": "prompt", "text": seed_prompt}, indent=2) + "\n"
    return files


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="verify the committed files instead of writing them")
    args = parser.parse_args()
    stale = []
    for task in TASKS:
        folder = ROOT / "datasets" / "prompt" / task
        for name, text in build(task).items():
            path = folder / name
            if args.check:
                if not path.is_file() or path.read_text(encoding="utf-8") != text:
                    stale.append(str(path.relative_to(ROOT)))
            else:
                folder.mkdir(parents=True, exist_ok=True)
                path.write_text(text, encoding="utf-8")
    if stale:
        print("stale (run python experiments/prompt_datasets.py): " + ", ".join(stale), file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
