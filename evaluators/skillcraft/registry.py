"""The family registry: a plain mapping from family name to its `FamilySpec`.

Adding a family is one import and one entry here (docs/skillcraft_sim.md §2); nothing registers
itself on import. Family subpackages import only the generic modules, never this one.
"""

from __future__ import annotations

from evaluators.skillcraft import catfacts, pokemon, recipe, weather, worldbank
from evaluators.skillcraft.family import FamilySpec

FAMILIES: dict[str, FamilySpec] = {
    "catfacts": catfacts.FAMILY,
    "pokemon": pokemon.FAMILY,
    "recipe": recipe.FAMILY,
    "weather": weather.FAMILY,
    "worldbank": worldbank.FAMILY,
}


def family_names() -> tuple[str, ...]:
    return tuple(sorted(FAMILIES))


def get_family(name: str) -> FamilySpec:
    """The family's spec, or a ValueError naming the known families."""
    spec = FAMILIES.get(name) if isinstance(name, str) else None
    if spec is None:
        raise ValueError(f"unknown SkillCraft-sim family {name!r}; known: {', '.join(family_names())}")
    return spec
