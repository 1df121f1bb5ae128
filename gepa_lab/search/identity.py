"""A run's identity: everything that can change its result, recorded when it starts and checked
when it is resumed. The search stage's part must match exactly (only raisable limits may change);
the decision stage's part (promotion policy, transfer evaluator) may change once the search has
finished: the run is then decided again, beside its earlier decisions."""

from __future__ import annotations

from dataclasses import asdict
from typing import Any

from gepa_lab.core.artifacts import artifact_id
from gepa_lab.core.errors import ResumeError
from gepa_lab.core.fingerprint import fingerprint
from gepa_lab.search.policies.build import SLOTS, describe_policies
from gepa_lab.search.preflight import Request

# Limits a resume may change (e.g. raise the money cap that stopped a run); anything else must match.
RAISABLE = frozenset({"max_cost_usd", "time_limit_s"})
# Search settings newer than the record format, with the value a run recorded before them ran with.
ADDED = {"validation_repeats": 1}


def decision_settings(request: Request) -> dict[str, Any]:
    transfer = request.transfer
    return {"promotion": asdict(request.promotion), "transfer": fingerprint(transfer) if transfer is not None else None}


def run_identity(request: Request) -> dict[str, Any]:
    config, evaluation = request.config, request.evaluation
    search = {k: v for k, v in asdict(config).items() if k not in (*SLOTS, "stop")}
    # evaluation / reflection: what decides a transient failure's fate (how often it is retried,
    # when a call times out).
    return {"digests": request.dataset.digests(), "seed_id": artifact_id(request.seed),
            "evaluator": fingerprint(request.evaluator), "reflector": fingerprint(request.reflector),
            "search": {**search, **describe_policies(config)},
            "evaluation": {"max_retries": evaluation.max_retries, "timeout_s": evaluation.timeout_s},
            "reflection": {"max_retries": request.reflection.max_retries}, **decision_settings(request)}


def _changed(recorded: dict[str, Any], current: dict[str, Any], group: str) -> tuple[str, Any, Any] | None:
    old, new = recorded.get(group) or {}, current.get(group) or {}
    if group == "search":  # a setting added after the run was recorded held its default
        old = {**ADDED, **old}
    for key in sorted(set(old) | set(new)):
        if group == "search" and key in RAISABLE:
            continue
        if old.get(key) != new.get(key):
            return key, old.get(key), new.get(key)
    return None


def check_same_search(recorded: dict[str, Any], current: dict[str, Any], searched: bool) -> None:
    """Refuse a resume that changes what the search depends on. Before the search has ended, the
    decision settings must match too (the holdout reserve shapes the search's budget)."""
    for split, digest in current["digests"].items():
        old = recorded["digests"].get(split)
        if old != digest:
            raise ResumeError(f"cannot resume: the {split} split changed (digest {str(old)[:12]}… → {digest[:12]}…); "
                              "resume needs the same frozen dataset")
    if recorded["seed_id"] != current["seed_id"]:
        raise ResumeError("cannot resume: the seed artifact changed; resume needs the same seed")
    for part, what in (("evaluator", "evaluator configuration"),
                       ("reflector", "reflector (or its configuration or prompt)")):
        if recorded.get(part) != current.get(part):
            raise ResumeError(f"cannot resume: the {what} changed ({recorded.get(part)!r} → {current.get(part)!r}); "
                              "resume with the original settings")
    for group in ["search", "evaluation", "reflection"] + ([] if searched else ["promotion"]):
        if (change := _changed(recorded, current, group)) is not None:
            key, old, new = change
            hint = ("" if group != "promotion" else "; finish the run first, then decide again with other "
                    "promotion settings")
            raise ResumeError(f"cannot resume: {group} setting {key} changed ({old!r} → {new!r}); rerun with the "
                              f"original overrides (see the run's .hydra/overrides.yaml){hint}")
    if not searched and recorded.get("transfer") != current.get("transfer"):
        raise ResumeError("cannot resume: the transfer evaluator changed (transfer/evaluator) before the search "
                          "finished; resume with the original transfer settings, then decide again with another")
