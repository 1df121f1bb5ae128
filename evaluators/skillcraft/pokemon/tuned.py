"""The tuned reflector's pokemon vocabulary (`reflector=tuned`): diagnoses keyed to the pokemon
grader's exact messages and remedies worded for the pokemon behaviours' concepts.

Co-designed with the simulator on purpose — it is the upper reference, not evidence (docs/
skillcraft_sim.md §8). Some remedies are vague and do nothing, a few are over-general rules that
hurt other cases, and over-specific edits copy numbers or names out of `expected`.
"""

from __future__ import annotations

import json
import random
import re
from typing import Any

from evaluators.skillcraft.reflectors.vocabulary import Diagnosis, TunedVocabulary
from evaluators.skillcraft.reflectors.vocabulary import pattern as _re

DIAGNOSES: tuple[Diagnosis, ...] = (
    Diagnosis("artifact", "no output file was written", _re(r"missing artifact|no artifact"), 3.0,
              ("write_file", "write the", "save")),
    Diagnosis("loop", "the agent re-sent a bare species name that has no Pokémon",
              _re(r"get_pokemon \{[^}]*\} ×(?:[4-9]|\d\d)|tool-call limit"), 3.0, ("variety", "form", "default")),
    Diagnosis("members", "chain members were missing", _re(r"chain members missing"), 2.0,
              ("branch", "evolves_to")),
    Diagnosis("past", "older past_stats were summed", _re(r"older past_stats"), 2.0, ("past", "current")),
    Diagnosis("dual", "only the first type was counted", _re(r"second type"), 2.0, ("dual", "both types")),
    Diagnosis("direction", "the chart was read the wrong way round", _re(r"wrong way round"), 2.0,
              ("damage_to", "attacking")),
    Diagnosis("immunity", "immunities were not applied", _re(r"immunity was not applied"), 2.0,
              ("immun", "no_damage")),
    Diagnosis("retry", "rate-limited calls were skipped instead of retried", _re(r"[1-9]\d* not retried"), 1.5,
              ("retry", "rate_limited", "rate limit")),
    Diagnosis("strongest", "the strongest member was wrong", _re(r"strongest is"), 0.5, ("strongest",)),
    Diagnosis("waste", "species were fetched that nobody needed", _re(r"get_species call\(s\) fetched species"),
              0.7, ("get_species", "only")),
)

STEPS: dict[str, tuple[str, ...]] = {
    "artifact": (
        "Always write the final JSON to the requested output file with write_file before claim_done.",
        "Save the result to the exact file name the task gives, using write_file.",
        "Finish by producing the output the task asks for.",
    ),
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
    "retry": (
        "If a call returns rate_limited, wait and retry it (up to 3 times) instead of skipping it.",
        "Retry transient errors; never skip a failed lookup.",
        "Handle tool errors carefully.",
    ),
    "strongest": ("Pick strongest from the computed base stat totals.",),
    "waste": (
        "Only call get_species for the task's species; more of those calls are unneeded.",
        "The chain already names every species; fetch get_pokemon only.",
        "Keep the run short.",
    ),
    "validate": (
        "Before finishing, validate the JSON against the task: every member, total and multiplier.",
        "Re-read the output and check it against the task statement before calling claim_done.",
    ),
}

PITFALLS: dict[str, tuple[str, ...]] = {
    "artifact": ("Printing the JSON in the final message is not enough: write it with write_file.",),
    "loop": ("Repeating get_pokemon with a bare form species name returns not_found every time.",),
    "members": ("Following only the first evolves_to entry drops the other branches.",),
    "past": ("past_stats hold an older generation's values; the current ones are in stats.",),
    "dual": ("Counting only the first type gives wrong multipliers for dual-type Pokémon.",),
    "direction": ("damage_from lists what hurts the move type, not what it hurts.",),
    "immunity": ("Ignoring immunities (no_damage_to) gives 1 where the answer is 0.",),
    "retry": ("Skipping a rate_limited call silently drops a member: retry it.",),
    "strongest": ("strongest must be the member with the highest base stat total.",),
    "waste": ("Fetching every species resource wastes tokens.",),
    "validate": ("Finishing without checking the output against the task lets small mistakes through.",),
}

OVERGENERAL: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("Do not retry failed calls; move on to keep the run short.", ("retry", "rate")),
    ("Never follow a second branch: the first evolves_to entry is enough.", ("branch", "evolves_to")),
    ("Skip rate_limited calls instead of waiting.", ("retry", "rate")),
)

BLOAT: tuple[str, ...] = (
    "Before every tool call, restate the whole task in your own words, enumerate all of its "
    "requirements one by one, re-derive the complete plan from scratch and explain in detail why "
    "this particular call is necessary, so that nothing is ever overlooked at any point of the run.",
    "Throughout the run, maintain a detailed running commentary of your reasoning, noting every "
    "assumption, every intermediate result, every alternative you considered and why you rejected "
    "it, and summarise all of this in full after each step so the reasoning is transparent.",
    "Be thorough, careful and methodical at all times: consider edge cases, think about what could "
    "go wrong with each action, reflect on the quality of your work so far, and keep the overall "
    "goal of producing an excellent, complete and correct chain report firmly in mind.",
    "Remember that quality matters more than speed, that the user expects a professional result, "
    "and that every part of the task deserves the same level of attention, care and scrutiny "
    "regardless of how simple or routine it may appear at first glance.",
)

TASK_WORDS: tuple[tuple[str, str], ...] = (
    ("evolution chain", "evolution chains"),
    ("base_stat_total", "base stat totals"),
    ("move types", "type effectiveness"),
)


def over_specific(rng: random.Random, records: list[dict[str, Any]]) -> str | None:
    """Copy a total or a name out of a record's expected output."""
    found: list[dict[str, Any]] = []
    for rec in records:
        try:
            exp = json.loads(str(rec.get("expected", "")))
            found += [m for m in exp.get("members") or [] if isinstance(m, dict)]
        except (ValueError, TypeError, AttributeError):
            continue
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
