"""The run record: a tracker that writes everything needed to audit a run without MLflow.

Files in the run directory (all owned here):
- `experiment.json`   experiment id, resolved config, seed artifact, dataset (every case) and digests
- `evaluations.jsonl` one line per scored batch (phase, candidate, seed, per-case results; text
                      fields capped at 16 KiB)
- `candidates.jsonl`  one line per scored candidate: the seed, accepted and rejected children
- `events.jsonl`      proposals (what the reflector saw and replied, what became of it) and
                      run-level events (resumed, failed, interrupted, notes)
- `result.json`       the `Result`
- `promotion.json`    the outcome for CI: eligible, reason, submission and revision id / status

JSON-lines files are appended and flushed line by line. Search lines carry `mark` = the number
of batches scored when they were written, so a resumed run drops exactly what its interrupted
predecessor wrote after the checkpoint it continues from, and rewrites it identically.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from gepa_lab.core.artifacts import artifact_dict
from gepa_lab.core.contracts import SPLITS, Case, Dataset
from gepa_lab.core.events import CandidateInfo, IterationStats, Proposal, RunInfo, ScoredBatch
from gepa_lab.core.result import Result
from gepa_lab.runs.files import JsonLines, read_json, rewrite_jsonl, write_json_atomic
from gepa_lab.search.redact import cap_bytes

TEXT_CAP_BYTES = 16 * 1024
EXPERIMENT_FILE, RESULT_FILE, PROMOTION_FILE = "experiment.json", "result.json", "promotion.json"
EVALUATIONS_FILE, CANDIDATES_FILE, EVENTS_FILE = "evaluations.jsonl", "candidates.jsonl", "events.jsonl"


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="milliseconds")


def _cap(text: str) -> str:
    return text if len(text) * 4 <= TEXT_CAP_BYTES else cap_bytes(text, TEXT_CAP_BYTES)


class RunRecorder:
    def __init__(self, run_dir: Path | str):
        self.dir = Path(run_dir)
        self._evaluations = JsonLines(self.dir / EVALUATIONS_FILE)
        self._candidates = JsonLines(self.dir / CANDIDATES_FILE)
        self._events = JsonLines(self.dir / EVENTS_FILE)
        self._mark = 0  # batches scored so far
        self._submit = False

    def _event(self, kind: str, data: dict[str, Any], mark: int | None = None) -> None:
        row: dict[str, Any] = {"at": _now(), "kind": kind}
        if mark is not None:
            row["mark"] = mark
        row["data"] = data
        self._events.append(row)

    # -- hooks ---------------------------------------------------------------------------
    def start(self, run: RunInfo) -> None:
        self.dir.mkdir(parents=True, exist_ok=True)
        self._submit = run.submit
        if run.resume is not None:
            self._mark = run.resume.batches

            def keep(row: dict[str, Any]) -> bool:
                return int(row.get("mark", 0)) <= self._mark

            for name in (EVALUATIONS_FILE, CANDIDATES_FILE, EVENTS_FILE):
                rewrite_jsonl(self.dir / name, keep)
            self._event("run_resumed", {"iteration": run.resume.iteration, "batches": run.resume.batches})
            return
        ds = run.dataset
        write_json_atomic(self.dir / EXPERIMENT_FILE, {
            "id": run.experiment_id, "name": run.name, "algorithm": run.algorithm, "started_at": run.started_at,
            "submit": run.submit, "config": run.config,
            "seed": {"id": run.seed_id, "artifact": artifact_dict(run.seed)},
            "dataset": {"id": ds.id, "version": ds.version, "digests": run.digests,
                        **{split: [c.to_dict() for c in ds.split(split)] for split in run.digests}},
        })

    def evaluation(self, batch: ScoredBatch) -> None:
        self._mark = batch.index + 1
        self._evaluations.append({
            "mark": self._mark, "index": batch.index, "phase": batch.phase, "candidate_id": batch.candidate_id,
            "seed": batch.seed, "at": _now(),
            "results": [{"case_id": ev.case_id, "score": ev.score, "output": _cap(ev.output),
                         "feedback": _cap(ev.feedback), "trace": _cap(ev.trace), "objectives": ev.objectives}
                        for ev in batch.evaluations],
        })

    def candidate(self, c: CandidateInfo) -> None:
        self._candidates.append({
            "mark": self._mark, "id": c.id, "status": "seed" if c.parent_id is None else "accepted",
            "artifact": artifact_dict(c.artifact), "parent_id": c.parent_id, "component": c.component,
            "iteration": c.iteration, "rationale": c.rationale, "metric_calls": c.metric_calls,
            "validation_mean": c.validation.summary.score,
        })

    def proposal(self, p: Proposal) -> None:
        batches = [b.index for b in (p.parent_batch, p.child_batch, p.validation_batch) if b is not None]
        data: dict[str, Any] = {
            "iteration": p.iteration, "status": p.status, "reason": p.reason, "parent_id": p.parent_id,
            "component": p.component, "candidate_id": p.candidate_id, "minibatch": list(p.minibatch),
            "paired_seed": p.paired_seed, "parent_sum": p.parent_sum, "child_sum": p.child_sum,
            "batches": batches, "rationale": p.rationale, "records": p.records, "reply": p.reply,
        }
        if p.status == "rejected" and p.artifact is not None:
            # Rejected children were scored; keep their text so every evaluation line resolves.
            self._candidates.append({
                "mark": self._mark, "id": p.candidate_id, "status": "rejected", "artifact": artifact_dict(p.artifact),
                "parent_id": p.parent_id, "component": p.component, "iteration": p.iteration,
                "rationale": p.rationale,
            })
        self._event(p.event_kind, data, mark=self._mark)

    def iteration(self, stats: IterationStats) -> None:
        """Not recorded: the proposals and evaluations above determine every statistic."""

    def note(self, kind: str, data: dict[str, Any]) -> None:
        self._event(kind, data)

    def finish(self, result: Result) -> None:
        write_json_atomic(self.dir / RESULT_FILE, result.to_dict())
        write_json_atomic(self.dir / PROMOTION_FILE, promotion_outcome(result, self._submit))
        self._close()

    def fail(self, error: BaseException) -> None:
        kind = "run_interrupted" if isinstance(error, KeyboardInterrupt) else "run_failed"
        self._event(kind, {"error": f"{type(error).__name__}: {error}"})
        self._close()

    def _close(self) -> None:
        for lines in (self._evaluations, self._candidates, self._events):
            lines.close()


def promotion_outcome(result: Result, submit: bool) -> dict[str, Any]:
    """`promotion.json`: what a CI job needs to know about a finished run, in one small file."""
    revision = result.revision or {}
    return {
        "experiment_id": result.experiment_id,
        "eligible": result.promotion_eligible,
        "reason": result.promotion_reason,
        "submit": submit,
        "submission_reason": result.submission_reason,
        "revision_id": revision.get("revision_id"),
        "revision_status": revision.get("status"),
        "artifact_id": result.best_id,
        "holdout_delta": result.holdout_delta,
    }


@dataclass(frozen=True)
class RecordedExperiment:
    """`experiment.json` read back: what a later re-evaluation (revision monitoring) needs."""

    id: str
    name: str
    config: dict[str, Any]  # the resolved configuration (evaluator `_target_` included for CLI runs)
    seed: dict[str, Any]  # {"id", "artifact"}
    dataset: Dataset  # the frozen dataset, every case
    digests: dict[str, str]


def load_experiment(run_dir: Path | str) -> RecordedExperiment:
    """The run's recorded experiment; a split whose cases no longer match the recorded digest is a
    ValueError (the record was edited)."""
    path = Path(run_dir) / EXPERIMENT_FILE
    if not path.is_file():
        raise FileNotFoundError(f"no {EXPERIMENT_FILE} in {run_dir}: not a gepa-lab run directory")
    data = read_json(path, "experiment record")
    ds = data["dataset"]
    splits = {name: [Case.from_dict(row) for row in ds.get(name, [])] for name in SPLITS}
    dataset = Dataset(ds["id"], ds["version"], splits["feedback"], splits["validation"], splits["holdout"])
    digests = dict(ds["digests"])
    changed = [name for name, digest in dataset.digests().items() if digests.get(name) != digest]
    if changed:
        raise ValueError(f"{path} does not match its recorded digests ({', '.join(changed)}); the record was "
                         "edited and cannot be trusted")
    return RecordedExperiment(str(data["id"]), str(data.get("name", "")), dict(data.get("config") or {}),
                              dict(data["seed"]), dataset, digests)
