"""Secrets are never written: a provider whose 401 echoes the API key leaves no trace of the key in
stderr, stdout, the run record, Hydra's files, the run's log or the MLflow store."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from stub_llm import Reply, StubLLM

SECRET = "sk-test-Zr8Qw2Lm5Xp9Kd3Vb7Nh1Tc4"


def _echo_the_key(request) -> Reply:
    key = request.headers.get("authorization", "").split()[-1]
    return Reply(status=401, message=f"Incorrect API key provided: {key}. You can find your API key at "
                                     f"https://example.invalid/keys (Authorization: Bearer {key})")


def _files_holding(root: Path, needle: bytes) -> list[str]:
    found = []
    for path in root.rglob("*"):
        if path.is_file() and needle in path.read_bytes():
            found.append(str(path.relative_to(root)))
    return found


@pytest.mark.slow
def test_a_provider_that_echoes_the_key_leaves_it_in_no_file(tmp_path):
    env = {**os.environ, "OPENAI_API_KEY": SECRET, "PYTHONUNBUFFERED": "1"}
    env.pop("MLFLOW_TRACKING_URI", None)
    with StubLLM(_echo_the_key) as stub:
        done = subprocess.run(
            [sys.executable, "-m", "gepa_lab", "experiment=recipe", "reflector=dspy",
             "lm.reflection.model=openai/stub-reflect", f"lm.reflection.api_base={stub.url}",
             "reflection.retry_backoff_s=0", "search.max_iterations=2", "progress=log",
             f"tracking.uri=sqlite:///{tmp_path}/mlflow.db", f"hydra.run.dir={tmp_path / 'run'}"],
            cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300)
        assert stub.requests and all(r.status == 401 for r in stub.requests)  # the key really went out
    assert done.returncode == 1, done.stderr[-2000:]
    errors = [x for x in done.stderr.splitlines() if x.startswith("gepa_lab: error:")]
    assert len(errors) == 1 and "Incorrect API key provided" in errors[0] and "[REDACTED]" in errors[0]
    assert SECRET not in done.stderr and SECRET not in done.stdout
    assert (tmp_path / "run" / "events.jsonl").exists() and (tmp_path / "mlflow.db").exists()
    assert _files_holding(tmp_path, SECRET.encode()) == []
