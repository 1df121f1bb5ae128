"""The catfacts family's shipped seed skill and the hand-written reference skill (calibration only:
it instructs every behaviour and stays short)."""

from __future__ import annotations

from typing import Any

SEED_SKILL: dict[str, Any] = {
    "kind": "skill",
    "name": "cat-facts-collector",
    "description": "Collects cat facts and trivia from the cat-facts API and writes them as a JSON file.",
    "when_to_use": "Use for tasks that ask for a few facts about cats.",
    "steps": [
        "Read the task and note how many facts it wants and which ones.",
        "Call get_facts and follow next_page_url until you have enough facts that fit the task.",
        "Write the JSON to the requested output file with write_file, then call claim_done.",
    ],
    "pitfalls": ["If a call returns rate_limited, wait and retry it."],
}

# Hand-written "good" skill: instructs every behaviour, stays short. Used only for calibration.
REFERENCE_SKILL: dict[str, Any] = {
    "kind": "skill",
    "name": "cat-facts-collector",
    "description": "Builds lists of distinct cat facts and feline trivia from the paginated cat-facts API, "
                   "filtered by a word or by length, with counts and average lengths.",
    "when_to_use": "Use for cat facts tasks that ask for the first N distinct facts that mention a word or fit a "
                   "length range in characters, with their lengths, count or average length.",
    "steps": [
        "Walk the get_facts listing in order; never sample get_random_fact, its facts come in no order.",
        "Follow next_page_url and keep reading pages until you have enough facts.",
        "Decode HTML entities such as &#39; and &quot; into plain characters.",
        "If a listed fact is truncated (ends with …), fetch it with get_fact for the full text.",
        "Measure each length yourself from the plain text; never trust the length field.",
        "Match the keyword as a whole word in any case, not as a substring.",
        "Deduplicate: keep each fact once, ignoring case, spacing and end punctuation.",
        "Once you have enough facts, make no further calls: extra calls are unneeded.",
        "Write the JSON to the requested output file with write_file, validate it against the task, then call "
        "claim_done.",
    ],
    "pitfalls": ["If a call returns rate_limited, wait and retry it instead of skipping it."],
}
