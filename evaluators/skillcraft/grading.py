"""Grading a run: the SkillCraft score and its quality / efficiency parts (§5), and the feedback
and trace text a reflector reads (§6, docs/skillcraft_sim.md).

q = share of rubric checks passed; pass = artifact written and every critical check passed;
score = 0.79·q on fail, min(1, 0.80 + 0.19·q + 0.01·eff) on pass, eff = 1 − min(1, tokens/budget).
The feedback mirrors the SkillCraft optimizer's: the official result and failed checks in words,
agent errors and tool-error notes, an efficiency line, up to 8 exactly repeated tool calls and a
missing-artifact hint. The trace is JSON with a bounded tool-call list.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Mapping
from typing import Any

from evaluators.skillcraft.family import Check, Episode, FamilySpec

EFFICIENCY_WEIGHT = 0.01
MAX_FAILED_LINES = 12
MAX_REPEATED = 8
MAX_TRACE_CALLS = 80


def efficiency(tokens: float, token_budget: int) -> float:
    return 1.0 - min(1.0, tokens / token_budget)


def score_of(checks: list[Check], written: bool, tokens: int, token_budget: int) -> tuple[float, float, bool]:
    """(score, quality, passed) exactly as the SkillCraft optimizer computes them."""
    quality = sum(c.passed for c in checks) / len(checks) if checks else 0.0
    passed = written and all(c.passed for c in checks if c.critical)
    eff = efficiency(tokens, token_budget)
    score = min(1.0, 0.80 + 0.19 * quality + EFFICIENCY_WEIGHT * eff) if passed else 0.79 * quality
    return score, quality, passed


def efficiency_part(objectives: Mapping[str, float], token_budget: int) -> float:
    """The share of a score that comes from token efficiency (0 on a failed run); the rest of
    the score is its quality part."""
    if not objectives.get("passed"):
        return 0.0
    return EFFICIENCY_WEIGHT * efficiency(objectives["agent_tokens"], token_budget)


def grade_episode(spec: FamilySpec, case_id: str, task: Any, episode: Episode,
                  token_budget: int) -> tuple[float, float, bool, str]:
    """(score, quality, passed, feedback) of one episode under the family's rubric."""
    checks = spec.grade(task, episode.artifact)
    if not checks:  # a family bug, not a task failure
        raise RuntimeError(f"family {spec.name!r} graded case {case_id!r} with no checks")
    score, quality, passed = score_of(checks, episode.artifact is not None, episode.tokens, token_budget)
    return score, quality, passed, render_feedback(episode, checks, quality, passed, token_budget)


def render_feedback(episode: Episode, checks: list[Check], quality: float, passed: bool,
                    token_budget: int) -> str:
    lines = [f"Official result: {'PASSED' if passed else 'FAILED'}; quality {quality:.2f} "
             f"({sum(c.passed for c in checks)}/{len(checks)} checks passed)"
             + ("; a critical check failed" if not passed and episode.artifact is not None else "") + "."]
    if failed := [c for c in checks if not c.passed and c.message]:
        lines += ["Failed checks:", *(f"- {'[critical] ' if c.critical else ''}{c.message}" for c in failed[:MAX_FAILED_LINES])]
        if len(failed) > MAX_FAILED_LINES:
            lines.append(f"- … and {len(failed) - MAX_FAILED_LINES} more failed check(s)")
    if episode.agent_error:
        lines.append(f"Agent error: {episode.agent_error}.")
    lines.extend(episode.notes)
    share = episode.tokens / token_budget if token_budget else 0.0
    lines.append(f"Efficiency: {episode.tokens:,} agent tokens ({share:.0%} of the {token_budget:,}-token budget), "
                 f"{len(episode.calls)} tool calls, claim_done: {'yes' if episode.claim_done else 'no'}, "
                 f"skill loaded: {'yes' if episode.loaded else 'no'}.")
    repeats = Counter((c.tool, c.args) for c in episode.calls)
    if top := [(k, n) for k, n in repeats.most_common(MAX_REPEATED) if n > 1]:
        lines += ["Repeated tool calls (exact):", *(f"- {tool} {args} ×{n}" for (tool, args), n in top)]
    if episode.artifact is None:
        lines.append(f"Missing artifact: {episode.missing_hint}.")
    return "\n".join(lines)


def render_trace(episode: Episode, skill_name: str, output_file: str) -> str:
    calls = [{"tool": c.tool, "args": json.loads(c.args), "status": c.status} for c in episode.calls[:MAX_TRACE_CALLS]]
    trace = {"tool_calls": calls, "tool_calls_total": len(episode.calls),
             "tool_calls_truncated": len(episode.calls) > MAX_TRACE_CALLS,
             "loaded_skills": [skill_name] if episode.loaded else [], "claim_done": episode.claim_done,
             "agent_tokens": episode.tokens, "agent_error": episode.agent_error,
             "artifact_path": output_file if episode.artifact is not None else None}
    return json.dumps(trace, ensure_ascii=False, separators=(",", ":"))
