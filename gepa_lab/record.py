"""The run record in the run directory: enough to audit (and later resume) without MLflow.

Layout: experiment.json, candidates/<id>.json, evaluations/<NNNN>-<phase>-<id>.json,
events.jsonl, result.json. JSON files are written atomically (temp file + rename).
"""

from __future__ import annotations

import json
import os
import tempfile
from dataclasses import asdict
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from gepa_lab.redact import cap_bytes
from gepa_lab.tracking import CandidateInfo, EvaluationRecord, Proposal, RunInfo

if TYPE_CHECKING:
    from gepa_lab.engine import Result

TEXT_CAP_BYTES = 16 * 1024


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="milliseconds")


def write_json_atomic(path: Path, value: Any, indent: int | None = 2) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            # dumps (one shot) uses the C encoder when indent is None; dump never does.
            fh.write(json.dumps(value, indent=indent, ensure_ascii=False) + "\n")
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


class RunRecorder:
    """Tracker that writes the run record."""

    def __init__(self, run_dir: Path, resume: bool = False, checkpoint: dict[str, Any] | None = None):
        self.dir = Path(run_dir)
        self.dir.mkdir(parents=True, exist_ok=True)
        self.resume = resume
        self.resume_checkpoint = checkpoint

    def _rewind(self, checkpoint: dict[str, Any] | None) -> None:
        """Drop what the interrupted run wrote after its last checkpoint (everything, if it had
        none); the resumed run rewrites it identically from the evaluation cache."""
        checkpoint = checkpoint or {}
        events = self.dir / "events.jsonl"
        if events.exists():
            with open(events, "r+b") as fh:
                fh.truncate(int(checkpoint.get("record", {}).get("events_bytes", 0)))
        batches = int(checkpoint.get("batches", 0))
        for path in (self.dir / "evaluations").glob("*.json"):
            if int(path.name.split("-", 1)[0]) >= batches:
                path.unlink()

    def checkpoint(self, payload: dict[str, Any]) -> None:
        events = self.dir / "events.jsonl"
        payload["record"] = {"events_bytes": events.stat().st_size if events.exists() else 0}

    def _event(self, kind: str, data: dict[str, Any]) -> None:
        line = json.dumps({"at": _now(), "kind": kind, "data": data}, ensure_ascii=False)
        with open(self.dir / "events.jsonl", "a", encoding="utf-8") as fh:
            fh.write(line + "\n")

    def start(self, run: RunInfo) -> None:
        if self.resume:
            self._rewind(self.resume_checkpoint)
            iteration = self.resume_checkpoint["state"]["iteration"] if self.resume_checkpoint else None
            self._event("run_resumed", {"iteration": iteration})
            return
        ds = run.dataset
        write_json_atomic(
            self.dir / "experiment.json",
            {
                "id": run.experiment_id,
                "algorithm": run.algorithm,
                "started_at": run.started_at,
                "submit": run.submit,
                "config": run.config,
                "seed": {"id": run.seed_id, "artifact": run.seed_artifact},
                "dataset": {
                    "id": ds.id,
                    "version": ds.version,
                    "digests": run.digests,
                    "feedback": [c.to_dict() for c in ds.feedback],
                    "validation": [c.to_dict() for c in ds.validation],
                    "holdout": [c.to_dict() for c in ds.holdout],
                },
            },
        )

    def candidate(self, candidate: CandidateInfo) -> None:
        write_json_atomic(
            self.dir / "candidates" / f"{candidate.id}.json",
            {"status": "seed" if candidate.parent_id is None else "accepted", **asdict(candidate)},
        )

    def evaluation(self, record: EvaluationRecord) -> None:
        results = []
        for ev in record.evaluations:
            row = ev.to_dict()
            for key in ("output", "feedback", "trace"):
                row[key] = cap_bytes(row[key], TEXT_CAP_BYTES)
            results.append(row)
        write_json_atomic(
            self.dir / "evaluations" / f"{record.index:04d}-{record.phase}-{record.candidate_id}.json",
            {
                "index": record.index,
                "phase": record.phase,
                "candidate_id": record.candidate_id,
                "seed": record.seed,
                "summary": record.summary.to_dict(),
                "results": results,
                "recorded_at": _now(),
            },
            indent=None,  # the bulk of a run record; compact keeps recording off the profile
        )

    def proposal(self, p: Proposal) -> None:
        data: dict[str, Any] = {"iteration": p.iteration, "parent_id": p.parent_id, "component": p.component}
        if p.candidate_id:
            data["candidate_id"] = p.candidate_id
        if p.status == "reflection_rejected":
            data["error"] = p.reason
        if p.status == "rejected":
            data.update(parent_score=sum(p.parent_scores), child_score=sum(p.child_scores), reason=p.reason)
            # Rejected children were scored; keep their text so every evaluation file resolves.
            write_json_atomic(
                self.dir / "candidates" / f"{p.candidate_id}.json",
                {"status": "rejected", "id": p.candidate_id, "artifact": p.artifact, "parent_id": p.parent_id,
                 "component": p.component, "iteration": p.iteration, "rationale": p.rationale},
            )
        self._event(p.event_kind, data)

    def finish(self, result: Result) -> None:
        write_json_atomic(self.dir / "result.json", result.to_dict())

    def note(self, kind: str, data: dict[str, Any]) -> None:
        self._event(kind, data)

    def fail(self, error: BaseException) -> None:
        kind = "run_interrupted" if isinstance(error, KeyboardInterrupt) else "run_failed"
        self._event(kind, {"error": f"{type(error).__name__}: {error}"})
