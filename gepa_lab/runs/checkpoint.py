"""The engine's checkpoint: enough to continue an interrupted run exactly where it stopped.

Two files, both owned here:
- `checkpoint.json`, rewritten atomically after the seed is scored and after every iteration:
  the run's identity (experiment id, split digests, settings, seed id, evaluator fingerprint) and
  the small, changing state (RNG state, budget spent, counters, component cursors);
- `pool.jsonl`, append-only: one line per pool member (artifact, lineage, validation scores),
  so a checkpoint never rewrites the whole pool.

`checkpoint.json` exists from the start of a run (state `null` until the seed is scored), so a
run killed before its first iteration resumes like any other.
"""

from __future__ import annotations

import io
import json
import random
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from gepa_lab.core.artifacts import artifact_dict, artifact_from_dict
from gepa_lab.core.contracts import Evaluation
from gepa_lab.core.errors import ResumeError
from gepa_lab.runs.files import read_json, write_json_atomic
from gepa_lab.search.state import Budget, Candidate, SearchState

# Limits a resume may change (e.g. raise the money cap that stopped a run); anything else must match.
RAISABLE = frozenset({"max_cost_usd", "time_limit_s"})
CHECKPOINT_FILE = "checkpoint.json"
POOL_FILE = "pool.jsonl"
FORMAT = 2


@dataclass
class Checkpoint:
    experiment_id: str
    identity: dict[str, Any]  # digests, settings, seed id, evaluator fingerprint: must match on resume
    state: SearchState | None = None  # None: the seed is not scored yet
    batches: int = 0  # scored batches so far
    task_cost_usd: float = 0.0
    reflection_cost_usd: float = 0.0
    elapsed_s: float = 0.0
    finished: bool = False
    reflection_tokens: int = 0


def _member(c: Candidate) -> dict[str, Any]:
    # Scores and objectives are all a pool member's validation is used for; the text stays in
    # the run record.
    return {"id": c.id, "artifact": artifact_dict(c.artifact), "parent_id": c.parent_id, "component": c.component,
            "iteration": c.iteration, "metric_calls": c.metric_calls, "rationale": c.rationale,
            "validation": [{"case_id": ev.case_id, "score": ev.score, "objectives": ev.objectives}
                           for ev in c.validation]}


def _candidate(row: dict[str, Any], cursor: int) -> Candidate:
    validation = tuple(Evaluation(ev["case_id"], float(ev["score"]), objectives=ev.get("objectives") or {})
                       for ev in row["validation"])
    return Candidate(row["id"], artifact_from_dict(row["artifact"]), row["parent_id"], row["component"],
                     row["iteration"], cursor, validation, int(row["metric_calls"]), row.get("rationale", ""))


def _nothing() -> io.BytesIO:
    return io.BytesIO(b"")


