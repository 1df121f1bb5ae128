"""Deterministic generator of the catfacts family's local "API" data (fixtures.json).

A catfact.ninja-like world: a few hundred cat facts (written from templates, not copied) served
by a paginated listing. Quirks: about 13 % of listing entries repeat an earlier fact a page or so
later, exactly or with different case, spacing or end punctuation; half of the facts with an
apostrophe, a quote or an ampersand (those that stay under the cut) come HTML-escaped (&#39;,
&quot;, &amp;) and their `length` field counts the escaped text; about 10 % of the others carry a
stale `length` (3-15 characters short); facts longer than 200 characters are cut to 200
characters plus "…" in the listing (`truncated: true`) and only the single-fact endpoint returns
them whole. Keyword words come in forms a substring or a case-sensitive match gets wrong (asleep,
Sleeping, kittenhood, eyelid, tailless, Purring, breeders, …).
Only `random.Random(<int>)` is used, so the committed file regenerates bit-exactly.
"""

from __future__ import annotations

import html
import random
from typing import Any

FIXTURE_SEED = 20240815
PER_PAGE = 25
TRUNCATE_AT = 200
ESCAPED_SHARE = 0.5
STALE_LENGTH_SHARE = 0.12
DUPLICATE_SHARE = 0.15
KEYWORDS = ("kitten", "sleep", "whisker", "tail", "eye", "purr", "breed", "hunt")

BREEDS = ("Siamese", "Persian", "Maine Coon", "Bengal", "Sphynx", "Ragdoll", "Abyssinian", "Burmese",
          "Norwegian Forest", "Scottish Fold", "Russian Blue", "Birman", "Savannah", "Manx", "Turkish Van",
          "British Shorthair", "Devon Rex", "Chartreux", "Singapura", "Somali")
PLACES = ("Thailand", "Iran", "the United States", "Ethiopia", "Myanmar", "Norway", "Scotland", "Russia",
          "France", "Singapore", "the Isle of Man", "Turkey", "England", "Canada", "Egypt")
NAMES = ("Tom", "Felix", "Luna", "Milo", "Oscar", "Cleo", "Simba", "Nala", "Tiger", "Smokey", "Misty", "Shadow")

