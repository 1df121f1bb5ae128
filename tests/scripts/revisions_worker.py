"""One of several processes hammering one revision store (for the concurrency test).

usage: revisions_worker.py STORE_URL PUBLISH_DIR WORKER ITERATIONS GO_FILE

Signals GO_FILE.ready-WORKER, waits for GO_FILE, then ITERATIONS times: read the active revision, submit its own new body on it,
submit a body every worker builds identically on that parent (an idempotent resubmission race),
and approve its own revision. Prints one JSON object: every outcome it saw.
"""

from __future__ import annotations

import json
import random
import sys
import time
from pathlib import Path

from gepa_lab.core.submission import Evidence, SubmissionRequest
from gepa_lab.revisions import service
from gepa_lab.revisions.errors import StaleParent
from gepa_lab.revisions.store import RevisionStore

NAME = "Concurrent Skill"


def body(step: str) -> dict:
    return {"kind": "skill", "name": NAME, "description": "Exercised by two processes at once.",
            "when_to_use": "Use in the concurrency test.", "steps": ["Read the task.", step], "pitfalls": []}


def request(artifact: dict, parent: str | None, worker: str) -> SubmissionRequest:
    evidence = Evidence(f"exp-{worker}", "d", "v1", {"holdout": "h"}, 0.5, 0.9, 0.9 - 0.5, 10)
    return SubmissionRequest(f"optimization/gepa:{worker}", artifact, "update" if parent else "create", parent,
                             evidence)


def main() -> None:
    url, publish_dir, worker, iterations, go = sys.argv[1:6]
    store = RevisionStore(url)
    events: list[dict] = []
    Path(f"{go}.ready-{worker}").touch()  # imported and connected: the start line is fair
    deadline = time.monotonic() + 30
    while not Path(go).exists():
        if time.monotonic() > deadline:
            raise SystemExit("GO file never appeared")
        time.sleep(0.005)
    rng = random.Random(worker)

    def pause() -> None:
        # SQLite's busy handler lets a waiter sleep up to 100 ms: without gaps between our
        # transactions one process would run all its iterations while the other sleeps.
        time.sleep(rng.uniform(0.0, 0.006))

    for i in range(int(iterations)):
        active = store.active(NAME)
        parent = active.id if active else None
        pause()
        try:
            mine = service.submit(store, request(body(f"worker {worker} idea {i}"), parent, worker))
            events.append({"kind": "submit", "outcome": mine.revision.status, "revision_id": mine.revision.id,
                           "parent": parent, "resubmitted": mine.resubmitted})
        except StaleParent:
            events.append({"kind": "submit", "outcome": "stale", "parent": parent})
            continue
        pause()
        try:
            shared = service.submit(store, request(body(f"shared idea on {parent}"), parent, worker))
            events.append({"kind": "shared", "outcome": shared.revision.status, "revision_id": shared.revision.id,
                           "parent": parent, "resubmitted": shared.resubmitted})
        except StaleParent:
            events.append({"kind": "shared", "outcome": "stale", "parent": parent})
        pause()
        try:
            decision = service.approve(store, mine.revision.id, f"worker-{worker}", publish_root=Path(publish_dir))
            events.append({"kind": "approve", "outcome": "approved", "revision_id": decision.revision.id,
                           "archived": decision.previous})
        except StaleParent:
            events.append({"kind": "approve", "outcome": "stale", "revision_id": mine.revision.id})
    store.close()
    print(json.dumps({"worker": worker, "events": events}))


if __name__ == "__main__":
    main()
