"""SkillCraftEvaluator: scores an artifact on SkillCraft-sim cases of one family.

Family-agnostic: the family (`family.get_family`) supplies the world, the task parser, the
agent's moves and the rubric; the episode (`agent.simulate`), the score and the feedback
(`grading.py`) are shared.
Same (artifact, case, seed) ⇒ the same Evaluation: all randomness is keyed by (seed, case id,
purpose), never by the artifact, so paired comparisons share their luck.
See docs/skillcraft_sim.md §5 (grading) and §7 (common random numbers).
"""

from __future__ import annotations

import hashlib
import json
import math
from collections import OrderedDict
from collections.abc import Mapping
from dataclasses import asdict
from pathlib import Path
from typing import Any

from evaluators.skillcraft.agent import AgentConfig, simulate
from evaluators.skillcraft.family import Episode, get_family, known_family, memo
from evaluators.skillcraft.grading import grade_episode, render_trace
from evaluators.skillcraft.rng import Draws
from evaluators.skillcraft.skill import SkillProfile, analyse
from gepa_lab import Case, Evaluation, from_mapping, resolve_path

DEFAULT_TOKEN_BUDGET = 200_000
DEFAULT_USD_PER_1K_TOKENS = 0.002
REPO_ROOT = Path(__file__).resolve().parents[2]
_PROFILE_CACHE_SIZE = 256
_TASK_CACHE_SIZE = 4096


def default_data_dir(family: str) -> Path:
    """The checkout's datasets/skillcraft/<family>, or the wheel's bundled copy."""
    checkout = REPO_ROOT / "datasets" / "skillcraft" / family
    return checkout if checkout.is_dir() else resolve_path(Path("datasets", "skillcraft", family))


def fixtures_digest(data_dir: Path) -> str:
    """sha256 of a family's fixture files: part of every fingerprint that reads them."""
    return hashlib.sha256(b"".join(path.read_bytes() for path in sorted(data_dir.glob("fixtures*.json")))).hexdigest()


def skill_fields(artifact: Any) -> dict[str, Any]:
    """SkillSpec fields of an artifact; other kinds are read as one instruction block."""
    data = artifact if isinstance(artifact, dict) else artifact.to_dict()
    kind = data.get("kind") or getattr(artifact, "kind", "skill")
    if kind == "skill" or "steps" in data:
        return data
    text = "\n".join(str(v) for k, v in data.items() if isinstance(v, str) and k != "name")
    return {"name": data.get("name") or kind, "description": text, "when_to_use": text,
            "steps": [line for line in text.splitlines() if line.strip()], "pitfalls": []}


