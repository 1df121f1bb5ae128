"""Team services (docs/study.md): a local PostgreSQL server and an `mlflow server` (PostgreSQL
backend store) on 127.0.0.1, started and stopped here; a sweep of 4 parallel joblib jobs logs to the
server and submits to the revision store on PostgreSQL. Every run, candidate and revision arrives
once, and the database password (from PGPASSWORD only) appears in no log, param, tag, artifact,
run record or revision.

PostgreSQL comes from Debian's `postgresql` package (`.ci/run` installs it when missing); run as
root, the server runs as `nobody` (initdb and postgres refuse root). Without the binaries the test
is skipped, except under CI (CI=true), where that is a failure.
"""

from __future__ import annotations

import glob
import json
import os
import pwd
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from gepa_lab.cli import sweep_id

pytestmark = pytest.mark.slow
READY_TIMEOUT_S = 90.0
PG_USER = "gepa"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def pg_bin() -> Path | None:
    found = shutil.which("pg_ctl")
    if found:
        return Path(found).resolve().parent
    candidates = sorted(glob.glob("/usr/lib/postgresql/*/bin/pg_ctl"), key=lambda p: int(p.split("/")[4]))
    return Path(candidates[-1]).parent if candidates else None


def stop(proc: subprocess.Popen[bytes], sig: int = signal.SIGTERM) -> None:
    if proc.poll() is None:
        os.killpg(proc.pid, sig)
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(timeout=5)


class Postgres:
    """A throwaway cluster: scram-sha-256 password auth, TCP on 127.0.0.1 only, no Unix socket."""

    def __init__(self, bindir: Path):
        self.bindir, self.port = bindir, free_port()
        self.password = "pw-" + secrets.token_hex(12)
        self.root = Path(tempfile.mkdtemp(prefix="gepa-lab-pg-"))  # not under pytest's 0700 tmp dir
        self.user = "nobody" if os.geteuid() == 0 else None
        self.proc: subprocess.Popen[bytes] | None = None

    def _as_user(self) -> dict[str, Any]:
        return {"user": self.user} if self.user else {}

    def start(self) -> None:
        pwfile = self.root / "pwfile"
        pwfile.write_text(self.password + "\n")
        if self.user:
            entry = pwd.getpwnam(self.user)
            for path in (self.root, pwfile):
                os.chown(path, entry.pw_uid, entry.pw_gid)
        pwfile.chmod(0o600)
        data, log = self.root / "data", self.root / "postgres.log"
        subprocess.run([str(self.bindir / "initdb"), "-D", str(data), "-U", PG_USER, f"--pwfile={pwfile}",
                        "--auth=scram-sha-256", "--encoding=UTF8", "--locale=C", "--no-sync"],
                       check=True, capture_output=True, cwd=self.root, **self._as_user())
        pwfile.unlink()
        with open(log, "wb") as out:
            self.proc = subprocess.Popen(
                [str(self.bindir / "postgres"), "-D", str(data), "-p", str(self.port), "-h", "127.0.0.1", "-k", "",
                 "-c", "fsync=off", "-c", "synchronous_commit=off", "-c", "full_page_writes=off"],
                stdout=out, stderr=subprocess.STDOUT, cwd=self.root, start_new_session=True, **self._as_user())
        deadline = time.monotonic() + READY_TIMEOUT_S
        while True:
            try:
                self.execute("postgres", "select 1")
                return
            except Exception:
                if self.proc.poll() is not None or time.monotonic() > deadline:
                    raise AssertionError(f"postgres did not start:\n{log.read_text()[-3000:]}") from None
                time.sleep(0.3)

    def execute(self, database: str, sql: str) -> list[tuple[Any, ...]]:
        import psycopg  # SQLAlchemy's default driver for postgresql:// URLs

        with psycopg.connect(host="127.0.0.1", port=self.port, user=PG_USER, password=self.password,
                             dbname=database, connect_timeout=5, autocommit=True) as conn:
            cur = conn.execute(sql)  # type: ignore[arg-type]
            return list(cur.fetchall()) if cur.description else []

    def url(self, database: str) -> str:  # no password: libpq takes it from PGPASSWORD
        return f"postgresql://{PG_USER}@127.0.0.1:{self.port}/{database}"

    def stop(self) -> None:
        if self.proc is not None:
            stop(self.proc, signal.SIGINT)  # fast shutdown
        shutil.rmtree(self.root, ignore_errors=True)


@pytest.fixture
def postgres() -> Iterator[Postgres]:
    bindir = pg_bin()
    if bindir is None:
        if os.environ.get("CI"):
            pytest.fail("no PostgreSQL server binaries (pg_ctl): .ci/run installs Debian's postgresql package")
        pytest.skip("no PostgreSQL server binaries (apt-get install postgresql)")
    server = Postgres(bindir)
    try:
        server.start()
        yield server
    finally:
        server.stop()


