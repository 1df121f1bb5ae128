"""The search's policies: small, swappable decisions, each chosen by a `_target_` config group
(`search/parent`, `search/batch`, `search/component`, `search/acceptance`, `search/frontier`,
`search/merge`, `search/stop`; docs/research.md). Each default reproduces the classic GEPA loop of
docs/design.md §3 exactly.

The contract every policy may use, whatever its slot:
- `draws`: the RNG draws it makes. The run's one RNG is drawn in a fixed order per proposal
  (source, parent, minibatch, paired seed[, child seed]), so a run replays and resumes exactly.
- `state()` / `restore(state)`: state of its own (the epoch sampler's order, the merges due),
  saved in every round-end snapshot and restored on resume.
- `observe(proposals)`: each round's outcomes, in proposal order (`gepa_lab.core.events.Proposal`).
Acceptance returns a `Verdict` (accepted, reason, gain); merge and reflection are proposal sources;
the budgets are stop policies like the configured stop conditions.
"""

from gepa_lab.search.policies.acceptance import Acceptance, AtLeast, ByMargin, StrictImprovement, Verdict
from gepa_lab.search.policies.batch import BatchSampler, EpochShuffled, PerIteration
from gepa_lab.search.policies.build import OPTIONS, Policies, build_policies
from gepa_lab.search.policies.component import AllComponents, ComponentSelector, MostFailures, RoundRobin
from gepa_lab.search.policies.frontier import Frontier, Hybrid, Instance, Objective
from gepa_lab.search.policies.parent import CurrentBest, EpsilonGreedy, ParentSelector, Pareto, TopKPareto
from gepa_lab.search.policies.sources import Merge, Reflection
from gepa_lab.search.policies.stop import (
    CostBudget,
    MaxIterations,
    MetricBudget,
    NoImprovement,
    ScoreThreshold,
    StopCondition,
    StopFile,
    TimeLimit,
)

__all__ = [
    "OPTIONS", "Acceptance", "AllComponents", "AtLeast", "BatchSampler", "ByMargin", "ComponentSelector",
    "CostBudget", "CurrentBest", "EpochShuffled", "EpsilonGreedy", "Frontier", "Hybrid", "Instance", "MaxIterations",
    "Merge", "MetricBudget", "MostFailures", "NoImprovement", "Objective", "ParentSelector", "Pareto", "PerIteration",
    "Policies", "Reflection", "RoundRobin", "ScoreThreshold", "StopCondition", "StopFile", "StrictImprovement",
    "TimeLimit", "TopKPareto", "Verdict", "build_policies",
]