class SkillCraftEvaluator:
    """The offline SkillCraft-sim evaluator for one family."""

    # What promotion judges critical cases on: the rubric share, not the token-efficiency credit.
    quality_objective = "official_quality"
    # Its dollars are simulated tokens times a configured price, not a bill: the summary says so.
    simulated = True

    def __init__(self, family: str = "recipe", data_dir: str | Path | None = None,
                 token_budget: int = DEFAULT_TOKEN_BUDGET, usd_per_1k_tokens: float = DEFAULT_USD_PER_1K_TOKENS,
                 agent_config: AgentConfig | Mapping[str, Any] | None = None, fixed_episodes: bool = False) -> None:
        if not isinstance(token_budget, int) or token_budget <= 0:
            raise ValueError(f"token_budget must be a positive integer, got {token_budget!r}")
        if not math.isfinite(float(usd_per_1k_tokens)) or usd_per_1k_tokens < 0:
            raise ValueError(f"usd_per_1k_tokens must be a finite non-negative number, got {usd_per_1k_tokens!r}")
        self.family = family
        self.spec = get_family(family)
        self.data_dir = Path(data_dir) if data_dir else default_data_dir(family)
        self.token_budget = token_budget
        self.usd_per_1k_tokens = float(usd_per_1k_tokens)
        if isinstance(agent_config, Mapping):  # from a config file
            agent_config = from_mapping(AgentConfig, agent_config, "agent_config")
        self.agent_config = agent_config or AgentConfig()
        # True: a case's episode draws no luck from the evaluation seed (every seed replays it), as
        # a real model at temperature 0 answers a prompt the same way whatever seed is sent.
        self.fixed_episodes = bool(fixed_episodes)
        self.world = self.spec.load_world(self.data_dir)
        self._entities = self.spec.hooks.entity_names(self.world)
        self._profiles: OrderedDict[str, SkillProfile] = OrderedDict()  # sized: see `memo`
        self._tasks: OrderedDict[tuple[Any, ...], Any] = OrderedDict()

    def fingerprint(self) -> str:
        """Everything that changes results besides (artifact, case, seed): the evaluation cache
        key includes it, so a changed budget, price or fixture never reuses old scores."""
        # The behaviour table (probabilities and concepts) changes results as much as the data;
        # canonical JSON (sorted word sets), never repr(): set order varies between processes.
        table = [[b.name, b.base, b.slope, b.top, *(sorted(getattr(b.concept, k)) for k in
                                                   ("key", "support", "acts", "lapses"))]
                 for b in self.spec.behaviours]
        behaviours = hashlib.sha256(json.dumps(table).encode()).hexdigest()[:16]
        return json.dumps({"evaluator": "skillcraft-sim", "family": self.family, "token_budget": self.token_budget,
                           "usd_per_1k_tokens": self.usd_per_1k_tokens, "agent": asdict(self.agent_config),
                           "fixtures": fixtures_digest(self.data_dir), "behaviours": behaviours,
                           **({"fixed_episodes": True} if self.fixed_episodes else {})}, sort_keys=True)

    # -- caches: parsing the skill and the case is pure, so it is done once per distinct input.
    def profile(self, artifact: Any) -> SkillProfile:
        fields = skill_fields(artifact)
        key = json.dumps(fields, sort_keys=True, ensure_ascii=False)
        return memo(self._profiles, key, lambda: analyse(fields, self.spec.behaviours, self._entities, self.spec.cap_nouns),
                    _PROFILE_CACHE_SIZE)

    def task(self, case: Case) -> Any:
        family = case.metadata.get("family", self.family)
        if family != self.family:
            known_family(family)  # unknown family: ValueError names the known ones
            raise ValueError(f"case {case.id!r} belongs to family {family!r}, evaluator is {self.family!r}")
        key = (case.id, case.input, case.expected, tuple(sorted(case.metadata.items())))
        return memo(self._tasks, key, lambda: self.spec.parse_task(self.world, case), _TASK_CACHE_SIZE)

    def run_episode(self, artifact: Any, case: Case, seed: int) -> tuple[Any, Episode]:
        task = self.task(case)
        episode = simulate(self.spec, self.world, task, self.profile(artifact), self.draws(seed, case),
                           self.agent_config)
        return task, episode

    def draws(self, seed: int, case: Case) -> Draws:
        return Draws(0 if self.fixed_episodes else seed, case.id)

    def evaluate(self, artifact: Any, cases: list[Case], seed: int) -> list[Evaluation]:
        profile = self.profile(artifact)
        tasks = [self.task(c) for c in cases]  # configuration errors surface before any work
        out = []
        for case, task in zip(cases, tasks, strict=True):
            episode = simulate(self.spec, self.world, task, profile, self.draws(seed, case), self.agent_config)
            score, quality, passed, feedback = grade_episode(self.spec, case.id, task, episode, self.token_budget)
            objectives = {"official_quality": quality, "passed": 1.0 if passed else 0.0,
                          "agent_tokens": float(episode.tokens), "tool_calls": float(len(episode.calls)),
                          "skill_loaded": 1.0 if episode.loaded else 0.0, "latency_ms": round(episode.latency_ms, 3),
                          "cost_usd": episode.tokens / 1000.0 * self.usd_per_1k_tokens}
            out.append(Evaluation(case_id=case.id, score=score, output=episode.artifact_text, feedback=feedback,
                                  trace=render_trace(episode, profile.name, task.output_file), objectives=objectives))
        return out