def start_mlflow(tmp_path: Path, backend: str, env: dict[str, str]) -> tuple[str, subprocess.Popen[bytes], Path]:
    port = free_port()
    base, log = f"http://127.0.0.1:{port}", tmp_path / "mlflow-server.log"
    with open(log, "wb") as out:
        proc = subprocess.Popen(
            [sys.executable, "-m", "mlflow", "server", "--host", "127.0.0.1", "--port", str(port),
             "--backend-store-uri", backend, "--artifacts-destination", str(tmp_path / "artifacts"), "--workers", "1"],
            cwd=tmp_path, env=env, stdout=out, stderr=subprocess.STDOUT, start_new_session=True)
    deadline = time.monotonic() + READY_TIMEOUT_S
    while True:
        if proc.poll() is not None:
            raise AssertionError(f"mlflow server exited with {proc.returncode}:\n{log.read_text()[-3000:]}")
        try:
            with urllib.request.urlopen(f"{base}/health", timeout=2) as reply:
                if reply.status == 200:
                    return base, proc, log
        except OSError:
            if time.monotonic() > deadline:
                stop(proc)
                raise AssertionError(f"mlflow server not ready:\n{log.read_text()[-3000:]}") from None
            time.sleep(0.5)


def files_containing(root: Path, needle: bytes) -> list[Path]:
    return [p for p in root.rglob("*") if p.is_file() and needle in p.read_bytes()]


def test_a_parallel_sweep_against_mlflow_server_and_revision_store_on_postgresql(tmp_path, postgres, monkeypatch):
    for name in ("mlflow", "revisions"):
        postgres.execute("postgres", f"create database {name}")
    env = {**os.environ, "PGPASSWORD": postgres.password, "MLFLOW_DISABLE_TELEMETRY": "true",
           "LITELLM_LOCAL_MODEL_COST_MAP": "True", "PYTHONUNBUFFERED": "1"}
    env.pop("MLFLOW_TRACKING_URI", None)
    base, server, server_log = start_mlflow(tmp_path, postgres.url("mlflow"), env)
    try:
        sweep, store_url = tmp_path / "sweep", postgres.url("revisions")
        done = subprocess.run(
            [sys.executable, "-m", "gepa_lab", "-m", "experiment=recipe,weather", "search.random_seed=3,4",
             "hydra/launcher=parallel", "hydra.launcher.n_jobs=4", f"hydra.sweep.dir={sweep}", f"tracking.uri={base}",
             f"submitter.url={store_url}", "submit=true", "promotion=lenient", "search.max_iterations=3",
             "progress=off", "tracking.plots=false"],
            cwd=tmp_path, env=env, capture_output=True, text=True, timeout=400)
        assert done.returncode == 0, done.stderr[-3000:]
        jobs = sorted(p for p in sweep.iterdir() if p.is_dir() and p.name[0].isdigit())
        assert len(jobs) == 4
        results = {j: json.loads((j / "result.json").read_text()) for j in jobs}
        promotions = {j: json.loads((j / "promotion.json").read_text()) for j in jobs}

        # MLflow (server, PostgreSQL backend): every job's parent run once, every pool member once.
        from mlflow import MlflowClient

        client = MlflowClient(tracking_uri=base)
        experiment = client.get_experiment_by_name("gepa-lab").experiment_id
        parents = list(client.search_runs([experiment], "", max_results=1000))
        candidates = client.get_experiment_by_name("gepa-lab-candidates").experiment_id
        all_runs = list(client.search_runs([candidates], "", max_results=1000))
        assert len(parents) == 4 and {p.data.tags["sweep_id"] for p in parents} == {sweep_id(sweep)}
        assert {p.data.tags["gepa.experiment_id"] for p in parents} == {r["experiment_id"] for r in results.values()}
        nested_total = 0
        for parent in parents:
            record = results[Path(parent.data.tags["run_dir"])]
            assert parent.info.status == "FINISHED" and parent.data.tags["mlflow_tracker.errors"] == "0"
            assert parent.data.metrics["total_metric_calls"] == record["metric_calls"]
            assert parent.data.tags["promotion_eligible"] == str(record["promotion_eligible"]).lower()
            children = [r for r in all_runs if r.data.tags.get("gepa.parent_run_id") == parent.info.run_id]
            keys = [c.data.tags["gepa.key"] for c in children]
            assert len(keys) == len(set(keys)) == len(record["pool"])
            assert all(c.data.tags["sweep_id"] == sweep_id(sweep) for c in children)
            nested_total += len(keys)
        assert len(all_runs) == nested_total  # nothing else, nothing twice

        # The revision store (PostgreSQL): each eligible winner once, as its run recorded it.
        monkeypatch.setenv("PGPASSWORD", postgres.password)
        from gepa_lab.revisions.store import RevisionStore

        submitted = {p["revision_id"] for p in promotions.values() if p["revision_id"]}
        eligible = [p for p in promotions.values() if p["eligible"]]
        # seeds 3 and 4 (3 proposals, lenient): three eligible winners, two on one artifact (recipe)
        assert len(eligible) == 3 and len(submitted) == len(eligible), promotions
        with RevisionStore(store_url, create=False) as store:
            revisions = store.revisions()
            audit = store.audit()
        assert sorted(r.id for r in revisions) == sorted(submitted)
        assert len({(r.artifact_name, r.version) for r in revisions}) == len(revisions)
        assert sorted(a.revision_id for a in audit if a.action == "submitted") == sorted(submitted)
        for job, promotion in promotions.items():
            if promotion["revision_id"]:
                revision = next(r for r in revisions if r.id == promotion["revision_id"])
                assert revision.status == promotion["revision_status"]
                assert revision.evidence["experiment_id"] == results[job]["experiment_id"]

        # The password came from the environment only: nowhere in what the runs wrote or logged.
        secret = postgres.password
        assert secret not in done.stdout + done.stderr
        assert files_containing(sweep, secret.encode()) == []
        assert files_containing(tmp_path / "artifacts", secret.encode()) == []
        assert secret not in server_log.read_text(errors="replace")
        for run in all_runs:
            assert secret not in json.dumps([run.data.params, run.data.tags])
        assert secret not in json.dumps([r.to_dict() for r in revisions] + [a.to_dict() for a in audit], default=str)
        assert store_url in (jobs[0] / "experiment.json").read_text()  # the URL is recorded, without it
    finally:
        stop(server)
    assert server.returncode is not None


