"""Automatic checks on a submission (docs/revisions.md §Gates). Pure functions over the request.

- `check_evidence` refuses malformed evidence (nothing is stored).
- `spec_gate` and `safety_gate` always both run and collect every reason; any reason rejects.
- `effectiveness_gate` holds a revision whose holdout score is below the minimum in
  `pending_eval`.
`run_gates` runs the three; a gate that raises fails closed (its verdict is a failure naming
the exception).
"""

from __future__ import annotations

import math
import re
import unicodedata
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from gepa_lab.core.artifacts import KINDS, MAX_ARTIFACT_CHARS
from gepa_lab.core.errors import describe
from gepa_lab.core.submission import Evidence

MAX_NAME_CHARS = 120
MIN_STEPS = 2
DEFAULT_MIN_HOLDOUT_SCORE = 0.8
DELTA_TOLERANCE = 1e-9


@dataclass(frozen=True)
class GateResult:
    gate: str
    passed: bool
    reasons: tuple[str, ...] = ()


# -- evidence -----------------------------------------------------------------------------------
def check_evidence(evidence: Evidence) -> list[str]:
    """Every problem with the numbers (empty: fine)."""
    problems = []
    for name in ("baseline_score", "candidate_score"):
        value = getattr(evidence, name)
        if not (math.isfinite(value) and 0.0 <= value <= 1.0):
            problems.append(f"evidence {name} {value!r} is outside [0, 1]")
    expected = evidence.candidate_score - evidence.baseline_score
    if not math.isfinite(evidence.delta) or abs(evidence.delta - expected) > DELTA_TOLERANCE:
        problems.append(f"evidence delta {evidence.delta!r} is not candidate - baseline ({expected!r})")
    if evidence.case_count < 1:
        problems.append(f"evidence case_count must be at least 1 (got {evidence.case_count})")
    return problems


# -- names --------------------------------------------------------------------------------------
def canonical_name(name: str) -> str:
    """Lower-case ASCII words joined by '-': 'Météo Monitor!' -> 'meteo-monitor'. Also the
    published directory's name."""
    folded = unicodedata.normalize("NFKD", name).encode("ascii", "ignore").decode("ascii")
    return re.sub(r"[^a-z0-9]+", "-", folded.lower()).strip("-")


_COUNT_WORDS = frozenset("one two three four five six seven eight nine ten eleven twelve single double triple multi "
                         "multiple many several all any n".split())
_CONNECTORS = frozenset("for in across with of per".split())


def _is_count(token: str) -> bool:
    return token.isdigit() or token in _COUNT_WORDS


def name_family(name: str) -> tuple[str, bool]:
    """(the canonical name without a count-specific qualifier, whether it had one):
    'Weather Monitor - 3 Cities' and 'Weather Monitor - Multi-City' -> ('weather-monitor', True);
    '3-City Weather Monitor' -> ('weather-monitor', True)."""
    tokens = canonical_name(name).split("-")
    # The rest must still name something (two words or more): 'Top 10 Recipes' is not 'Top'.
    if len(tokens) >= 4 and _is_count(tokens[-2]):
        return "-".join(tokens[:-3 if len(tokens) >= 5 and tokens[-3] in _CONNECTORS else -2]), True
    if len(tokens) >= 4 and _is_count(tokens[0]):
        return "-".join(tokens[2:]), True
    return "-".join(tokens), False


def _name_reasons(name: str, existing: Sequence[str]) -> list[str]:
    """On create: a canonical duplicate or a count-specific sibling of an existing artifact."""
    reasons = []
    canonical = canonical_name(name)
    family, counted = name_family(name)
    for other in existing:
        if other == name:
            continue
        if canonical_name(other) == canonical:
            reasons.append(f"name {name!r} duplicates existing artifact {other!r} (same canonical name "
                           f"{canonical!r}); update that artifact instead")
            continue
        other_family, other_counted = name_family(other)
        if family and other_family == family and (counted or other_counted):
            reasons.append(f"name {name!r} is a count-specific sibling of existing artifact {other!r}; "
                           "generalise and update that artifact instead of adding a variant")
    return reasons


# -- SpecGate -----------------------------------------------------------------------------------
_REQUIRED = {"skill": ("name", "description", "when_to_use"), "prompt": ("text",),
             "tool_description": ("description",), "routing_policy": ("policy",)}


def _field_reasons(artifact: dict[str, Any], kind: str) -> list[str]:
    """Required fields non-blank; a skill's steps (at least MIN_STEPS, none blank)."""
    reasons = [f"{f} is required" for f in _REQUIRED.get(kind, ())
               if not isinstance(artifact.get(f), str) or not artifact[f].strip()]
    if kind not in _REQUIRED:  # named texts (`texts`): every text is required
        if not (named := {k: v for k, v in artifact.items() if k != "kind"}):
            reasons.append("at least one named text is required")
        reasons += [f"text {k!r} is required" for k, v in named.items() if not isinstance(v, str) or not v.strip()]
    if kind == "skill":
        steps = found if isinstance(found := artifact.get("steps"), list | tuple) else []
        if len(steps) < MIN_STEPS:
            reasons.append(f"a skill needs at least {MIN_STEPS} steps (got {len(steps)})")
        reasons += [f"step {i} is empty" for i, step in enumerate(steps, 1)
                    if not isinstance(step, str) or not step.strip()]
    return reasons


