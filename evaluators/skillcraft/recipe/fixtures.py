"""Deterministic generator of the recipe family's local "API" data (fixtures.json).

Hundreds of recipes with categories, cuisines and ingredient lines in mixed units (g, kg, oz,
lb, ml, l, cup, tbsp, tsp, pcs), a few missing values, and per-listing quirks of the paginated
search endpoint: overlapping pages (duplicates), an empty sentinel page whose cursor points at
itself (a loop trap), and a stale `total_hint`. Only `random.Random(<int>)` is used, whose
sequence is stable across Python versions, so the committed files can be regenerated bit-exactly.
"""

from __future__ import annotations

import random
from typing import Any

FIXTURE_SEED = 20240611
PAGE_SIZE = 10

# category -> number of recipes (uneven on purpose: 1 to 5 pages).
CATEGORIES: dict[str, int] = {
    "Beef": 30, "Breakfast": 12, "Chicken": 42, "Dessert": 38, "Goat": 7, "Lamb": 18,
    "Miscellaneous": 14, "Pasta": 24, "Pork": 22, "Seafood": 34, "Starter": 11, "Vegan": 9,
    "Vegetarian": 31,
}
CUISINES: dict[str, int] = {  # relative weights
    "American": 9, "British": 10, "Chinese": 8, "French": 8, "Greek": 5, "Indian": 9,
    "Italian": 11, "Jamaican": 3, "Japanese": 6, "Malaysian": 3, "Mexican": 8, "Moroccan": 4,
    "Spanish": 4, "Thai": 6, "Turkish": 4, "Vietnamese": 3,
}
# ingredient -> (kind, popularity weight)
INGREDIENTS: dict[str, tuple[str, int]] = {
    "flour": ("mass", 8), "sugar": ("mass", 7), "butter": ("mass", 9), "rice": ("mass", 5),
    "spaghetti": ("mass", 3), "beef mince": ("mass", 3), "chicken breast": ("mass", 4),
    "lamb shoulder": ("mass", 2), "pork belly": ("mass", 2), "salmon fillet": ("mass", 2),
    "prawns": ("mass", 2), "cheddar": ("mass", 3), "parmesan": ("mass", 3), "potatoes": ("mass", 5),
    "carrots": ("mass", 4), "mushrooms": ("mass", 3), "spinach": ("mass", 3), "tomatoes": ("mass", 7),
    "chickpeas": ("mass", 2), "lentils": ("mass", 2), "dark chocolate": ("mass", 2), "ginger": ("mass", 3),
    "tofu": ("mass", 2), "milk": ("volume", 6), "olive oil": ("volume", 10), "soy sauce": ("volume", 3),
    "double cream": ("volume", 3), "coconut milk": ("volume", 2), "chicken stock": ("volume", 4),
    "vinegar": ("volume", 2), "honey": ("volume", 2), "lemon juice": ("volume", 3),
    "vegetable oil": ("volume", 4), "eggs": ("count", 8), "onion": ("count", 11), "garlic": ("count", 11),
    "lime": ("count", 2), "chillies": ("count", 3), "bay leaves": ("count", 2), "salt": ("spice", 12),
    "black pepper": ("spice", 9), "cumin": ("spice", 3), "paprika": ("spice", 3), "cinnamon": ("spice", 2),
    "oregano": ("spice", 2),
}
# unit -> (metric unit, factor); g, ml and pcs are already normalised.
UNITS: dict[str, tuple[str, float]] = {
    "g": ("g", 1.0), "kg": ("g", 1000.0), "oz": ("g", 28.35), "lb": ("g", 453.6),
    "ml": ("ml", 1.0), "l": ("ml", 1000.0), "cup": ("ml", 240.0), "tbsp": ("ml", 15.0),
    "tsp": ("ml", 5.0), "pcs": ("pcs", 1.0),
}
_UNIT_CHOICES: dict[str, list[tuple[str, int, list[float]]]] = {
    "mass": [("g", 45, [50, 100, 150, 200, 250, 300, 400, 500]), ("kg", 10, [0.5, 1, 1.5]),
             ("oz", 27, [2, 4, 6, 8, 12, 16]), ("lb", 18, [0.5, 1, 1.5, 2])],
    "volume": [("ml", 40, [15, 30, 50, 100, 200, 250, 400]), ("l", 5, [0.5, 1]),
               ("cup", 25, [0.25, 0.5, 1, 1.5, 2]), ("tbsp", 20, [1, 2, 3]), ("tsp", 10, [1, 2])],
    "count": [("pcs", 1, [1, 2, 3, 4, 6])],
    "spice": [("tsp", 55, [0.5, 1, 2]), ("g", 20, [2, 5, 10]), ("tbsp", 25, [1, 2])],
}
# Recipes from metric sources already use g / ml / pcs; the others mix cups, ounces, spoons.
_METRIC_CHOICES: dict[str, list[tuple[str, int, list[float]]]] = {
    "mass": [("g", 1, [50, 100, 150, 200, 250, 300, 400, 500])],
    "volume": [("ml", 1, [15, 30, 50, 100, 200, 250, 400])],
    "count": [("pcs", 1, [1, 2, 3, 4, 6])],
    "spice": [("g", 1, [2, 5, 10])],
}
METRIC_SOURCE_SHARE = 0.55
STALE_HINT_SHARE = 0.15
_ADJECTIVES = [
    "Smoky", "Crispy", "Slow-Cooked", "Spiced", "Golden", "Rustic", "Herby", "Zesty", "Creamy",
    "Sticky", "Charred", "Braised", "Roasted", "Fiery", "Honeyed", "Garlicky", "Sunday", "Quick",
    "Classic", "Grandma's", "Street", "Harvest", "Coastal", "Midnight",
]
_DISHES: dict[str, list[str]] = {
    "Beef": ["Beef Stew", "Beef Stir-Fry", "Steak Pie", "Meatballs", "Beef Chilli", "Brisket"],
    "Breakfast": ["Pancakes", "Omelette", "Hash", "Porridge", "Breakfast Burrito"],
    "Chicken": ["Chicken Curry", "Chicken Traybake", "Chicken Skewers", "Chicken Soup", "Fried Chicken", "Chicken Pie"],
    "Dessert": ["Tart", "Cake", "Pudding", "Crumble", "Cheesecake", "Brownies", "Custard"],
    "Goat": ["Goat Curry", "Goat Stew", "Goat Tagine"],
    "Lamb": ["Lamb Tagine", "Lamb Chops", "Lamb Kofta", "Shepherd's Pie"],
    "Miscellaneous": ["Dumplings", "Flatbread", "Fritters", "Pickles"],
    "Pasta": ["Lasagne", "Carbonara", "Ragu", "Pasta Bake", "Noodles"],
    "Pork": ["Pork Belly", "Pulled Pork", "Pork Chops", "Sausage Casserole"],
    "Seafood": ["Fish Pie", "Prawn Curry", "Fish Tacos", "Seafood Paella", "Grilled Salmon", "Chowder"],
    "Starter": ["Soup", "Bruschetta", "Salad", "Pate"],
    "Vegan": ["Buddha Bowl", "Lentil Dahl", "Tofu Scramble"],
    "Vegetarian": ["Risotto", "Frittata", "Vegetable Curry", "Stuffed Peppers", "Gratin", "Shakshuka"],
}