def test_creates_on_postgresql_run_their_name_checks_one_at_a_time(postgres, monkeypatch):
    """Two sibling names created at once: without the names lock each check misses the other (both
    pending); with it the second sees the first and is rejected. And a create waits while another
    transaction holds the lock."""
    import threading

    from gepa_lab.core.submission import Evidence, SubmissionRequest
    from gepa_lab.revisions.service import submit
    from gepa_lab.revisions.store import RevisionStore

    postgres.execute("postgres", "create database names")
    monkeypatch.setenv("PGPASSWORD", postgres.password)

    def request(name: str) -> SubmissionRequest:
        evidence = Evidence(experiment_id="e", dataset_id="d", dataset_version="v1", digests={"holdout": "h"},
                            baseline_score=0.7, candidate_score=0.9, delta=0.2, case_count=10)
        body = {"kind": "skill", "name": name, "description": "Monitor the weather.",
                "when_to_use": "Use for weather reports.", "steps": ["Geocode each place.", "Fetch forecasts."],
                "pitfalls": []}
        return SubmissionRequest(source="optimization/gepa:e", artifact=body, action="create",
                                 parent_revision_id=None, evidence=evidence)

    with RevisionStore(postgres.url("names")) as store:
        for attempt in range(3):
            names = [f"Weather Monitor {attempt} - 3 Cities", f"Weather Monitor {attempt} - Multi-City"]
            barrier, statuses = threading.Barrier(2), dict[str, str]()

            def create(name: str, barrier: threading.Barrier, statuses: dict[str, str]) -> None:
                barrier.wait()
                statuses[name] = submit(store, request(name)).revision.status

            threads = [threading.Thread(target=create, args=(n, barrier, statuses)) for n in names]
            for t in threads:
                t.start()
            for t in threads:
                t.join(60)
            assert sorted(statuses.values()) == ["pending_approval", "rejected"], statuses

        held, release = threading.Event(), threading.Event()

        def hold() -> None:
            with store.transaction() as session:
                store.lock_names(session)
                held.set()
                release.wait(30)

        holder = threading.Thread(target=hold)
        holder.start()
        held.wait(30)
        done = threading.Event()
        creator = threading.Thread(target=lambda: (submit(store, request("Recipe Scaler")), done.set()))
        creator.start()
        assert not done.wait(1.0)  # blocked on the names lock
        release.set()
        assert done.wait(30)
        holder.join(30)
        creator.join(30)


def test_parallel_jobs_opening_one_new_store_on_postgresql_all_succeed(postgres, monkeypatch):
    """Sweep jobs that open a new revision store at the same moment: one creates it (under an
    advisory lock), the others wait and find it; every one of them ends up with a working store."""
    import threading

    from gepa_lab.revisions.store import RevisionStore

    monkeypatch.setenv("PGPASSWORD", postgres.password)
    for attempt in range(3):
        postgres.execute("postgres", f"create database fresh{attempt}")
        barrier, errors = threading.Barrier(6), list[BaseException]()

        def open_store(url: str, barrier: threading.Barrier, errors: list[BaseException]) -> None:
            barrier.wait()
            try:
                RevisionStore(url).close()
            except BaseException as exc:  # collected: the assertion below names it
                errors.append(exc)

        threads = [threading.Thread(target=open_store, args=(postgres.url(f"fresh{attempt}"), barrier, errors))
                   for _ in range(6)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(60)
        assert errors == []
        rows = postgres.execute(f"fresh{attempt}", "select key, value from store_meta")
        assert rows == [("schema_version", "2")]  # created once, by the migrations, at the newest revision
        assert postgres.execute(f"fresh{attempt}", "select version_num from revision_store_version") == [("0002",)]
