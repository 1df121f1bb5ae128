"""Building a family's cases and fixture text: the part of every family's `cases.py` that does not
depend on the family (docs/skillcraft_sim.md §2.3, §3).

A family says what one case asks for — `pick(scale, r, seen)`, drawing with `Casebook.rng` — and
how it is worded and answered (its task statement and ground truth); `Casebook.splits` lays the
cases out on the shared scales and splits of `family.py`: 10 per scale, ids
`<family>/<scale>/<letter>NN`, cases 02, 05, 08 of m2 and h1 critical, metadata = family, scale,
generator version and the task parameters as canonical JSON. `fixtures_text` writes a family's
fixtures.json with one record a line. Never imports a family.
"""

from __future__ import annotations

import json
import random
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from evaluators.skillcraft.family import (
    CASES_PER_SCALE,
    CRITICAL_CASES,
    GENERATOR_VERSION,
    SPLIT_SCALES,
)
from evaluators.skillcraft.rng import derived_rng
from gepa_lab.core.contracts import canonical_json

Params = dict[str, Any]
ATTEMPTS = 10_000  # draws per case before the generator gives up (a generator bug, never data)


@dataclass(frozen=True)
class Casebook:
    """One family's case layout: its name, the letter of its case ids (default: the name's first
    letter) and the generator version its draws and metadata carry."""

    family: str
    letter: str = ""
    version: str = GENERATOR_VERSION

    def rng(self, scale: str, r: int) -> random.Random:
        """The draws of case `r` of `scale`: fixed by (family, version, scale, r) alone."""
        return derived_rng("skillcraft-sim", self.family, self.version, scale, r)

    def case_id(self, scale: str, r: int) -> str:
        return f"{self.family}/{scale}/{self.letter or self.family[0]}{r:02d}"

    def splits(self, pick: Callable[[str, int, set[Any]], Params], statement: Callable[[Params, int], str],
               truth: Callable[[Params], Any]) -> dict[str, list[dict[str, Any]]]:
        """split -> case rows (Case.from_dict form), 10 cases per scale.

        `pick(scale, r, seen)` -> the task parameters of case r (1…10) of a scale; `seen` holds
        what the scale's earlier cases claimed (`claim`). `statement(params, r)` -> the task text
        (r varies the wording); `truth(params)` -> the artifact a flawless agent writes."""
        splits: dict[str, list[dict[str, Any]]] = {}
        for split, scales in SPLIT_SCALES.items():
            rows = []
            for scale in scales:
                seen: set[Any] = set()
                for r in range(1, CASES_PER_SCALE + 1):
                    params = pick(scale, r, seen)
                    rows.append({
                        "id": self.case_id(scale, r),
                        "input": statement(params, r),
                        "expected": canonical_json(truth(params)),
                        "critical": r in CRITICAL_CASES.get(scale, ()),
                        "metadata": {"family": self.family, "scale": scale, "generator": self.version,
                                     "task": canonical_json(params)},
                    })
            splits[split] = rows
        return splits


def no_case(scale: str) -> RuntimeError:
    """What `pick` raises when ATTEMPTS draws found no new case for the scale (a generator bug)."""
    return RuntimeError(f"cannot build a {scale} case")


def claim(seen: set[Any], key: Any) -> bool:
    """True, remembering `key`, unless an earlier case of the scale claimed it (no repeats)."""
    if key in seen:
        return False
    seen.add(key)
    return True


def fixtures_text(fixtures: dict[str, Any], lists: tuple[str, ...]) -> str:
    """The family's fixtures.json: sorted-key JSON with one record per line in each of `lists`
    (written after the other keys, in that order) — small diffs, still plain JSON."""
    head = {k: v for k, v in fixtures.items() if k not in lists}
    text = json.dumps(head, ensure_ascii=False, sort_keys=True, indent=1)[:-2]
    for key in lists:
        body = ",\n".join("  " + json.dumps(x, ensure_ascii=False, sort_keys=True) for x in fixtures[key])
        text += f',\n "{key}": [\n' + body + "\n ]"
    return text + "\n}\n"
