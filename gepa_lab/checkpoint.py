"""Search-state checkpoints: the whole state as JSON, so a resumed run replays exactly.

Saved after seed validation and after every iteration. Holds the pool (artifacts, cursors,
validation results), the RNG state, budget spent, counters and the record offsets.
"""

from __future__ import annotations

import json
import random
from pathlib import Path
from typing import Any

from gepa_lab.artifacts import artifact_dict, artifact_from_dict
from gepa_lab.contracts import Evaluation
from gepa_lab.record import write_json_atomic
from gepa_lab.search import Budget, Candidate, SearchState

CHECKPOINT_FILE = "checkpoint.json"
FORMAT = 1


def rng_state_to_json(rng: random.Random) -> list[Any]:
    version, internal, gauss = rng.getstate()
    return [version, list(internal), gauss]


def rng_from_json(data: list[Any]) -> random.Random:
    rng = random.Random()
    rng.setstate((data[0], tuple(data[1]), data[2]))
    return rng


def state_to_json(state: SearchState) -> dict[str, Any]:
    return {
        "rng": rng_state_to_json(state.rng),
        "validation_seed": state.validation_seed,
        "metric_calls": state.budget.used,
        "iteration": state.iteration,
        "stop_reason": state.stop_reason,
        "pool": [
            {
                "id": c.id,
                "artifact": artifact_dict(c.artifact),
                "parent_id": c.parent_id,
                "component": c.component,
                "iteration": c.iteration,
                "cursor": c.cursor,
                "rationale": c.rationale,
                # Scores and objectives are all a pool member's validation is used for; the text
                # stays in evaluations/ (keeps the per-iteration checkpoint small and fast).
                "validation": [
                    {"case_id": ev.case_id, "score": ev.score, "objectives": ev.objectives} for ev in c.validation
                ],
            }
            for c in state.pool
        ],
    }


def state_from_json(data: dict[str, Any], max_calls: int) -> SearchState:
    state = SearchState(
        rng=rng_from_json(data["rng"]),
        budget=Budget(max_calls, used=int(data["metric_calls"])),
        validation_seed=int(data["validation_seed"]),
        iteration=int(data["iteration"]),
        stop_reason=data.get("stop_reason"),
    )
    for row in data["pool"]:
        state.pool.append(
            Candidate(
                id=row["id"],
                artifact=artifact_from_dict(row["artifact"]),
                parent_id=row["parent_id"],
                component=row["component"],
                iteration=row["iteration"],
                cursor=int(row["cursor"]),
                validation=[Evaluation.from_dict(ev) for ev in row["validation"]],
                rationale=row.get("rationale", ""),
            )
        )
    return state


def save_checkpoint(run_dir: Path, payload: dict[str, Any]) -> None:
    write_json_atomic(run_dir / CHECKPOINT_FILE, {"format": FORMAT, **payload}, indent=None)


def load_checkpoint(run_dir: Path) -> dict[str, Any]:
    data = json.loads((run_dir / CHECKPOINT_FILE).read_text(encoding="utf-8"))
    if data.get("format") != FORMAT:
        raise ValueError(f"cannot resume {run_dir}: checkpoint format {data.get('format')} is not {FORMAT}")
    return data


def prepare_resume(run_dir: Path, digests: dict[str, str], search: dict[str, Any], seed_id: str,
                   evaluator: str) -> tuple[str, dict[str, Any] | None]:
    """(experiment id, checkpoint). No checkpoint yet (killed while scoring the seed) means the
    run restarts from the beginning under the same id; the cache makes that free."""
    if (run_dir / "result.json").exists():
        raise ValueError(f"cannot resume {run_dir}: the run already finished (result.json exists)")
    experiment = run_dir / "experiment.json"
    if not experiment.is_file():
        raise ValueError(f"cannot resume {run_dir}: no experiment.json there (is it a gepa_lab run dir?)")
    recorded = json.loads(experiment.read_text(encoding="utf-8"))
    if (run_dir / CHECKPOINT_FILE).is_file():
        checkpoint = load_checkpoint(run_dir)
    else:
        checkpoint = None
    reference = checkpoint or {
        "digests": recorded["dataset"]["digests"],
        "search": recorded["config"]["search"],
        "seed_id": recorded["seed"]["id"],
    }
    check_resumable(reference, digests, search)
    if reference["seed_id"] != seed_id:
        raise ValueError("cannot resume: the seed artifact changed; resume needs the same seed")
    if reference.get("evaluator", evaluator) != evaluator:
        raise ValueError("cannot resume: the evaluator configuration changed (its fingerprint differs); "
                         "resume with the original evaluator settings")
    return recorded["id"], checkpoint


def check_resumable(checkpoint: dict[str, Any], digests: dict[str, str], search: dict[str, Any]) -> None:
    """Refuse a resume whose data or search settings differ from the interrupted run."""
    for split, digest in digests.items():
        old = checkpoint["digests"].get(split)
        if old != digest:
            raise ValueError(
                f"cannot resume: the {split} split changed (digest {str(old)[:12]}… → {digest[:12]}…); "
                "resume needs the same frozen dataset"
            )
    for key, value in search.items():
        old = checkpoint["search"].get(key)
        if old != value:
            raise ValueError(
                f"cannot resume: search setting {key} changed ({old!r} → {value!r}); "
                "rerun with the original overrides (see the run's .hydra/overrides.yaml)"
            )