# (template, slot -> choices). {n}/{m} are numbers; a template's wording carries its keyword forms.
TEMPLATES: tuple[tuple[str, dict[str, tuple[Any, ...]]], ...] = (
    ("Cats sleep for {n} to {m} hours a day, more than most mammals.", {"n": (12, 13, 14), "m": (15, 16, 18, 20)}),
    ("A sleeping cat can twitch its whiskers and paws while it dreams.", {}),
    ("Kittens fall asleep up to {n} times an hour in their first weeks.", {"n": (4, 5, 6, 8)}),
    ("Sleep fills about {n}% of an older cat's day.", {"n": (60, 65, 70, 75)}),
    ("{breed} cats like to sleep curled into a tight ball with the tail over the nose.", {"breed": BREEDS}),
    ("A sleepy cat often yawns to show that it trusts you.", {}),
    ("A kitten's eyes stay closed for the first {n} days of its life.", {"n": (7, 8, 9, 10, 12)}),
    ("Kittens are born deaf and begin to hear after about {n} days.", {"n": (5, 6, 8, 10)}),
    ("A litter usually has {n} to {m} kittens.", {"n": (2, 3, 4), "m": (5, 6, 8)}),
    ("Most cats leave kittenhood at about {n} months of age.", {"n": (10, 12, 14, 18)}),
    ("A mother cat moves her kitten to a new nest every few days to hide its scent.", {}),
    ("Kittens start to purr when they are about {n} days old.", {"n": (2, 3, 4, 7)}),
    ("A cat has about {n} whiskers, {m} on each side of its nose.", {"n": (24, 26), "m": (12, 13)}),
    ("Whiskers are about as wide as a cat's body and help it judge narrow gaps.", {}),
    ("A cat's whisker pads are packed with nerves that sense the smallest breeze.", {}),
    ("Cutting a cat's whiskers leaves it confused and clumsy for weeks.", {}),
    ("A cat's tail holds about {n} of its {m} bones.", {"n": (19, 20, 22, 23), "m": (230, 240, 244, 250)}),
    ("Tails held high signal a happy, confident cat.", {}),
    ("The {breed} is known for a naturally short or curled tail.", {"breed": ("Manx", "Japanese Bobtail",
                                                                            "American Curl", "Pixie-bob")}),
    ("Many Manx cats are tailless, a trait that comes from a single gene.", {}),
    ("A cat lashing its tail from side to side is usually annoyed.", {}),
    ("Cats see about {n} times better than people in dim light.", {"n": (5, 6, 7, 8)}),
    ("A cat's third eyelid protects the eye when it hunts in tall grass.", {}),
    ("Eyes of most kittens are blue at birth and change colour after {n} weeks.", {"n": (6, 7, 8, 10, 12)}),
    ("A slow blink from a cat is a friendly sign; blink back with both eyes.", {}),
    ("Odd-eyed cats have one eye of each colour, common in the {breed}.", {"breed": ("Turkish Van", "Khao Manee",
                                                                                     "Turkish Angora")}),
    ("Cats purr at a frequency of {n} to {m} hertz.", {"n": (20, 25, 26), "m": (140, 150)}),
    ("Purring can also be a sign of pain or stress, not only of contentment.", {}),
    ("A purr starts in the larynx, where muscles open and close the vocal cords.", {}),
    ("Cheetahs purr, but lions and tigers cannot purr at all.", {}),
    ("Cats purr both when they breathe in and when they breathe out.", {}),
    ("There are about {n} recognised cat breeds worldwide.", {"n": (40, 45, 70, 73)}),
    ("The {breed} breed comes from {place}.", {"breed": BREEDS, "place": PLACES}),
    ("Breeding {breed} cats takes careful health checks.", {"breed": BREEDS}),
    ("Most {breed} breeders keep a waiting list for kittens.", {"breed": BREEDS}),
    ("A cat hunting at night relies on hearing more than on sight.", {}),
    ("Cats hunt up to {n} times a day, though most hunts fail.", {"n": (10, 12, 15, 20)}),
    ("Hunting instincts appear in kittens as young as {n} weeks.", {"n": (4, 5, 6)}),
    ("An indoor cat will still hunt toys, flies and moving shadows.", {}),
    ("Farm cats were kept to hunt mice in grain stores.", {}),
    ("The oldest recorded cat, {name}, lived to the age of {n} years.", {"name": NAMES, "n": (30, 34, 38)}),
    ("A group of cats is called a \"clowder\".", {}),
    ("A cat named {name} once travelled {n} km to return home.", {"name": NAMES, "n": (80, 200, 320, 1000)}),
    ("Ancient Egyptians shaved their eyebrows to mourn the death of a cat.", {}),
    ("Cats can't taste sweetness.", {}),
    ("A cat's nose print is unique, like a human fingerprint.", {}),
    ("Cats spend about {n}% of their waking hours grooming.", {"n": (30, 40, 50)}),
    ("Cats walk like camels & giraffes: both right feet first, then both left feet.", {}),
    ("A cat's heart beats {n} to {m} times a minute.", {"n": (120, 140), "m": (200, 220, 240)}),
    ("Cats have {n} toes on each front paw and {m} on each back paw.", {"n": (5,), "m": (4,)}),
    ("A cat can jump up to {n} times its own height.", {"n": (5, 6, 7)}),
    ("Cats don't have a collarbone, so they fit through any gap their head fits through.", {}),
    ("Most cats dislike water because their fur takes a long time to dry.", {}),
    ("In {place}, a cat's \"meow\" is written differently.", {"place": ("Japan", "France", "Italy", "Poland")}),
    ("A cat's brain is about {n}% similar to a human brain.", {"n": (85, 90)}),
    ("Cats sweat only through the pads of their paws.", {}),
    ("A cat uses its whiskers & tail to keep its balance on narrow fences.", {}),
)
SHORT: tuple[str, ...] = (
    "Cats have 32 muscles in each ear.", "A cat can't climb head first down a tree.", "Cats can't taste sugar.",
    "Cats dream, just like people.", "Cats are mostly left-pawed or right-pawed.", "A cat's jaw can't move sideways.",
    "Kittens sleep a lot.", "Cats purr to heal.", "Whiskers sense air.", "Cats hunt alone.", "A tail shows mood.",
    "Eyes glow at night.", "Every breed purrs.", "A kitten's purr is soft.", "Cats nap often.",
    "Cats rub to mark you.", "Most cats dislike citrus.",
)
# Sentences appended to a fact to make it long (> 200 characters, cut in the listing).
EXTRAS: tuple[str, ...] = (
    "Researchers think this helped wild cats survive long nights in the desert, where food was scarce and "
    "every calorie counted.",
    "Vets say owners should keep an eye on any change, because cats hide illness very well.",
    "The same trait has been seen in big cats, which suggests it is very old in the family tree.",
    "Owners often notice it first at night, when the house is quiet and the cat is most active.",
    "It is one reason why cats are such successful hunters in almost every habitat on the planet.",
    "Breeders have known this for a long time, and some even select for it on purpose.",
    "This is also why a cat should never be woken suddenly from a deep sleep.",
    "Scientists still argue about the details, but the basic pattern is well documented.",
)


