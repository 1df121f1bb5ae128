"""Common random numbers for the simulator.

Every random draw is a pure function of (seed, case id, purpose), computed with hashlib, so a
parent and a child scored with the same seed face the same luck on every decision; only the
artifact-dependent *thresholds* differ. Python's salted `hash()` is never used.
See docs/skillcraft_sim.md §7.
"""

from __future__ import annotations

import hashlib
import random

_SCALE = float(2**64)


class Draws:
    """Uniform draws in [0, 1) keyed by purpose, for one (seed, case id)."""

    __slots__ = ("_base",)

    def __init__(self, seed: int, case_id: str) -> None:
        # The prefix hash is computed once; each draw copies it (cheap) and adds the purpose.
        self._base = hashlib.blake2b(f"{int(seed)}\x1f{case_id}\x1f".encode(), digest_size=8)

    def u(self, purpose: str) -> float:
        h = self._base.copy()
        h.update(purpose.encode())
        return int.from_bytes(h.digest(), "big") / _SCALE

    def below(self, purpose: str, p: float) -> bool:
        """True with probability p (monotone in p for a fixed purpose: the CRN coupling)."""
        return self.u(purpose) < p


def derived_rng(*parts: object) -> random.Random:
    """A `random.Random` seeded from the sha256 of the parts (stable across processes)."""
    text = "\x1f".join(str(p) for p in parts)
    return random.Random(int.from_bytes(hashlib.sha256(text.encode()).digest()[:8], "big"))
