"""Deterministic toy evaluator / reflector with real variety, for long-run tests."""

from __future__ import annotations

import hashlib
import json
import math

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


class BanditParent:
    """A stateful parent selector (UCB1): each pool member is an arm, an accepted child a win. Its
    counts come from the rounds' outcomes (`observe`) and are the run's state (`state` /
    `restore`): a resume that lost them would choose other parents."""

    draws = "none"

    def __init__(self, exploration: float = 0.5):
        self.exploration = exploration
        self.pulls: dict[str, int] = {}
        self.wins: dict[str, int] = {}

    def select(self, pool, rng):
        total = sum(self.pulls.values()) + 1

        def ucb(c):
            n = self.pulls.get(c.id, 0)
            return math.inf if n == 0 else self.wins.get(c.id, 0) / n + self.exploration * math.sqrt(math.log(total) / n)

        return max(pool.members, key=ucb)  # ties: the earliest member

    def observe(self, proposals):
        for p in proposals:
            self.pulls[p.parent_id] = self.pulls.get(p.parent_id, 0) + 1
            self.wins[p.parent_id] = self.wins.get(p.parent_id, 0) + (p.status == "accepted")

    def state(self):
        return {"pulls": dict(self.pulls), "wins": dict(self.wins)}

    def restore(self, state):
        self.pulls, self.wins = dict(state["pulls"]), dict(state["wins"])


class ForgetfulBandit(BanditParent):
    """The same selector without its state in the snapshots (what resume did before every slot's
    state was saved)."""

    state = None  # type: ignore[assignment]
