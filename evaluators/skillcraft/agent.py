"""Family-agnostic machinery of the simulated agent: behaviour probabilities, tool-call
bookkeeping, token / latency accounting and the tool-call limit.

Tokens follow how a tool-using LM agent is billed: every turn re-sends the system prompt, the
task, the loaded skill and everything the tools returned so far. So tokens grow with the skill
length and super-linearly with tool calls, and a repeated-call loop is the catastrophic tail.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from evaluators.skillcraft.families import Behaviour, ToolCall
from evaluators.skillcraft.rng import Draws
from evaluators.skillcraft.skill import SkillProfile


@dataclass(frozen=True)
class AgentConfig:
    max_tool_calls: int = 80  # like the SkillCraft runs' 80 tool iterations
    system_tokens: int = 1400  # system prompt + tool schemas
    unloaded_skill_tokens: int = 40  # a skill that is only listed, not loaded
    turn_output_tokens: int = 90
    turn_latency_ms: float = 650.0
    ms_per_1k_context_tokens: float = 30.0


SLIP_RIGHT = 0.5


class OutOfToolCalls(Exception):
    """The agent hit the tool-call limit: the run ends without further work."""


def behaviour_probability(
    b: Behaviour, level: int, loaded: bool, pos: frozenset[str], anti: frozenset[str], adherence: float
) -> float:
    """P(behaviour done right) for one run. Skill text moves this threshold, never the draw."""
    p0 = b.baseline(level)
    if not loaded:
        return p0
    if b.name in pos:
        gain = (b.top - 0.002 * level - p0) * adherence
        if b.name in anti:  # contradictory guidance: the agent half-follows it
            gain *= 0.5
        return max(p0, p0 + gain)
    if b.name in anti:
        return p0 * 0.3
    # A long skill crowds the context: even unrelated habits slip a little.
    return max(0.01, p0 - 0.12 * (1.0 - adherence))


class AgentRun:
    """State of one simulated run: decisions, calls, tokens, latency."""

    def __init__(
        self,
        behaviours: tuple[Behaviour, ...],
        profile: SkillProfile,
        draws: Draws,
        *,
        level: int,
        entities: frozenset[str],
        load_probability: float,
        task_tokens: int,
        config: AgentConfig,
    ) -> None:
        self.draws = draws
        self.config = config
        self.loaded = draws.below("load", load_probability)
        pos, anti = profile.guidance(entities) if self.loaded else (frozenset(), frozenset())
        self.p = {
            b.name: behaviour_probability(b, level, self.loaded, pos, anti, profile.adherence)
            for b in behaviours
        }
        skill_tokens = profile.skill_tokens if self.loaded else config.unloaded_skill_tokens
        self.base_tokens = config.system_tokens + task_tokens + skill_tokens
        self.context_tokens = 0  # tool results accumulated in the conversation
        self.tokens = 0
        self.latency_ms = 0.0
        self.calls: list[ToolCall] = []
        self.counts: dict[str, int] = {}  # free-form counters for feedback notes

    def right(self, behaviour: str, key: str = "") -> bool:
        """Is the behaviour done right here? A per-run habit drawn with P = self.p[behaviour];
        when the habit is missing, each occurrence (`key`: a listing, an error) still goes
        right by chance with P = SLIP_RIGHT. Habits keep a well-guided agent from compounding
        many small per-occurrence risks."""
        if self.draws.below(f"b:{behaviour}", self.p[behaviour]):
            return True
        return bool(key) and self.draws.below(f"slip:{behaviour}:{key}", SLIP_RIGHT)

    def bump(self, counter: str, n: int = 1) -> None:
        self.counts[counter] = self.counts.get(counter, 0) + n

    def turn(self, output_tokens: int | None = None) -> None:
        out = self.config.turn_output_tokens if output_tokens is None else output_tokens
        context = self.base_tokens + self.context_tokens
        self.tokens += context + out
        self.latency_ms += self.config.turn_latency_ms + context * self.config.ms_per_1k_context_tokens / 1000

    def wait(self, ms: float) -> None:
        self.latency_ms += ms

    def call(
        self,
        tool: str,
        args: dict[str, Any],
        fn: Callable[[], tuple[Any, str, int]],
        output_tokens: int | None = None,
    ) -> Any:
        """One tool call (one model turn). `fn` returns (result, status, result_tokens)."""
        if len(self.calls) >= self.config.max_tool_calls:
            raise OutOfToolCalls
        result, status, result_tokens = fn()
        self.calls.append(ToolCall(tool, json.dumps(args, sort_keys=True, separators=(",", ":")), status))
        self.turn(output_tokens)
        self.context_tokens += result_tokens
        return result
