"""`evaluator=skillcraft_dspy`: SkillCraft-sim cases solved by a real model.

A `dspy.ReAct` agent on the `lm.task` model gets the artifact as its instructions (SKILL.md for
skills) and the family's tools (the simulator's world, with its seeded rate limits); what it
writes to the task's output file is graded by the simulator's own rubric and score formula
(`family.grade`, `grading.score_of`), and its feedback and trace take the simulator's format.
Tokens, USD and latency come from the model's usage (`tokens`, `cost_usd`, `latency_ms`; also
`agent_tokens` like the simulator). The case's provider seed goes to providers that take one and
is recorded in the trace either way.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from evaluators.skillcraft.evaluator import DEFAULT_TOKEN_BUDGET, default_data_dir, fixtures_digest
from evaluators.skillcraft.family import Episode, get_family
from evaluators.skillcraft.grading import grade_episode, render_trace
from evaluators.skillcraft.rng import Draws
from evaluators.skillcraft_dspy.agent import make_agent, trajectory_steps
from evaluators.skillcraft_dspy.toolsets import Toolset, build_toolset
from gepa_lab import Artifact, Case, Evaluation
from gepa_lab.lm import LMCaller, LMSettings, Metered

MAX_THOUGHTS = 12  # agent thoughts kept in the trace


class SkillCraftDspyEvaluator(LMCaller):
    """Evaluator (`gepa_lab.core.contracts.Evaluator`) running a real LM agent on SkillCraft-sim
    tasks of one family."""

    quality_objective = "official_quality"  # critical holdout cases are judged on the rubric share

    def __init__(self, family: str = "recipe", lm: LMSettings | Mapping[str, Any] | None = None,
                 data_dir: str | None = None, max_iters: int = 40, token_budget: int = DEFAULT_TOKEN_BUDGET):
        for name, value in (("max_iters", max_iters), ("token_budget", token_budget)):
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ValueError(f"{name} must be a positive integer, got {value!r}")
        self.family = family
        self.spec = get_family(family)
        if not self.spec.tools:
            raise ValueError(f"no dspy toolset for SkillCraft-sim family {family!r}: describe its tools under "
                             f"`tools` in evaluators/skillcraft/{family}/family.yaml")
        self.data_dir = Path(data_dir) if data_dir else default_data_dir(family)
        self.world = self.spec.load_world(self.data_dir)
        self.max_iters, self.token_budget = max_iters, token_budget
        super().__init__(lm, "lm.task")

    def fingerprint(self) -> str:
        return json.dumps({"evaluator": "skillcraft-dspy", "family": self.family, "max_iters": self.max_iters,
                           "token_budget": self.token_budget, "fixtures": fixtures_digest(self.data_dir),
                           "lm": self.settings.public()}, sort_keys=True, default=str)

    def evaluate(self, artifact: Artifact, cases: list[Case], seed: int) -> list[Evaluation]:
        tasks = [self.spec.parse_task(self.world, c) for c in cases]  # malformed cases fail before any spend
        return [self._one(artifact, case, task, seed) for case, task in zip(cases, tasks, strict=True)]

    def _one(self, artifact: Artifact, case: Case, task: Any, seed: int) -> Evaluation:
        toolset = build_toolset(self.family, self.world, task, Draws(seed, case.id))
        agent = make_agent(artifact, toolset.functions, self.max_iters)
        run = self.metered(seed, case.id, lambda: agent(task=case.input))
        steps = trajectory_steps(getattr(run.value, "trajectory", None) or {})
        written, text, missing = _artifact(toolset, task.output_file)
        error = _agent_error(run, steps, self.max_iters)
        limited = sum(1 for c in toolset.calls if c.status == "rate_limited")
        episode = Episode(artifact=written, artifact_text=text, calls=toolset.calls, tokens=run.usage.tokens,
                          latency_ms=run.latency_ms, loaded=True, claim_done=toolset.claimed, agent_error=error,
                          notes=[f"Tool errors: {limited} rate_limited response(s)."] if limited else [],
                          missing_hint=missing)
        score, quality, passed, feedback = grade_episode(self.spec, case.id, task, episode, self.token_budget)
        return Evaluation(
            case_id=case.id, score=score, output=text, feedback=feedback,
            trace=_trace(episode, artifact, task.output_file, run, steps),
            objectives={**run.objectives(), "agent_tokens": float(run.usage.tokens), "official_quality": quality,
                        "passed": 1.0 if passed else 0.0, "tool_calls": float(len(toolset.calls)),
                        "skill_loaded": 1.0, "format_error": 1.0 if run.parse_error is not None else 0.0},
        )


def _artifact(toolset: Toolset, output_file: str) -> tuple[dict[str, Any] | None, str, str]:
    """(parsed artifact or None, its text, why there is none)."""
    content = toolset.written(output_file)
    if content is None:
        others = sorted({path for path, _ in toolset.writes})
        return None, "", (f"the agent wrote {', '.join(others)} instead of the required {output_file}" if others
                          else f"the agent never wrote {output_file} with write_file")
    try:
        data = json.loads(content)
    except ValueError as exc:
        return None, content, f"{output_file} is not valid JSON ({exc})"
    if not isinstance(data, dict):
        return None, content, f"{output_file} must hold a JSON object, not {type(data).__name__}"
    return data, content, ""


def _agent_error(run: Metered, steps: list[tuple[str, str, Any]], max_iters: int) -> str:
    if run.parse_error is not None:
        return ("the model's reply did not follow the agent's output format: "
                + " ".join(str(run.parse_error).split())[:300])
    if steps and steps[-1][1] != "finish" and len(steps) >= max_iters:
        return f"stopped at the {max_iters}-step limit"
    return ""


def _trace(episode: Any, artifact: Artifact, output_file: str, run: Metered,
           steps: list[tuple[str, str, Any]]) -> str:
    trace = json.loads(render_trace(episode, str(getattr(artifact, "name", artifact.kind)), output_file))
    trace.update(provider_seed=run.provider_seed, provider_seed_sent=run.seed_sent,
                 thoughts=[thought[:300] for thought, _, _ in steps[:MAX_THOUGHTS]])
    return json.dumps(trace, ensure_ascii=False, separators=(",", ":"))
