"""Feedback and trace text: what a reflector reads about one simulated run.

Mirrors the SkillCraft optimizer's feedback: the official result and failed checks in words,
agent errors and tool-error notes, an efficiency line, up to 8 exactly repeated tool calls
and a missing-artifact hint. The trace is JSON with a bounded tool-call list.
See docs/skillcraft_sim.md §6.
"""

from __future__ import annotations

import json
from collections import Counter

from evaluators.skillcraft.family import Check, Episode

MAX_FAILED_LINES = 12
MAX_REPEATED = 8
MAX_TRACE_CALLS = 80


def render_feedback(episode: Episode, checks: list[Check], quality: float, passed: bool,
                    token_budget: int) -> str:
    n_ok = sum(c.passed for c in checks)
    head = f"Official result: {'PASSED' if passed else 'FAILED'}; quality {quality:.2f} ({n_ok}/{len(checks)} checks passed)"
    if not passed and episode.artifact is not None:
        head += "; a critical check failed"
    lines = [head + "."]
    failed = [c for c in checks if not c.passed and c.message]
    if failed:
        lines.append("Failed checks:")
        for c in failed[:MAX_FAILED_LINES]:
            lines.append(f"- {'[critical] ' if c.critical else ''}{c.message}")
        if len(failed) > MAX_FAILED_LINES:
            lines.append(f"- … and {len(failed) - MAX_FAILED_LINES} more failed check(s)")
    if episode.agent_error:
        lines.append(f"Agent error: {episode.agent_error}.")
    lines.extend(episode.notes)
    share = episode.tokens / token_budget if token_budget else 0.0
    lines.append(
        f"Efficiency: {episode.tokens:,} agent tokens ({share:.0%} of the {token_budget:,}-token budget), "
        f"{len(episode.calls)} tool calls, claim_done: {'yes' if episode.claim_done else 'no'}, "
        f"skill loaded: {'yes' if episode.loaded else 'no'}."
    )
    repeats = Counter((c.tool, c.args) for c in episode.calls)
    top = [(k, n) for k, n in repeats.most_common(MAX_REPEATED) if n > 1]
    if top:
        lines.append("Repeated tool calls (exact):")
        lines += [f"- {tool} {args} ×{n}" for (tool, args), n in top]
    if episode.artifact is None:
        lines.append(f"Missing artifact: {episode.missing_hint}.")
    return "\n".join(lines)


def render_trace(episode: Episode, skill_name: str, output_file: str) -> str:
    calls = [{"tool": c.tool, "args": json.loads(c.args), "status": c.status}
             for c in episode.calls[:MAX_TRACE_CALLS]]
    trace = {
        "tool_calls": calls,
        "tool_calls_total": len(episode.calls),
        "tool_calls_truncated": len(episode.calls) > MAX_TRACE_CALLS,
        "loaded_skills": [skill_name] if episode.loaded else [],
        "claim_done": episode.claim_done,
        "agent_tokens": episode.tokens,
        "agent_error": episode.agent_error,
        "artifact_path": output_file if episode.artifact is not None else None,
    }
    return json.dumps(trace, ensure_ascii=False, separators=(",", ":"))