def _weighted(rng: random.Random, options: dict[str, int]) -> str:
    names = list(options)
    return rng.choices(names, weights=[options[n] for n in names])[0]


def _ingredient_line(rng: random.Random, name: str, metric_source: bool) -> dict[str, Any]:
    if rng.random() < 0.035:  # "to taste": no quantity, no unit
        return {"name": name, "quantity": None, "unit": None}
    kind = INGREDIENTS[name][0]
    choices = _METRIC_CHOICES[kind] if metric_source else _UNIT_CHOICES[kind]
    unit, _, amounts = rng.choices(choices, weights=[c[1] for c in choices])[0]
    return {"name": name, "quantity": rng.choice(amounts), "unit": unit}


def generate_recipe_fixtures() -> dict[str, Any]:
    rng = random.Random(FIXTURE_SEED)
    ids = rng.sample(range(52000, 53990), sum(CATEGORIES.values()))
    popularity = {n: w for n, (_, w) in INGREDIENTS.items()}
    recipes: list[dict[str, Any]] = []
    names: set[str] = set()
    k = 0
    for category, size in CATEGORIES.items():
        for _ in range(size):
            cuisine = None if rng.random() < 0.04 else _weighted(rng, CUISINES)
            while True:
                name = f"{rng.choice(_ADJECTIVES)} {(cuisine or 'House')} {rng.choice(_DISHES[category])}"
                if name not in names:
                    names.add(name)
                    break
            chosen: list[str] = []
            for _ in range(rng.randint(5, 9)):
                ing = _weighted(rng, {n: w for n, w in popularity.items() if n not in chosen})
                chosen.append(ing)
            metric_source = rng.random() < METRIC_SOURCE_SHARE
            recipes.append({
                "id": str(ids[k]), "name": name, "category": category, "cuisine": cuisine,
                "ingredients": [_ingredient_line(rng, n, metric_source) for n in chosen],
            })
            k += 1
    recipes.sort(key=lambda r: r["id"])
    listings: dict[str, dict[str, Any]] = {}
    for key, members in sorted(_listing_members(recipes).items()):
        if len(members) < 3:
            continue
        delta = 0
        if rng.random() < STALE_HINT_SHARE:
            delta = rng.choice([d for d in (-3, -2, -1, 1, 2, 3) if len(members) + d > 0])
        listings[key] = {
            "overlap": rng.random() < 0.4,  # page k+1 repeats the last dish of page k
            "sentinel": rng.random() < 0.25,  # an empty last page whose next_page is itself
            "hint_delta": delta,  # total_hint = true count + delta (a stale index)
        }
    return {
        "version": "sim-v1",
        "page_size": PAGE_SIZE,
        "units": {u: {"metric": m, "factor": f} for u, (m, f) in UNITS.items()},
        "listings": listings,
        "recipes": recipes,
    }


def _listing_members(recipes: list[dict[str, Any]]) -> dict[str, list[str]]:
    out: dict[str, list[str]] = {}
    for r in recipes:
        out.setdefault(f"category:{r['category']}", []).append(r["id"])
        if r["cuisine"]:
            out.setdefault(f"cuisine:{r['cuisine']}", []).append(r["id"])
        for ing in {i["name"] for i in r["ingredients"]}:
            out.setdefault(f"ingredient:{ing}", []).append(r["id"])
    return out


def listing_members(recipes: list[dict[str, Any]]) -> dict[str, list[str]]:
    """listing key ("category:Dessert") -> member recipe ids in id order."""
    return _listing_members(sorted(recipes, key=lambda r: r["id"]))
