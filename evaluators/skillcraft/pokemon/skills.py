"""The pokemon family's shipped seed skill and the hand-written reference skill (calibration only:
it instructs every behaviour and stays short)."""

from __future__ import annotations

from typing import Any

SEED_SKILL: dict[str, Any] = {
    "kind": "skill",
    "name": "pokemon-evolution-reporter",
    "description": "Looks up a Pokémon's evolution chain in the PokéAPI and writes its members' stats as a JSON file.",
    "when_to_use": "Use for Pokémon tasks that ask about an evolution chain.",
    "steps": [
        "Read the task and note the species and the move types it asks about.",
        "Call get_species for the species and get_evolution_chain for its chain.",
        "Call get_pokemon for every member and add up its base stats.",
        "Call get_type for the move types to see how effective they are.",
        "Write the JSON to the requested output file with write_file, then call claim_done.",
    ],
    "pitfalls": ["If a call returns rate_limited, wait and retry it."],
}

# Hand-written "good" skill: instructs every behaviour, stays short. Used only for calibration.
REFERENCE_SKILL: dict[str, Any] = {
    "kind": "skill",
    "name": "pokemon-evolution-reporter",
    "description": "Builds Pokémon evolution chain reports from the PokéAPI: every member's default Pokémon, "
                   "types, base stat total and how effective move types are against it.",
    "when_to_use": "Use for Pokémon tasks about an evolution chain, its species' base stats or types, or the "
                   "type effectiveness of moves against them.",
    "steps": [
        "Follow every branch of the evolution chain: each entry of evolves_to is a member.",
        "If get_pokemon finds nothing for a species, use the default variety from get_species; never repeat the "
        "identical call.",
        "Sum the six current base stats; ignore past_stats from older generations.",
        "Read the move type's attacking side: double_damage_to, half_damage_to, no_damage_to.",
        "For dual types multiply the factors of both types.",
        "An immunity (no_damage_to) makes the multiplier zero.",
        "Only call get_species for the task's species; more of those calls are unneeded.",
        "Write the JSON to the requested output file with write_file, validate it against the task, then call "
        "claim_done.",
    ],
    "pitfalls": ["If a call returns rate_limited, wait and retry it instead of skipping it."],
}
