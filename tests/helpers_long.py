"""Deterministic toy evaluator / reflector with real variety, for long-run tests."""

from __future__ import annotations

import hashlib
import json

from gepa_lab import Case, Dataset, Evaluation, SkillSpec

PHRASES = ["Check the result.", "Paginate to the end.", "Deduplicate by id.", "Validate fields.",
           "Stop on an empty page.", "Normalise units."]


def long_seed() -> SkillSpec:
    return SkillSpec("Toy Skill", "a toy workflow", "when testing", ["Do the task."])


def long_dataset(feedback: int = 6, validation: int = 4, holdout: int = 4) -> Dataset:
    def cases(prefix: str, n: int) -> list[Case]:
        return [Case(f"{prefix}-{i}", f"task {prefix} {i}", critical=(prefix == "ho" and i == 0)) for i in range(n)]

    return Dataset("toy", "v1", cases("fb", feedback), cases("val", validation), cases("ho", holdout))


class FileSubmitter:
    """A revision store in a JSON-lines file (tests): one line per revision; the same artifact from
    the same run gets its existing revision back, as the real store does."""

    def __init__(self, path: str):
        self.path = path

    def submit(self, request: dict) -> dict:
        row = {"source": request["source"], "artifact": request["artifact"]}
        try:
            with open(self.path, encoding="utf-8") as fh:
                rows = [json.loads(line) for line in fh]
        except FileNotFoundError:
            rows = []
        if row not in rows:
            with open(self.path, "a", encoding="utf-8") as fh:
                fh.write(json.dumps(row) + "\n")
            rows.append(row)
        return {"revision_id": f"rev-{rows.index(row) + 1}", "status": "pending_approval"}


def _unit(*parts: object) -> float:
    digest = hashlib.sha256("|".join(map(str, parts)).encode()).hexdigest()
    return int(digest[:12], 16) / 16**12


class HashEvaluator:
    """Score = skill coverage of case-specific phrases + seeded noise; deterministic per
    (artifact, case, seed), independent of batching."""

    def fingerprint(self) -> str:
        return "hash-evaluator-v1"  # subclasses that only observe calls share the cache

    def evaluate(self, artifact, cases, seed):
        text = " ".join(artifact.steps + artifact.pitfalls)
        out = []
        for case in cases:
            wanted = [p for i, p in enumerate(PHRASES) if _unit(case.id, i) < 0.5]
            covered = sum(p in text for p in wanted) / max(1, len(wanted))
            noise = 0.2 * _unit(seed, case.id, "noise")
            score = min(1.0, 0.2 + 0.6 * covered + noise)
            missing = [p for p in wanted if p not in text]
            out.append(Evaluation(case.id, score, output=f"out {case.id}",
                                  feedback="missing: " + "; ".join(missing),
                                  objectives={"cost_usd": 0.001 * (1 + len(text) / 100)}))
        return out


class VaryingReflector:
    """Adds a missing phrase named in the feedback (or a filler) to the selected component.
    Subclasses that only inject faults (interrupts, kills) are the same reflector to a resume."""

    def fingerprint(self) -> str:
        return "varying-reflector-v1"

    def reflect(self, artifact, component, records):
        data = artifact.to_dict()
        missing = [p for r in records for p in r["feedback"].removeprefix("missing: ").split("; ") if p]
        pick = missing[len(data["steps"]) % len(missing)] if missing else f"Be careful #{len(data['pitfalls'])}."
        if component in ("steps", "pitfalls"):
            data[component] = data[component] + [pick]
        else:
            data[component] = data[component] + f" ({pick})"
        return data


class InterruptingReflector(VaryingReflector):
    """A VaryingReflector that raises KeyboardInterrupt at its `at`-th reflection (0: never), as a
    Ctrl-C would: the run is interrupted there and resumes with the same reflector."""

    def __init__(self, at: int = 0):
        self.at, self.calls = at, 0

    def reflect(self, artifact, component, records):
        self.calls += 1
        if self.calls == self.at:
            raise KeyboardInterrupt
        return super().reflect(artifact, component, records)
