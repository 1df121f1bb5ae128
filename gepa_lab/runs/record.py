"""The run record: the one place a run's facts are written, and read back.

Files in the run directory (all owned here; nobody else parses them):
- `experiment.json`   written once when the run starts: its identity (everything that decides
                      the result), the resolved configuration, the seed artifact, every case and
                      the split digests. (Rewritten only by a resume that replaces the transfer
                      evaluator before the search started.)
- `evaluations.jsonl` every evaluator reply that was paid for, one line per case, under its cache
                      key (artifact id, case id, seed, evaluator fingerprint). Append-only and
                      never rewound: it IS the evaluation cache, so no case is ever paid twice.
- `events.jsonl`      the run's history, in order: scored batches (keys into evaluations.jsonl),
                      proposals, round ends (the search state to resume from), the end of the
                      search, decisions and submissions; and lifecycle notes (resumed,
                      interrupted, failed).
- `result.json`, `promotion.json`  views of the latest decision (and its submission);
  `confirmation.json` the one opening of the dataset's sealed confirmation split, if any.

Resuming reads experiment.json, loads evaluations.jsonl and cuts events.jsonl back to its last
durable event (a round end, the search's end, a decision or a submission), keeping lifecycle
notes: the run then continues from exactly that state and replays the cut part from the cache.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from gepa_lab.core.artifacts import artifact_dict
from gepa_lab.core.contracts import SPLITS, Case, Dataset, Evaluation, Evaluator
from gepa_lab.core.errors import GepaLabError, ResumeError, describe
from gepa_lab.core.events import EVENT_KINDS, Proposal, ScoredBatch
from gepa_lab.core.settings import EvaluationSettings, build_target, from_mapping
from gepa_lab.runs.files import JsonLines, read_json, write_text_atomic

EXPERIMENT_FILE, RESULT_FILE, PROMOTION_FILE = "experiment.json", "result.json", "promotion.json"
CONFIRMATION_FILE = "confirmation.json"
EVALUATIONS_FILE, EVENTS_FILE = "evaluations.jsonl", "events.jsonl"
RECORD_FILES = (EXPERIMENT_FILE, EVALUATIONS_FILE, EVENTS_FILE)
# Files of the record format before this one: a run dir holding them cannot be resumed here.
EARLIER_FORMAT = ("checkpoint.json", "pool.jsonl", "candidates.jsonl", "cache.sqlite")
FORMAT = 3
DURABLE = frozenset({"round_end", "search_end", "decision", "submission", "run_finished", "confirmation"})
PROPOSAL_KINDS = frozenset(EVENT_KINDS.values())
LIFECYCLE = frozenset({"run_resumed", "run_interrupted", "run_failed"})


def now() -> str:
    return datetime.now(UTC).isoformat(timespec="milliseconds")


def _lines(path: Path) -> list[tuple[int, bytes]]:
    """(line number, raw line) of a JSON-lines file; a torn last line (a crash mid-write) is left
    out."""
    return [(number, line) for number, line in enumerate(path.read_bytes().split(b"\n")[:-1], start=1)
            if line.strip()] if path.exists() else []


def _parse(path: Path, number: int, line: bytes) -> dict[str, Any]:
    try:
        row = json.loads(line.decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise ResumeError(f"run record {path} line {number} is damaged ({type(exc).__name__}); the run cannot be "
                          "continued from it: restore the file or start a new run") from None
    if not isinstance(row, dict):
        raise ResumeError(f"run record {path} line {number} is not a JSON object; restore the file or start a "
                          "new run")
    return row


@contextmanager
def _damaged(path: Path, number: int) -> Iterator[None]:
    """A row that parses but lacks what the record needs (a key, an evaluation it refers to): one
    line naming the file, the line and what is missing."""
    try:
        yield
    except (KeyError, TypeError, ValueError, AttributeError) as exc:
        what = f"missing {exc.args[0]}" if isinstance(exc, KeyError) and exc.args else describe(exc)
        raise ResumeError(f"run record {path} line {number} is damaged ({what}); the run cannot be continued from "
                          "it: restore the file or start a new run") from None


@dataclass
class Recorded:
    """What a record holds, read back in order: what a resumed run continues from."""

    experiment: dict[str, Any]
    batches: dict[int, ScoredBatch] = field(default_factory=dict)
    proposals: list[dict[str, Any]] = field(default_factory=list)
    snapshot: dict[str, Any] | None = None  # the last round end's search state
    search_end: dict[str, Any] | None = None
    decisions: list[dict[str, Any]] = field(default_factory=list)
    submissions: list[dict[str, Any]] = field(default_factory=list)
    finished: bool = False  # the latest decision (or submission) reached every tracker
    confirmation: dict[str, Any] | None = None

    def latest_result(self) -> dict[str, Any]:
        """The latest decision's result, with its submission's outcome when there is one."""
        last = self.decisions[-1]
        result = dict(last["result"])
        for sub in self.submissions:
            if sub["decision"] == last["number"]:
                result.update(submission_reason=sub["submission_reason"], revision=sub["revision"])
        return result


class RunRecord:
    """Writes (and, on resume, reads back) one run directory's record. Thread-safe: a round's
    concurrent proposals store evaluations through it. Without a directory (`RunRecord(None)`)
    it keeps and writes nothing."""

    def __init__(self, run_dir: Path | str | None):
        self.dir = Path(run_dir) if run_dir is not None else None
        self._evaluations = JsonLines(self.dir / EVALUATIONS_FILE) if self.dir else None
        self._events = JsonLines(self.dir / EVENTS_FILE) if self.dir else None
        self._cache: dict[str, Evaluation] = {}
        self._lock = threading.Lock()

    # -- opening ---------------------------------------------------------------------------
    @classmethod
    def create(cls, run_dir: Path | str, experiment: dict[str, Any]) -> RunRecord:
        """A new run: the directory must hold no record (a run dir is never appended to)."""
        if used := [name for name in (*RECORD_FILES, *EARLIER_FORMAT) if (Path(run_dir) / name).exists()]:
            raise ResumeError(f"{run_dir} already holds a run ({used[0]}): resume it with resume={run_dir}, or use a "
                              "new run directory")
        record = cls(run_dir)
        record._view(EXPERIMENT_FILE, {"format": FORMAT, **experiment})
        return record

    def amend_experiment(self, experiment: dict[str, Any]) -> None:
        """Before its search starts (a transfer evaluator refused before it, then fixed), a run's
        identity may still change: what the record says it is must stay true."""
        self._view(EXPERIMENT_FILE, experiment)

    @classmethod
    def reopen(cls, run_dir: Path | str) -> tuple[RunRecord, Recorded]:
        """An existing run: its record read back, events cut to the last durable one."""
        record, root = cls(run_dir), Path(run_dir)
        recorded = Recorded(read_experiment(root))
        path = root / EVALUATIONS_FILE
        for number, line in _lines(path):
            row = _parse(path, number, line)
            with _damaged(path, number):
                record._cache[str(row["key"])] = Evaluation.from_dict(row)
        if _has_torn_tail(path):  # cut a line a crash left half-written: the next append starts its own line
            with open(path, "r+b") as fh:
                fh.truncate(fh.read().rfind(b"\n") + 1)
        path = root / EVENTS_FILE
        rows = [(number, _parse(path, number, line)) for number, line in _lines(path)]
        last = max((i for i, (_, row) in enumerate(rows) if row.get("kind") in DURABLE), default=-1)
        kept = rows[:last + 1] + [(n, row) for n, row in rows[last + 1:] if row.get("kind") in LIFECYCLE]
        if len(kept) != len(rows) or _has_torn_tail(path):
            write_text_atomic(path, "".join(json.dumps(row, ensure_ascii=False) + "\n" for _, row in kept))
        for number, row in kept:
            with _damaged(path, number):
                record._replay(row, recorded)
        return record, recorded

    def _replay(self, row: dict[str, Any], recorded: Recorded) -> None:
        kind, data = row.get("kind"), row.get("data") or {}
        if kind == "batch":
            if lost := [ref for ref in data["cases"] if isinstance(ref, str) and ref not in self._cache]:
                raise KeyError(f"evaluation {lost[0]} (not in {EVALUATIONS_FILE})")
            evaluations = tuple(self._cache[ref] if isinstance(ref, str) else Evaluation.from_dict(ref)
                                for ref in data["cases"])
            recorded.batches[int(data["index"])] = ScoredBatch(int(data["index"]), data["phase"],
                                                               data["candidate_id"], int(data["seed"]), evaluations)
        elif kind in PROPOSAL_KINDS:
            recorded.proposals.append(data)
        elif kind in ("round_end", "search_end", "confirmation"):
            setattr(recorded, "snapshot" if kind == "round_end" else kind, data)
        elif kind in ("decision", "submission"):
            getattr(recorded, f"{kind}s").append(data)
            recorded.finished = False
        elif kind == "run_finished":
            recorded.finished = True

    # -- the evaluation cache ---------------------------------------------------------------
    def lookup(self, key: str) -> Evaluation | None:
        return self._cache.get(key)

    def store(self, items: Iterable[tuple[str, Evaluation]]) -> None:
        """Paid evaluator replies, each on disk as soon as it exists (in memory: not kept)."""
        if self._evaluations is None:
            return
        with self._lock:
            for key, ev in items:
                self._cache[key] = ev
                self._evaluations.append({"key": key, **ev.to_dict()})

    # -- history ----------------------------------------------------------------------------
    def event(self, kind: str, data: dict[str, Any]) -> None:
        if self._events is not None:
            with self._lock:
                self._events.append({"at": now(), "kind": kind, "data": data})

    def _view(self, name: str, value: dict[str, Any]) -> None:
        if self.dir is not None:
            write_text_atomic(self.dir / name, json.dumps(value, indent=2, ensure_ascii=False, default=str) + "\n")

    @property
    def persistent(self) -> bool:
        """False for an in-memory record: its history is not kept, so callers need not build it."""
        return self._events is not None

    def batch(self, batch: ScoredBatch, keys: Sequence[str]) -> None:
        # A reply that failed transiently was never cached: it is kept inline.
        cases = [key if self._cache.get(key) is ev else ev.to_dict() for key, ev in zip(keys, batch.evaluations,
                                                                                      strict=True)]
        self.event("batch", {"index": batch.index, "phase": batch.phase, "candidate_id": batch.candidate_id,
                             "seed": batch.seed, "cases": cases})

    def proposal(self, p: Proposal, metric_calls: int) -> None:
        if not self.persistent:
            return
        batches = [b.index for b in (p.parent_batch, p.child_batch, p.validation_batch) if b is not None]
        self.event(EVENT_KINDS[p.status], {
            "kind": p.kind, "iteration": p.iteration, "status": p.status, "reason": p.reason, "parent_id": p.parent_id,
            "parents": list(p.parents), "component": p.component, "components": list(p.components),
            "candidate_id": p.candidate_id, "artifact": artifact_dict(p.artifact) if p.artifact is not None else None,
            "minibatch": list(p.minibatch), "paired_seed": p.paired_seed, "parent_sum": p.parent_sum,
            "child_sum": p.child_sum, "batches": batches, "rationale": p.rationale, "records": p.records,
            "reply": p.reply, "metric_calls": metric_calls})

    def decision(self, number: int, settings: dict[str, Any], result: dict[str, Any],
                 outcome: dict[str, Any]) -> None:
        self.event("decision", {"number": number, "settings": settings, "result": result})
        self._results(result, outcome)

    def submission(self, decision: int, result: dict[str, Any], outcome: dict[str, Any]) -> None:
        self.event("submission", {"decision": decision, "submission_reason": result.get("submission_reason"),
                                  "revision": result.get("revision")})
        self._results(result, outcome)

    def _results(self, result: dict[str, Any], outcome: dict[str, Any]) -> None:
        self._view(RESULT_FILE, result)
        self._view(PROMOTION_FILE, outcome)

    def confirmation(self, data: dict[str, Any]) -> None:
        self.event("confirmation", data)
        self._view(CONFIRMATION_FILE, data)

    def close(self) -> None:
        with self._lock:
            for lines in (self._evaluations, self._events):
                if lines is not None:
                    lines.close()


# -- reading a run directory (the CLI, reports, revision monitoring) ----------------------------
def read_experiment(run_dir: Path) -> dict[str, Any]:
    path = run_dir / EXPERIMENT_FILE
    if not path.is_file():
        if old := [name for name in EARLIER_FORMAT if (run_dir / name).exists()]:
            raise ResumeError(f"{run_dir} holds a run recorded by an earlier gepa-lab version ({old[0]}); it cannot "
                              "be continued by this one: start a new run")
        # Records without their experiment: neither resumable nor reusable as they are.
        if records := ", ".join(name for name in RECORD_FILES if (run_dir / name).exists()):
            raise ResumeError(f"{run_dir} holds run records ({records}) but no gepa_lab run to continue (no "
                              f"{EXPERIMENT_FILE}); use a new run directory, or delete {records} to reuse it")
        raise ResumeError(f"{run_dir} holds no gepa_lab run (no {EXPERIMENT_FILE}); pass the run directory the run "
                          "printed")
    try:
        data = read_json(path, "run record")
    except (ValueError, UnicodeDecodeError) as exc:
        raise ResumeError(f"{exc}; restore it or start a new run") from None
    if not isinstance(data, dict) or data.get("format") != FORMAT:
        found = data.get("format") if isinstance(data, dict) else None
        raise ResumeError(f"run record {path} has format {found!r}, expected {FORMAT} (written by another gepa-lab "
                          "version); start a new run")
    return data


def run_state(run_dir: Path) -> str:
    """`new` (no record), `unfinished` (resume it) or `finished` (decided, and every tracker told):
    what a run dir holds."""
    if not any((run_dir / name).exists() for name in (*RECORD_FILES, *EARLIER_FORMAT)):
        return "new"
    read_experiment(run_dir)
    path = run_dir / EVENTS_FILE
    durable = [kind for n, line in _lines(path) if (kind := _parse(path, n, line).get("kind")) in DURABLE]
    return "finished" if durable and durable[-1] == "run_finished" else "unfinished"


@dataclass(frozen=True)
class RecordedExperiment:
    """`experiment.json` read back: what a later re-evaluation (revision monitoring) needs."""

    id: str
    name: str
    config: dict[str, Any]  # the resolved configuration (evaluator `_target_` included for CLI runs)
    seed: dict[str, Any]  # {"id", "artifact"}
    dataset: Dataset  # the frozen dataset, every case
    digests: dict[str, str]

    def evaluator(self) -> tuple[Evaluator, EvaluationSettings]:
        """The run's evaluator and evaluation settings, rebuilt from the recorded configuration (a
        run started with `python -m gepa_lab` records the evaluator's `_target_`); ValueError: why not."""
        node = self.config.get("evaluator")
        if not isinstance(node, dict) or "_target_" not in node:
            raise ValueError(f"experiment {self.id} recorded no evaluator `_target_` (only runs started with "
                             "python -m gepa_lab do)")
        try:
            evaluator: Evaluator = build_target("evaluator", node)
        except GepaLabError as exc:
            raise ValueError(f"cannot rebuild the run's evaluator: {exc}") from exc
        try:
            return evaluator, from_mapping(EvaluationSettings, self.config.get("evaluation") or {}, "evaluation")
        except (TypeError, ValueError) as exc:
            raise ValueError(f"experiment {self.id} recorded unusable evaluation settings: {describe(exc)}") from exc