def _escape(text: str) -> str:
    return html.escape(text, quote=True).replace("&#x27;", "&#39;")


def _near_copy(rng: random.Random, text: str) -> str:
    """The same fact again, differing in case, spacing or end punctuation only."""
    kind = rng.randrange(3)
    if kind == 0:
        return text.upper() if len(text) < 60 else text[0].lower() + text[1:]
    if kind == 1:
        return text.replace(" ", "  ", 1)
    return text.rstrip(".!") if text.endswith((".", "!")) else text + "."


def _facts(rng: random.Random) -> list[str]:
    out: list[str] = []
    seen: set[str] = set()

    def add(text: str) -> None:
        if text not in seen:
            seen.add(text)
            out.append(text)

    for template, slots in TEMPLATES:
        combos = 1
        for choices in slots.values():
            combos *= len(choices)
        for _ in range(min(combos, 14)):
            values = {k: rng.choice(v) for k, v in slots.items()}
            add(template.format(**values))
    for text in SHORT:
        add(text)
    bases = list(out)
    for _ in range(32):  # long facts: a base fact and an explanation
        text = f"{rng.choice(bases)} {rng.choice(EXTRAS)}"
        while len(text) <= TRUNCATE_AT:
            text += f" {rng.choice(EXTRAS)}"
        if len(text) <= 330:
            add(text)
    return out


def generate_catfacts_fixtures() -> dict[str, Any]:
    rng = random.Random(FIXTURE_SEED)
    texts = _facts(rng)
    rng.shuffle(texts)
    entries: list[dict[str, Any]] = []
    for i, text in enumerate(texts):
        escaped = any(c in text for c in "'\"&") and rng.random() < ESCAPED_SHARE
        # Only facts that stay under the listing's cut are escaped (a cut must mean "longer than 200").
        escaped = escaped and len(_escape(text)) <= TRUNCATE_AT
        raw = _escape(text) if escaped else text
        length = len(raw)
        if not escaped and rng.random() < STALE_LENGTH_SHARE:
            length -= rng.randint(3, 15)  # counted before the fact was last edited
        entries.append({"id": f"cf{1000 + i}", "fact": raw, "length": length})
    # Repeats: a later entry restates an earlier fact (exactly or nearly).
    listing = list(entries)
    keyworded = [e for e in entries if len(e["fact"]) <= 55
                 or any(k in w.lower() for w in e["fact"].split() for k in KEYWORDS)]
    extra = int(len(entries) * DUPLICATE_SHARE)
    for k in range(extra):
        # Mostly facts a filter will look for: a keyword fact or a short one.
        pool = keyworded if rng.random() < 0.75 else entries
        src = rng.choice(pool[: len(pool) - 5])
        pos = min(len(listing), listing.index(src) + rng.randint(2, 30))  # a page or so later
        text = src["fact"] if rng.random() < 0.5 else _near_copy(rng, src["fact"])
        listing.insert(pos, {"id": f"cf{2000 + k}", "fact": text, "length": len(text)})
    return {
        "version": "sim-v1",
        "per_page": PER_PAGE,
        "truncate_at": TRUNCATE_AT,
        "keywords": list(KEYWORDS),
        "facts": listing,
    }
