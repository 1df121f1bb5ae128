"""The tuned reflector's pokemon vocabulary (`reflector=tuned`): diagnoses keyed to the pokemon
grader's exact messages and remedies worded for the pokemon behaviours' concepts; its over-specific
edits copy numbers or names out of `expected`. What every family's vocabulary shares, and why
results with it are an upper reference only: reflectors/vocabulary.py.
"""

from __future__ import annotations

import random
import re
from typing import Any

from evaluators.skillcraft.reflectors import vocabulary as shared
from evaluators.skillcraft.reflectors.vocabulary import Diagnosis, TunedVocabulary
from evaluators.skillcraft.reflectors.vocabulary import pattern as _re

DIAGNOSES: tuple[Diagnosis, ...] = (
    shared.ARTIFACT,
    shared.loop_diagnosis("the agent re-sent a bare species name that has no Pokémon", "get_pokemon",
                          ("variety", "form", "default")),
    Diagnosis("members", "chain members were missing", _re(r"chain members missing"), 2.0,
              ("branch", "evolves_to")),
    Diagnosis("past", "older past_stats were summed", _re(r"older past_stats"), 2.0, ("past", "current")),
    Diagnosis("dual", "only the first type was counted", _re(r"second type"), 2.0, ("dual", "both types")),
    Diagnosis("direction", "the chart was read the wrong way round", _re(r"wrong way round"), 2.0,
              ("damage_to", "attacking")),
    Diagnosis("immunity", "immunities were not applied", _re(r"immunity was not applied"), 2.0,
              ("immun", "no_damage")),
    shared.RETRY,
    Diagnosis("strongest", "the strongest member was wrong", _re(r"strongest is"), 0.5, ("strongest",)),
    Diagnosis("waste", "species were fetched that nobody needed", _re(r"get_species call\(s\) fetched species"),
              0.7, ("get_species", "only")),
)

STEPS: dict[str, tuple[str, ...]] = {
    "artifact": shared.ARTIFACT_STEPS,
    "loop": (
        "If get_pokemon finds nothing for a species, use the default variety from get_species.",
        "Some species have only form varieties (deoxys-normal); look up the default form instead of repeating the call.",
        "Be careful with unusual names.",
    ),
    "members": (
        "Follow every branch of the evolution chain: each entry of evolves_to is a member.",
        "A chain can branch (Eevee, Oddish); list all branches.",
        "List the whole chain.",
    ),
    "past": (
        "Sum the six current base stats; ignore past_stats from older generations.",
        "Use the current stats block, never past_stats.",
        "Check the stats.",
    ),
    "dual": (
        "For dual types multiply the factors of both types.",
        "A second type counts too: multiply the effectiveness against each type.",
        "Consider all types.",
    ),
    "direction": (
        "Read the move type's attacking side: double_damage_to, half_damage_to, no_damage_to.",
        "Use damage_to relations of the move type, not its damage_from relations.",
        "Read the chart carefully.",
    ),
    "immunity": (
        "An immunity (no_damage_to) makes the multiplier zero.",
        "An immune type (no_damage_to) means a multiplier of 0, not 0.5.",
        "Remember special cases.",
    ),
    "retry": shared.retry_steps("lookup"),
    "strongest": ("Pick strongest from the computed base stat totals.",),
    "waste": (
        "Only call get_species for the task's species; more of those calls are unneeded.",
        "The chain already names every species; fetch get_pokemon only.",
        "Keep the run short.",
    ),
    "validate": shared.validate_steps("every member, total and multiplier"),
}

PITFALLS: dict[str, tuple[str, ...]] = {
    "artifact": shared.ARTIFACT_PITFALLS,
    "loop": ("Repeating get_pokemon with a bare form species name returns not_found every time.",),
    "members": ("Following only the first evolves_to entry drops the other branches.",),
    "past": ("past_stats hold an older generation's values; the current ones are in stats.",),
    "dual": ("Counting only the first type gives wrong multipliers for dual-type Pokémon.",),
    "direction": ("damage_from lists what hurts the move type, not what it hurts.",),
    "immunity": ("Ignoring immunities (no_damage_to) gives 1 where the answer is 0.",),
    "retry": (shared.retry_pitfall("a member"),),
    "strongest": ("strongest must be the member with the highest base stat total.",),
    "waste": ("Fetching every species resource wastes tokens.",),
    "validate": shared.VALIDATE_PITFALLS,
}

OVERGENERAL: tuple[tuple[str, tuple[str, ...]], ...] = (
    shared.NO_RETRY_RULE,
    ("Never follow a second branch: the first evolves_to entry is enough.", ("branch", "evolves_to")),
    shared.SKIP_RATE_LIMITED_RULE,
)

BLOAT = shared.bloat("chain report")

TASK_WORDS: tuple[tuple[str, str], ...] = (
    ("evolution chain", "evolution chains"),
    ("base_stat_total", "base stat totals"),
    ("move types", "type effectiveness"),
)


def over_specific(rng: random.Random, records: list[dict[str, Any]]) -> str | None:
    """Copy a total or a name out of a record's expected output."""
    found: list[dict[str, Any]] = shared.expected_items(
        records, lambda expected: [m for m in expected.get("members") or [] if isinstance(m, dict)])
    if not found:
        return None
    m = rng.choice(found)
    return rng.choice((
        f"For {m.get('species')}, the base stat total is {m.get('base_stat_total')}.",
        f"Report exactly {len(found)} members.",
        f"For {m.get('species')}, use the Pokémon {m.get('pokemon')}.",
    ))


def names_in_inputs(raw_inputs: str) -> list[str]:
    return sorted(set(re.findall(r"\(species \"([\w-]+)\"\)", raw_inputs)))[:2]


VOCABULARY = TunedVocabulary(
    diagnoses=DIAGNOSES,
    steps=STEPS,
    pitfalls=PITFALLS,
    overgeneral=OVERGENERAL,
    bloat=BLOAT,
    task_words=TASK_WORDS,
    when_templates=(
        "Use for Pokémon tasks about {p} from the PokéAPI.",
        "Use whenever a task asks about Pokémon {p}.",
        "{c} Also use it for Pokémon tasks involving {p}.",
    ),
    description_templates=(
        "Builds Pokémon evolution reports from the PokéAPI, covering {p}.",
        "{c} Covers {p}.",
        "Collects Pokémon species data ({p}) and writes a validated JSON report.",
    ),
    default_phrase="evolution chains, base stats and type effectiveness",
    over_specific=over_specific,
    names_in_inputs=names_in_inputs,
    names_template=" Especially for {names}.",
)
