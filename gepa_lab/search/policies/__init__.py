"""The search's policies: small, swappable decisions, each chosen by a `_target_` config group
(`search/parent`, `search/batch`, `search/component`, `search/acceptance`, `search/stop`,
`search/frontier`, `search/merge`; docs/research.md). Each default reproduces the classic GEPA
loop of docs/design.md §3 exactly.

Every policy class documents the RNG draws it makes (`draws`): the run's one RNG is drawn in a
fixed order per proposal (parent, minibatch, paired seed[, child seed]), so a run replays and
resumes exactly whatever policy is chosen. A policy with state of its own (the epoch sampler's
order) saves it in the round-end snapshot through `state()` / `restore()`.
"""

from gepa_lab.search.policies.acceptance import Acceptance, AtLeast, ByMargin, StrictImprovement
from gepa_lab.search.policies.batch import BatchSampler, EpochShuffled, PerIteration
from gepa_lab.search.policies.build import Policies, build_policies
from gepa_lab.search.policies.component import (
    AllComponents,
    ComponentSelector,
    MostFailures,
    RoundRobin,
)
from gepa_lab.search.policies.frontier import Frontier, Hybrid, Instance, Objective
from gepa_lab.search.policies.merge import Merge
from gepa_lab.search.policies.parent import (
    CurrentBest,
    EpsilonGreedy,
    ParentSelector,
    Pareto,
    TopKPareto,
)
from gepa_lab.search.policies.stop import NoImprovement, ScoreThreshold, StopCondition, StopFile

__all__ = [
    "Acceptance", "AllComponents", "AtLeast", "BatchSampler", "ByMargin", "ComponentSelector", "CurrentBest",
    "EpochShuffled", "EpsilonGreedy", "Frontier", "Hybrid", "Instance", "Merge", "MostFailures", "NoImprovement",
    "Objective", "ParentSelector", "Pareto", "PerIteration", "Policies", "RoundRobin", "ScoreThreshold",
    "StopCondition", "StopFile", "StrictImprovement", "TopKPareto", "build_policies",
]