class CheckpointStore:
    def __init__(self, run_dir: Path):
        self.dir = run_dir
        self._written = 0  # pool members already in pool.jsonl
        self._truncate_to: int | None = None  # bytes of pool.jsonl a resumed run keeps

    def exists(self) -> bool:
        return (self.dir / CHECKPOINT_FILE).is_file()

    def save(self, cp: Checkpoint) -> None:
        self.dir.mkdir(parents=True, exist_ok=True)
        state = cp.state
        if self._truncate_to is not None:  # drop members an interrupted run added after its checkpoint
            pool_file = self.dir / POOL_FILE
            if pool_file.exists():
                with open(pool_file, "r+b") as fh:
                    fh.truncate(self._truncate_to)
            self._truncate_to = None
        if state is not None and len(state.pool) > self._written:
            with open(self.dir / POOL_FILE, "a", encoding="utf-8") as fh:
                fh.writelines(json.dumps(_member(c), ensure_ascii=False) + "\n" for c in state.pool[self._written:])
            self._written = len(state.pool)
        body: dict[str, Any] = {
            "format": FORMAT, "experiment_id": cp.experiment_id, "identity": cp.identity, "batches": cp.batches,
            "task_cost_usd": cp.task_cost_usd, "reflection_cost_usd": cp.reflection_cost_usd,
            "reflection_tokens": cp.reflection_tokens, "elapsed_s": cp.elapsed_s, "finished": cp.finished, "state": None,
        }
        if state is not None:
            version, internal, gauss = state.rng.getstate()
            body["state"] = {
                "rng": [version, list(internal), gauss], "validation_seed": state.validation_seed,
                "holdout_seeds": state.holdout_seeds,
                "metric_calls": state.budget.used, "iteration": state.iteration, "proposals": state.proposals,
                "stop_reason": state.stop_reason, "pool_size": len(state.pool),
                "cursors": [c.cursor for c in state.pool],
            }
        write_json_atomic(self.dir / CHECKPOINT_FILE, body, indent=None)

    def load(self, max_calls: int) -> Checkpoint:
        path = self.dir / CHECKPOINT_FILE
        try:
            data = read_json(path, "checkpoint")
        except ValueError as exc:
            raise ResumeError(f"cannot resume {self.dir}: {exc}; start a new run") from exc
        if not isinstance(data, dict) or data.get("format") != FORMAT:
            found = data.get("format") if isinstance(data, dict) else None
            raise ResumeError(f"cannot resume {self.dir}: {path.name} has format {found!r}, expected {FORMAT} "
                              "(written by another gepa-lab version)")
        try:
            return self._parse(data, max_calls)
        except (KeyError, TypeError, ValueError, IndexError) as exc:
            raise ResumeError(f"cannot resume {self.dir}: {path.name} or {POOL_FILE} is damaged "
                              f"({type(exc).__name__}: {exc})") from exc

    def _parse(self, data: dict[str, Any], max_calls: int) -> Checkpoint:
        cp = Checkpoint(str(data["experiment_id"]), dict(data["identity"]), None, int(data["batches"]),
                        float(data["task_cost_usd"]), float(data["reflection_cost_usd"]), float(data["elapsed_s"]),
                        bool(data["finished"]), int(data.get("reflection_tokens", 0)))
        raw = data["state"]
        if raw is None:
            self._truncate_to = 0
            return cp
        rng = random.Random()
        rng.setstate((raw["rng"][0], tuple(raw["rng"][1]), raw["rng"][2]))
        state = SearchState(rng=rng, budget=Budget(max_calls, used=int(raw["metric_calls"])),
                            validation_seed=int(raw["validation_seed"]),
                            holdout_seeds=[int(x) for x in raw["holdout_seeds"]], iteration=int(raw["iteration"]),
                            proposals=int(raw["proposals"]), stop_reason=raw["stop_reason"])
        size, cursors = int(raw["pool_size"]), raw["cursors"]
        offset = 0
        pool_file = self.dir / POOL_FILE
        with open(pool_file, "rb") if pool_file.exists() else _nothing() as fh:
            for line in fh:
                if len(state.pool) == size or not line.endswith(b"\n"):
                    break
                state.add(_candidate(json.loads(line), int(cursors[len(state.pool)])))
                offset += len(line)
        if len(state.pool) != size:
            raise ValueError(f"{POOL_FILE} holds {len(state.pool)} pool members, the checkpoint expects {size}")
        self._written, self._truncate_to = size, offset
        cp.state = state
        return cp

    def resume(self, identity: dict[str, Any], max_calls: int) -> Checkpoint:
        """The checkpoint of an interrupted run, after checking it is the same run."""
        if not self.exists():
            raise ResumeError(f"cannot resume {self.dir}: no {CHECKPOINT_FILE} there (is it a gepa_lab run dir?)")
        cp = self.load(max_calls)
        if cp.finished:
            raise ResumeError(f"cannot resume {self.dir}: the run already finished (see its result.json)")
        check_same_run(cp.identity, identity)
        return cp


def check_same_run(recorded: dict[str, Any], current: dict[str, Any]) -> None:
    """Refuse a resume whose data, seed, evaluator or settings differ from the interrupted run."""
    for split, digest in current["digests"].items():
        old = recorded["digests"].get(split)
        if old != digest:
            raise ResumeError(f"cannot resume: the {split} split changed (digest {str(old)[:12]}… → {digest[:12]}…); "
                              "resume needs the same frozen dataset")
    if recorded["seed_id"] != current["seed_id"]:
        raise ResumeError("cannot resume: the seed artifact changed; resume needs the same seed")
    if recorded["evaluator"] != current["evaluator"]:
        raise ResumeError("cannot resume: the evaluator configuration changed (its fingerprint differs); "
                          "resume with the original evaluator settings")
    if recorded.get("transfer") != current.get("transfer"):  # absent on both sides: no transfer check
        raise ResumeError("cannot resume: the transfer evaluator changed (transfer/evaluator); resume with the "
                          "original transfer settings")
    for group in ("search", "promotion"):
        for key, value in current[group].items():
            old = recorded[group].get(key)
            if group == "search" and key in RAISABLE:
                continue
            if old != value:
                raise ResumeError(f"cannot resume: {group} setting {key} changed ({old!r} → {value!r}); rerun "
                                  "with the original overrides (see the run's .hydra/overrides.yaml)")