def simulated(config: dict[str, Any]) -> bool:
    """Whether a run's recorded evaluator is a simulation (its class says `simulated = True`)."""
    try:
        from hydra.utils import get_class

        return getattr(get_class((config.get("evaluator") or {})["_target_"]), "simulated", False) is True
    except Exception:  # no evaluator recorded, or not importable here
        return False


def load_experiment(run_dir: Path | str) -> RecordedExperiment:
    """The run's recorded experiment; a split whose cases no longer match the recorded digest is a
    ValueError (the record was edited)."""
    run_dir = Path(run_dir)
    if not (run_dir / EXPERIMENT_FILE).is_file():
        raise FileNotFoundError(f"no {EXPERIMENT_FILE} in {run_dir}: not a gepa-lab run directory")
    data = read_experiment(run_dir)
    ds = data["dataset"]
    dataset = Dataset(ds["id"], ds["version"],
                      **{name: [Case.from_dict(row) for row in ds.get(name, [])] for name in SPLITS})
    digests = dict(ds["digests"])
    if changed := [name for name, digest in dataset.digests().items() if digests.get(name) != digest]:
        raise ValueError(f"{run_dir / EXPERIMENT_FILE} does not match its recorded digests ({', '.join(changed)}); "
                         "the record was edited and cannot be trusted")
    return RecordedExperiment(str(data["id"]), str(data.get("name", "")), dict(data.get("config") or {}),
                              dict(data["seed"]), dataset, digests)


def read_view(run_dir: Path | str, name: str = RESULT_FILE) -> dict[str, Any] | None:
    """A view of the record: the latest decision's result (RESULT_FILE) or the confirmation
    (CONFIRMATION_FILE); None before there is one."""
    path = Path(run_dir) / name
    return dict(read_json(path, "run " + name.removesuffix(".json"))) if path.is_file() else None


def read_decision(run_dir: Path | str, number: int) -> dict[str, Any] | None:
    """The result of the run's decision `number` (a run decided again keeps every decision)."""
    path = Path(run_dir) / EVENTS_FILE
    for n, line in _lines(path):
        if b'"decision"' in line and (row := _parse(path, n, line)).get("kind") == "decision" \
                and row["data"]["number"] == number:
            return dict(row["data"]["result"])
    return None


def _has_torn_tail(path: Path) -> bool:
    return path.is_file() and path.read_bytes()[-1:] not in (b"", b"\n")
