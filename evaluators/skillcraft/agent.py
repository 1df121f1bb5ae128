"""Family-agnostic machinery of the simulated agent: behaviour probabilities, tool-call
bookkeeping, token / latency accounting, the tool-call limit, the moves every family's agent
shares (retrying a transient error, repeating a call in a loop, writing the artifact) and one
episode from start to finish (`simulate`; the family's hooks solve the task and validate).

Tokens follow how a tool-using LM agent is billed: every turn re-sends the system prompt, the
task, the loaded skill and everything the tools returned so far. So tokens grow with the skill
length and super-linearly with tool calls, and a repeated-call loop is the catastrophic tail.
See docs/skillcraft_sim.md §4.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable
from dataclasses import dataclass, fields
from functools import partial
from typing import Any

from evaluators.skillcraft.family import Behaviour, Episode, FamilySpec, Task, ToolCall, best
from evaluators.skillcraft.rng import Draws
from evaluators.skillcraft.skill import SkillProfile
from evaluators.skillcraft.tools import ToolReply, claim_done, write_file
from gepa_lab import ConfigError


@dataclass(frozen=True)
class AgentConfig:
    """The simulated agent's limits and costs (`evaluator.agent_config`), checked on construction:
    a nonsense value would score every case 0 instead of failing."""

    max_tool_calls: int = 80  # like the SkillCraft runs' 80 tool iterations
    system_tokens: int = 1400  # system prompt + tool schemas
    unloaded_skill_tokens: int = 40  # a skill that is only listed, not loaded
    turn_output_tokens: int = 90
    turn_latency_ms: float = 650.0
    ms_per_1k_context_tokens: float = 30.0

    def __post_init__(self) -> None:
        for f in fields(self):
            value, least = getattr(self, f.name), 1 if f.name == "max_tool_calls" else 0
            kinds = (int,) if f.type == "int" else (int, float)
            if isinstance(value, bool) or not isinstance(value, kinds) or not math.isfinite(value) or value < least:
                kind = "an integer" if f.type == "int" else "a finite number"
                raise ConfigError(f"agent_config.{f.name} must be {kind} >= {least}, got {value!r}; fix "
                                  f"evaluator.agent_config.{f.name} or leave it out (default {f.default})")


SLIP_RIGHT = 0.5  # a missing habit still goes right on one occurrence with this probability
NOTICE_LOOP_P = 0.06  # chance per repeated call that the agent notices it is looping
MAX_RETRIES = 3


class OutOfToolCalls(Exception):
    """The agent hit the tool-call limit: the run ends without further work."""


def behaviour_probability(
    b: Behaviour, level: int, loaded: bool, pos: frozenset[str], anti: frozenset[str], adherence: float
) -> float:
    """P(behaviour done right) for one run. Skill text moves this threshold, never the draw."""
    p0 = min(0.999, max(0.01, b.base - b.slope * level))  # without guidance
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

    def __init__(self, spec: FamilySpec, task: Task, profile: SkillProfile, draws: Draws,
                 config: AgentConfig) -> None:
        """A run of one task: the skill is loaded or not, then the agent plans (one turn)."""
        self.spec = spec
        self.draws = draws
        self.config = config
        self.profile = profile
        self.loaded = draws.below("load", profile.load_probability(spec.topic, task.task_words))
        pos, anti = profile.guidance(task.entities) if self.loaded else (frozenset(), frozenset())
        self.p = {b.name: behaviour_probability(b, task.level, self.loaded, pos, anti, profile.adherence)
                  for b in spec.behaviours}
        skill_tokens = profile.skill_tokens if self.loaded else config.unloaded_skill_tokens
        self.base_tokens = config.system_tokens + task.task_tokens + skill_tokens
        self.context_tokens = 0  # tool results accumulated in the conversation
        self.tokens = 0
        self.latency_ms = 0.0
        self.calls: list[ToolCall] = []
        self.counts: dict[str, int] = {}  # free-form counters for feedback notes
        self.turn()  # planning

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

    def call(self, tool: str, args: dict[str, Any], fn: Callable[[], ToolReply],
             output_tokens: int | None = None) -> Any:
        """One tool call (one model turn). `fn` returns (result, status, result_tokens)."""
        if len(self.calls) >= self.config.max_tool_calls:
            raise OutOfToolCalls
        result, status, result_tokens = fn()
        self.calls.append(ToolCall(tool, json.dumps(args, sort_keys=True, separators=(",", ":")), status))
        self.turn(output_tokens)
        self.context_tokens += result_tokens
        return result

    # -- moves every family's agent makes ------------------------------------------------------
    def ask(self, tools: Any, key: str, tool: str, **args: Any) -> dict[str, Any] | None:
        """Call the tools' method `tool` with these arguments (keyword = tool parameter); on
        `rate_limited` retry only while retry_transient_errors holds for the attempt (`key`: the
        call's occurrence). Returns the result, or None for a skipped error or another error."""
        fn = partial(getattr(tools, tool), **args)
        for attempt in range(MAX_RETRIES + 1):
            res = self.call(tool, args, fn)
            if "error" not in res:
                return res  # type: ignore[no-any-return]
            if res["error"] != "rate_limited":
                return None
            self.bump("rate_limited")
            if attempt == MAX_RETRIES or not self.right("retry_transient_errors", f"{key}:{attempt}"):
                break
            self.bump("retried")
            self.latency_ms += float(res.get("retry_after_ms", 0.0))  # the wait
        self.bump("not_retried")
        return None

    def repeat_until_noticed(self, tools: Any, key: str, tool: str, **args: Any) -> None:
        """The loop: re-send the identical call of the tools' method `tool` until the agent notices
        (or the call limit ends the run with OutOfToolCalls)."""
        k = 0
        while not self.draws.below(f"notice:{key}:{k}", NOTICE_LOOP_P):
            self.call(tool, args, partial(getattr(tools, tool), **args))
            k += 1

    def write_artifact(self, output_file: str, draft: dict[str, Any]) -> tuple[dict[str, Any] | None, str, str]:
        """Write the draft (or botch it). Returns (artifact or None, its text, missing hint)."""
        text = json.dumps(draft, ensure_ascii=False, separators=(",", ":"))
        right = self.right("write_artifact")
        if not right and not self.draws.below("write:variant", 0.5):
            self.turn(len(text) // 4)
            return None, "", (f"the agent returned the JSON in its final message instead of writing "
                              f"{output_file} with write_file")
        path = output_file if right else "output.json"
        self.call("write_file", {"path": path}, lambda: write_file(path, text), output_tokens=len(text) // 4)
        return (draft, text, "") if right else (None, "", f"the agent wrote output.json instead of the required {output_file}")

    def finish(self, output_file: str, draft: dict[str, Any]) -> Episode:
        """Write the artifact, call claim_done, and package the episode."""
        artifact, text, missing = self.write_artifact(output_file, draft)
        try:
            self.call("claim_done", {}, claim_done)
        except OutOfToolCalls:  # the limit struck at the very last call: the file may exist
            return self.out_of_calls(output_file, artifact, text)
        return self.episode(artifact, text, claim_done=True, missing_hint=missing)

    def out_of_calls(self, output_file: str, artifact: dict[str, Any] | None = None, text: str = "") -> Episode:
        """The episode of a run that hit the tool-call limit."""
        error = f"stopped at the {self.config.max_tool_calls} tool-call limit"
        return self.episode(artifact, text if artifact is not None else "", claim_done=False, agent_error=error,
                            missing_hint=f"the agent {error} before writing {output_file}")

    def episode(self, artifact: dict[str, Any] | None, text: str, **outcome: Any) -> Episode:
        """The run's episode; its notes are feedback lines on transient errors (what a skipped one
        lost) and on unneeded calls."""
        c, notes = self.counts, []
        if c.get("rate_limited"):
            notes.append(f"Tool errors: {c['rate_limited']} rate_limited response(s); {c.get('retried', 0)} retried, "
                         f"{c.get('not_retried', 0)} not retried ({self.spec.lost}).")
        if c.get("wasted"):
            notes.append(self.spec.waste_note.format(n=c["wasted"]))
        return Episode(artifact=artifact, artifact_text=text, calls=self.calls, tokens=self.tokens,
                       latency_ms=self.latency_ms, loaded=self.loaded, notes=notes, **outcome)


def misread(values: dict[str, Any], draws: Draws, purpose: str, fix: bool) -> str | None:
    """The best of `values` (family.best) as an agent reads it off its draft: before validating
    (`fix`), with P 0.15 another one."""
    top = best(values)
    if not fix and top is not None and len(values) > 1 and draws.below(purpose, 0.15):
        return next(n for n in values if n != top)
    return top


def simulate(spec: FamilySpec, world: Any, task: Any, profile: SkillProfile, draws: Draws,
             config: AgentConfig) -> Episode:
    """One episode: the family's agent solves the task with its tools (`hooks.solve`), checks its
    draft if it validates (`hooks.validate`), writes it and claims done."""
    tools = spec.hooks.Tools(world, draws, task.fault_rate)
    run = AgentRun(spec, task, profile, draws, config)
    try:
        draft = spec.hooks.solve(run, tools, task)
        if run.right("validate_before_finishing"):
            run.turn()  # re-reading the draft
            spec.hooks.validate(run, draft, task)
        return run.finish(task.output_file, draft)
    except OutOfToolCalls:
        return run.out_of_calls(task.output_file)