def _name_and_size_reasons(artifact: dict[str, Any], name: str) -> list[str]:
    reasons = []
    if not name.strip():
        reasons.append("the artifact needs a name")
    elif not canonical_name(name):
        reasons.append(f"name {name!r} has no letters or digits (it names the published directory)")
    elif len(name) > MAX_NAME_CHARS:
        reasons.append(f"name is {len(name)} characters; the limit is {MAX_NAME_CHARS}")
    size = sum(len(v) if isinstance(v, str) else sum(len(x) for x in v if isinstance(x, str))
               for k, v in artifact.items() if k != "kind" and isinstance(v, str | list | tuple))
    if size > MAX_ARTIFACT_CHARS:
        reasons.append(f"artifact is {size} characters; the limit is {MAX_ARTIFACT_CHARS}")
    return reasons


def spec_gate(artifact: dict[str, Any], name: str, action: str, existing: Sequence[str]) -> GateResult:
    """Required fields, at least two steps for a skill, name length, and on create the duplicate
    and sibling name checks against `existing` artifact names."""
    kind = artifact.get("kind")
    if kind not in KINDS:
        return GateResult("SpecGate", False, (f"unknown artifact kind {kind!r}",))
    reasons = _field_reasons(artifact, str(kind)) + _name_and_size_reasons(artifact, name)
    if action == "create" and name.strip():
        reasons += _name_reasons(name, existing)
    return GateResult("SpecGate", not reasons, tuple(reasons))


# -- SafetyGate ---------------------------------------------------------------------------------
# group -> [(label, pattern)], in reporting order; a secret's match is never shown (safety.yaml).
_RULES = {group: [(label, re.compile(pattern)) for label, pattern in rules.items()]
          for group, rules in yaml.safe_load(Path(__file__).with_name("safety.yaml").read_text("utf-8")).items()}
SECRET = "suspected secret"
SAFETY_FIELDS = ("description", "when_to_use", "steps", "pitfalls")


def _texts(artifact: dict[str, Any]) -> Iterator[tuple[str, str]]:
    """(where, text): a skill's description, when_to_use, steps and pitfalls; every text field of
    the other kinds."""
    for name in SAFETY_FIELDS if artifact.get("kind") == "skill" else [k for k in artifact if k != "kind"]:
        value = artifact.get(name)
        if isinstance(value, str):
            yield name, value
        elif isinstance(value, list | tuple):
            label = {"steps": "step", "pitfalls": "pitfall"}.get(name, name)
            for i, item in enumerate(value, 1):
                if isinstance(item, str):
                    yield f"{label} {i}", item


def safety_gate(artifact: dict[str, Any]) -> GateResult:
    """Suspected secrets, dangerous shell commands and path traversal, every finding reported."""
    reasons: list[str] = []
    for where, value in _texts(artifact):
        for group, rules in _RULES.items():
            for label, pattern in rules:
                if found := pattern.search(value):  # shown on one line, at most 60 characters
                    text = " ".join(found.group(0).split())
                    shown = "" if group == SECRET else f": {text if len(text) <= 60 else text[:59] + '…'!r}"
                    reasons.append(f"{where}: {group} ({label}){shown}")
    return GateResult("SafetyGate", not reasons, tuple(reasons))


# -- EffectivenessGate --------------------------------------------------------------------------
def effectiveness_gate(evidence: Evidence, min_holdout_score: float = DEFAULT_MIN_HOLDOUT_SCORE) -> GateResult:
    low = evidence.candidate_score < min_holdout_score
    return GateResult("EffectivenessGate", not low, (
        f"holdout score {evidence.candidate_score:.4f} is below {min_holdout_score:.4f}; held for more evaluation",
    ) if low else ())


# -- all gates ----------------------------------------------------------------------------------
def _guarded(name: str, gate: Callable[[], GateResult]) -> GateResult:
    try:
        return gate()
    except Exception as exc:  # fail closed: a broken gate never lets a revision through
        return GateResult(name, False, (f"{name} raised {describe(exc)}; failing closed",))


@dataclass(frozen=True)
class GateVerdict:
    status: str  # rejected | pending_eval | pending_approval
    results: tuple[GateResult, ...]

    @property
    def reasons(self) -> list[str]:
        return [r for result in self.results for r in result.reasons]


def run_gates(artifact: dict[str, Any], name: str, action: str, evidence: Evidence, existing: Sequence[str],
              min_holdout_score: float = DEFAULT_MIN_HOLDOUT_SCORE) -> GateVerdict:
    spec = _guarded("SpecGate", lambda: spec_gate(artifact, name, action, existing))
    safety = _guarded("SafetyGate", lambda: safety_gate(artifact))
    effect = _guarded("EffectivenessGate", lambda: effectiveness_gate(evidence, min_holdout_score))
    status = "pending_approval" if effect.passed else "pending_eval"
    return GateVerdict(status if spec.passed and safety.passed else "rejected", (spec, safety, effect))
