"""The tools contract every family's local "API" follows.

A tool is a plain function over the family's fixtures that returns a `ToolReply`:
(result dict, status, result_tokens). `status` is one of ok | empty | rate_limited | not_found |
error | written; `result_tokens` is what the result adds to the agent's context. An error result
carries an `"error"` key (`"rate_limited"` ones also `"retry_after_ms"`).

Transient faults are seeded draws keyed by (tool, arguments, attempt number) — never by call
order — so a parent and a child scored with one seed meet the same faults (docs/skillcraft_sim.md
§3.2, §7). `write_file` and `claim_done` are the same for every family.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Generic, TypeVar

from evaluators.skillcraft.rng import Draws

ToolReply = tuple[dict[str, Any], str, int]
RETRY_AFTER_MS = 800.0
W = TypeVar("W")


class Api(Generic[W]):
    """One agent run's view of a family's API (its `Tools`): the world, the run's draws and its
    seeded transient faults with their attempt counters."""

    def __init__(self, world: W, draws: Draws, fault_rate: float) -> None:
        self.world = world
        self.draws = draws
        self.fault_rate = fault_rate
        self.attempts: dict[str, int] = {}

    def fault(self, signature: str) -> bool:
        """Does this attempt of the call named `signature` fail transiently?"""
        attempt = self.attempts.get(signature, 0)
        self.attempts[signature] = attempt + 1
        return self.fault_rate > 0 and self.draws.below(f"fault:{signature}:{attempt}", self.fault_rate)

    def serve(self, signature: str, reply: Callable[[], ToolReply]) -> ToolReply:
        """`reply()`, unless this attempt of the call named `signature` fails transiently."""
        return rate_limited() if self.fault(signature) else reply()


def rate_limited() -> ToolReply:
    return {"error": "rate_limited", "retry_after_ms": RETRY_AFTER_MS}, "rate_limited", 30


def or_not_found(result: dict[str, Any] | None, tokens: Callable[[dict[str, Any]], int]) -> ToolReply:
    """`result` (status ok, `tokens(result)` tokens), or a not_found error when there is none."""
    return (result, "ok", tokens(result)) if result is not None else ({"error": "not_found"}, "not_found", 20)


def write_file(path: str, content: str) -> ToolReply:
    return {"path": path, "bytes": len(content.encode())}, "written", 20


def claim_done() -> ToolReply:
    return {"ok": True}, "ok", 10

