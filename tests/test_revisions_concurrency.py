"""Two (and twelve) processes submit and approve against one SQLite store at the same time: no
revision is lost or duplicated, never two are active, and the approvals form one unbroken chain."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

import pytest

from gepa_lab.revisions.publish import render
from gepa_lab.revisions.store import RevisionStore

WORKER = Path(__file__).resolve().parent / "scripts" / "revisions_worker.py"
NAME = "Concurrent Skill"


@pytest.mark.slow
@pytest.mark.parametrize("workers, iterations", [("ab", 25), ("abcdefghijkl", 4)], ids=["two", "twelve"])
def test_processes_submitting_and_approving_at_once_lose_nothing(tmp_path, workers, iterations):
    url, published, go = f"sqlite:///{tmp_path / 'revisions.db'}", tmp_path / "published", tmp_path / "go"
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    procs = [subprocess.Popen([sys.executable, str(WORKER), url, str(published), w, str(iterations), str(go)],
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
             for w in workers]
    deadline = time.monotonic() + 60
    while not all(Path(f"{go}.ready-{w}").exists() for w in workers):
        assert time.monotonic() < deadline and all(p.poll() is None for p in procs), "a worker did not start"
        time.sleep(0.01)
    go.touch()
    reports = []
    for proc in procs:
        out, err = proc.communicate(timeout=120)
        assert proc.returncode == 0, err
        reports.append(json.loads(out))
    events = [e for r in reports for e in r["events"]]
    counts = Counter((e["kind"], e["outcome"]) for e in events)

    with RevisionStore(url) as store:
        revisions = store.revisions(NAME)
        audit = store.audit(NAME)
        active = store.active(NAME)
    by_id = {r.id: r for r in revisions}

    # Nothing lost, nothing invented: every revision a worker was handed is stored, and vice versa.
    reported = {e["revision_id"] for e in events if e["kind"] in ("submit", "shared") and e["outcome"] != "stale"}
    assert reported == set(by_id)
    # Nothing duplicated: one row per (parent, body); versions 1..n without gaps or repeats.
    assert len({(r.parent_revision_id, r.artifact_hash) for r in revisions}) == len(revisions)
    assert sorted(r.version for r in revisions) == list(range(1, len(revisions) + 1))
    shared = [e for e in events if e["kind"] == "shared" and e["outcome"] != "stale"]
    for parent in {e["parent"] for e in shared}:
        assert len({e["revision_id"] for e in shared if e["parent"] == parent}) == 1  # raced, one row
    # Never doubly active; the pointer and the published file agree with the one active row.
    assert [r.id for r in revisions if r.status == "active"] == [active.id]
    assert (published / "concurrent-skill" / "SKILL.md").read_text() == render(active.body)[1]
    # The approvals form one chain: each approved revision's parent is the one approved before it.
    approved = [e.revision_id for e in audit if e.action == "approved"]
    reported_approvals = [e["revision_id"] for e in events if e["kind"] == "approve" and e["outcome"] == "approved"]
    assert len(set(approved)) == len(approved) and set(approved) == set(reported_approvals)
    assert len(reported_approvals) == len(approved)
    assert [by_id[r].parent_revision_id for r in approved] == [None, *approved[:-1]]
    assert all(by_id[r].status == "archived" for r in approved[:-1]) and approved[-1] == active.id
    # Every stale approval was recorded as a rejection.
    stale = {e["revision_id"] for e in events if e["kind"] == "approve" and e["outcome"] == "stale"}
    assert stale == {e.revision_id for e in audit if e.action == "rejected"}
    assert all(by_id[r].status == "rejected" for r in stale)
    assert counts[("submit", "pending_approval")] == counts[("approve", "approved")] + counts[("approve", "stale")]
    resubmitted = sum(1 for e in shared if e["resubmitted"])
    conflicts = counts[("submit", "stale")] + counts[("approve", "stale")] + resubmitted
    assert conflicts > 0, "the workers never raced; the test proved nothing"
    print(f"\nconcurrency: {dict(sorted(counts.items()))}; {resubmitted} shared resubmissions answered with the "
          f"existing row; {len(revisions)} revisions, {len(approved)} approvals in one chain")
