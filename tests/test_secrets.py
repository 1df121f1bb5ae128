"""Secrets are never written: a provider whose 401 echoes the API key leaves no trace of the key in
stderr, stdout, the run record, Hydra's files, the run's log or the MLflow store, whatever the key's
shape; and `redact`, the one function every error text, event and log line passes through, knows
the values of secret environment variables, not only key shapes."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from helpers import IdentityReflector, ToyEvaluator, dataset, seed_spec
from stub_llm import Reply, StubLLM

from gepa_lab import SearchConfig, optimize
from gepa_lab.core.redact import REDACTED, redact
from gepa_lab.lm.client import read_api_key
from gepa_lab.lm.config import LMSettings

# (key, the variable that holds it): OpenAI's shape, Groq's, Google's, a bare hex key under a name
# no pattern knows (only the LM settings' api_key_env names it).
KEYS = [("sk-test-Zr8Qw2Lm5Xp9Kd3Vb7Nh1Tc4", "OPENAI_API_KEY"),
        ("gsk_8fQ2mZr7Lw4Xp1Kd9Vb3Nh6Tc5Ya0Jq", "GROQ_API_KEY"),
        ("AIzaSyD4x7Qm2Lw9Kd3Vb8Nh1Tc6Zr5Yp0Jq", "GEMINI_API_KEY"),
        ("9f86d081884c7d659a2feaa0c55ad015a3bf4f1b", "LLM_CRED")]


def _echo_the_key(request) -> Reply:
    key = request.headers.get("authorization", "").split()[-1]
    return Reply(status=401, message=f"Incorrect API key provided: {key}. You can find your API key at "
                                     f"https://example.invalid/keys (Authorization: Bearer {key}; key {key})")


def _files_holding(root: Path, needle: bytes) -> list[str]:
    found = []
    for path in root.rglob("*"):
        if path.is_file() and needle in path.read_bytes():
            found.append(str(path.relative_to(root)))
    return found


@pytest.mark.parametrize("secret, variable", KEYS, ids=[k[0][:4] for k in KEYS])
def test_the_value_of_a_secret_variable_is_redacted_whatever_its_shape(monkeypatch, secret, variable):
    monkeypatch.setenv(variable, secret)
    read_api_key(LMSettings(api_key_env=variable))  # as the LM is built: its api_key_env is a secret from now on
    for text in (f"401 key {secret} rejected", f"{secret}", f"error: {{'key': '{secret}'}}", f"x{secret}y"):
        clean = redact(text)
        assert secret not in clean and REDACTED in clean


def test_the_environment_is_read_again_when_a_run_starts(monkeypatch):
    old, new = "0123456789abcdef0123456789abcdef", "fedcba9876543210fedcba9876543210"
    monkeypatch.setenv("SERVICE_TOKEN", old)
    optimize(seed_spec(), dataset(), ToyEvaluator(), IdentityReflector(), SearchConfig(max_iterations=0))
    assert redact(f"got {old}") == f"got {REDACTED}"
    monkeypatch.setenv("SERVICE_TOKEN", new)  # e.g. the next run of a sweep in this process
    optimize(seed_spec(), dataset(), ToyEvaluator(), IdentityReflector(), SearchConfig(max_iterations=0))
    assert redact(f"got {old} and {new}") == f"got {old} and {REDACTED}"


@pytest.mark.parametrize("text, secret", [
    ("Incorrect API key provided: gsk_abcdefghijklmnop. You can find your API key at https://x.invalid",
     "gsk_abcdefghijklmnop"),
    ("Invalid api key: AIzaSyQwErTy123456", "AIzaSyQwErTy123456"),
    ("cannot reach postgresql://gepa:hunter2horse@db.internal/revisions", "hunter2horse"),
    ("tracking https://alice:s3cr3t-Pa55@mlflow.internal:5000/ is down", "s3cr3t-Pa55"),
], ids=["provided", "api-key", "postgresql", "https"])
def test_echoes_and_url_passwords_are_redacted_without_any_variable(text, secret):
    clean = redact(text)
    assert secret not in clean and REDACTED in clean


def test_ordinary_text_and_short_or_unsecret_variables_are_left_alone(monkeypatch):
    monkeypatch.setenv("PROJECT_LABEL", "false-positive")  # not a secret's name
    monkeypatch.setenv("TOKENIZERS_PARALLELISM", "false")  # too short to replace without blanking ordinary words
    monkeypatch.setenv("GITHUB_TOKEN", "1")
    text = ("the false-positive rate is 1 in 10, false otherwise, at postgresql://gepa@db/revisions; see your API key "
            "at the console")
    assert redact(text) == text


@pytest.mark.slow
@pytest.mark.parametrize("secret, variable", KEYS, ids=[k[0][:4] for k in KEYS])
def test_a_provider_that_echoes_the_key_leaves_it_in_no_file(tmp_path, secret, variable):
    env = {**os.environ, variable: secret, "PYTHONUNBUFFERED": "1"}
    env.pop("MLFLOW_TRACKING_URI", None)
    with StubLLM(_echo_the_key) as stub:
        done = subprocess.run(
            [sys.executable, "-m", "gepa_lab", "experiment=recipe", "reflector=dspy",
             "lm.reflection.model=openai/stub-reflect", f"lm.reflection.api_base={stub.url}",
             f"lm.reflection.api_key_env={variable}",
             "reflection.retry_backoff_s=0", "search.max_iterations=2", "progress=log",
             f"tracking.uri=sqlite:///{tmp_path}/mlflow.db", f"hydra.run.dir={tmp_path / 'run'}"],
            cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300)
        assert stub.requests and all(r.status == 401 for r in stub.requests)  # the key really went out
        assert all(secret in r.headers.get("authorization", "") for r in stub.requests)
    assert done.returncode == 1, done.stderr[-2000:]
    errors = [x for x in done.stderr.splitlines() if x.startswith("gepa_lab: error:")]
    assert len(errors) == 1 and "Incorrect API key provided" in errors[0] and "[REDACTED]" in errors[0]
    assert secret not in done.stderr and secret not in done.stdout
    assert (tmp_path / "run" / "events.jsonl").exists() and (tmp_path / "mlflow.db").exists()
    assert _files_holding(tmp_path, secret.encode()) == []
