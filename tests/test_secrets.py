"""Secrets are never written: a provider whose 401 echoes the API key leaves no trace of the key in
stderr, stdout, the run record, Hydra's files, the run's log or the MLflow store, whatever the key's
shape; and `redact`, the one function every error text, event and log line passes through, knows
the values of secret environment variables, not only key shapes."""

from __future__ import annotations

import json
import os
import re
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


# -- the canary test: every entry point, a secret in every field and variable -------------------
# One canary per source; the short one (7 characters) is a known secret because an LM names it.
CANARY_ENV = {"OPENAI_API_KEY": "sk-canary-openai-Q7w3E9r1T5y2", "CANARY_SHORT_KEY": "Zq7Xc3K",
              "MLFLOW_TRACKING_PASSWORD": "canary-mlflow-Pw83k", "MLFLOW_TRACKING_TOKEN": "canary-mlflow-Tk55q",
              "PGPASSWORD": "canary-pg-Pw19x", "AWS_SECRET_ACCESS_KEY": "canaryAWS/Xk29Lm+Qp",
              "GITHUB_TOKEN": "ghp_canaryGh7Lk2Mn", "HF_TOKEN": "hf_canaryHf9XqWe"}
PASTED = "gsk_canaryPasted8fQ2mZr7Lw4"  # a key pasted where it does not belong
GIVEN = "dspyGivenKey93Lx"  # a key a DSPy user hands to dspy.LM directly: in no variable
# A secret in a field is refused before Hydra writes anything (exit 2, no run directory).
REFUSED = [
    ["reflector=dspy", f"lm.reflection.api_key_env={PASTED}"],
    [f"tracking.uri=http://alice:{PASTED}@127.0.0.1:5000"],
    [f"tracking.uri=https://{PASTED}@mlflow.internal"],
    [f"submitter.url=postgresql://gepa:{PASTED}@db/revisions", "submit=true"],
    [f"seed.store='postgresql://gepa@db/revisions?sslpassword={PASTED}'", "seed.from_store=x"],
    ["reflector=dspy", f"lm.reflection.api_base='http://127.0.0.1:9/v1?sig={PASTED}'"],
    [f"experiment_name=sk-{PASTED}"],
    [f"evaluator.family={CANARY_ENV['PGPASSWORD']}"],  # a secret variable's value, pasted or interpolated
    [f"search.max_iterations=sk-{PASTED}"],  # Hydra's type error would echo the value
    ["-m", "search.random_seed=1,2", f"experiment_name=ok,sk-{PASTED}"],  # a sweep job's own value
]


def _teleprompter_run(tmp_path: Path, mlflow_uri: str, store: str) -> None:
    """`gepa_lab.dspy.GEPA`, in this process: the task LM's key handed over directly, the reflection
    LM's read by litellm from OPENAI_API_KEY; the provider echoes the key it saw once."""
    import dspy
    from test_dspy_teleprompter import Model, Pets, examples, metric

    from gepa_lab.dspy import GEPA

    model = Model()

    def echo(request):  # every attempt at one validation case: its failure (naming the key) is recorded
        if "Fay has 37 pets" in request.last_user:
            return Reply(status=429, message=f"slow down, key {request.headers['authorization'].split()[-1]}")
        return model(request)

    with StubLLM(echo) as stub:
        task = dspy.LM("openai/stub-task", api_base=stub.url, api_key=GIVEN, cache=False,
                      num_retries=0)  # no retries of its own: gepa_lab retries, then records the failure
        reflect = dspy.LM("openai/stub-reflect", api_base=stub.url, cache=False)
        optimizer = GEPA(metric, reflection_lm=reflect, task_lm=task, max_metric_calls=200, max_iterations=4,
                         run_dir=tmp_path / "dspy-run", tracking_uri=mlflow_uri, progress="log", promotion="lenient",
                         submit=True, artifact_name="pets", store_url=store)
        optimized = optimizer.compile(Pets(), trainset=examples(0, 10), valset=examples(10, 10),
                                      holdoutset=examples(20, 10))
    assert optimized.decision.result.revision["status"] == "pending_approval"
    refused = [r for r in stub.requests if r.status == 429]
    assert refused and all(GIVEN in r.headers["authorization"] for r in refused)  # the key went out, came back
    failure = re.search(r"evaluation failed after 3 attempt\(s\): LMEndpointError: lm.task at http://127.0.0.1:\d+/v1 "
                        r"failed \(LMRateLimitError: \[openai/stub-task\] slow down, key (\S+) ",
                        (tmp_path / "dspy-run" / "events.jsonl").read_text())
    assert failure and failure[1] == "[REDACTED]"  # recorded, named by its endpoint, without the key


@pytest.mark.slow
def test_canary_secrets_reach_no_byte_that_any_entry_point_writes(tmp_path, monkeypatch, capfd):
    """Every entry point (a submitting run, an LM run whose provider echoes its keys, note, report,
    the revisions CLI with the prompt registry, the CI summary; refused configs) with canary
    secrets in the environment and in fields; then every byte they wrote (run dirs, .hydra/, logs,
    the MLflow store and its artifacts, the revision store, published files, reports, the CI
    summary, stdout and stderr) is searched for every canary."""
    env = {**os.environ, **CANARY_ENV, "PYTHONUNBUFFERED": "1"}
    env.pop("MLFLOW_TRACKING_URI", None)
    mlflow_uri, store = f"sqlite:///{tmp_path}/mlflow.db", f"sqlite:///{tmp_path}/revisions.db"
    said: list[str] = []

    def run(*args: str, module: str = "gepa_lab", code: int = 0) -> str:
        done = subprocess.run([sys.executable, "-m", module, *args], cwd=tmp_path, env=env, capture_output=True,
                              text=True, timeout=600)
        said.extend((done.stdout, done.stderr))
        assert done.returncode == code, (args, done.stderr[-2000:])
        return done.stdout

    base = ["experiment=recipe", "progress=log", "tracking.plots=false", f"tracking.uri={mlflow_uri}"]
    run(*base, "search.max_iterations=10", "search.random_seed=2", "promotion=lenient", "submit=true",
        "submitter.min_holdout_score=0", f"submitter.url={store}", f"hydra.run.dir={tmp_path / 'run'}")

    answered: list[int] = []

    def echo(request) -> Reply:  # rate-limited once, saying which key it saw; then an unusable reply
        answered.append(1)
        if len(answered) == 1:
            seen = request.headers["authorization"].split()[-1]  # no `Bearer`: only knowing the key finds it
            return Reply(status=429, message=f"slow down, key {seen} (also {CANARY_ENV['OPENAI_API_KEY']})")
        return Reply(content=f"no JSON here; your key was {CANARY_ENV['CANARY_SHORT_KEY']}.")

    with StubLLM(echo) as stub:
        run(*base, "reflector=dspy", "lm.reflection.model=openai/stub", f"lm.reflection.api_base={stub.url}",
            "lm.reflection.api_key_env=CANARY_SHORT_KEY", "reflection.retry_backoff_s=0", "search.max_iterations=2",
            f"hydra.run.dir={tmp_path / 'lm-run'}")
    assert stub.requests[0].status == 429 and CANARY_ENV["CANARY_SHORT_KEY"] in stub.requests[0].headers[
        "authorization"]  # the key really went out, and came back

    run(str(tmp_path / "run"), f"promising; token {CANARY_ENV['GITHUB_TOKEN']} pasted by mistake", "--next",
        f"try {CANARY_ENV['HF_TOKEN']}", module="gepa_lab.note")
    run("--experiment", "recipe", "--tracking-uri", mlflow_uri, "--out", str(tmp_path / "report"), "--no-plot",
        module="gepa_lab.report")
    revision = json.loads((tmp_path / "run" / "promotion.json").read_text())["revision_id"]
    revisions = ["--store", store]
    run("approve", revision, "--actor", "ada", "--comment", f"ok {CANARY_ENV['PGPASSWORD']}", *revisions,
        "--publish-dir", str(tmp_path / "published"), "--tracking-uri", mlflow_uri, module="gepa_lab.revisions")
    for command in (["list"], ["show", revision], ["audit"], ["sync-registry", "--tracking-uri", mlflow_uri]):
        run(*command, *revisions, module="gepa_lab.revisions")
    (tmp_path / "summary.md").write_text(run(str(tmp_path / "run"), module="gepa_lab.revisions.ci"))
    for name, value in CANARY_ENV.items():
        monkeypatch.setenv(name, value)
    monkeypatch.chdir(tmp_path)
    _teleprompter_run(tmp_path, mlflow_uri, store)
    said.extend(capfd.readouterr())

    for number, args in enumerate(REFUSED):
        flags = [a for a in args if a.startswith("-")]
        out = tmp_path / f"refused-{number}"
        run(*flags, "experiment=recipe", "progress=off", *[a for a in args if not a.startswith("-")],
            f"hydra.run.dir={out}", f"hydra.sweep.dir={out}", code=2)
        assert not out.exists(), args
    assert any("[REDACTED]" in text for text in said)  # the echoes were there, and redacted

    for secret in [*CANARY_ENV.values(), PASTED, GIVEN]:
        assert not [text for text in said if secret in text], secret
        assert _files_holding(tmp_path, secret.encode()) == [], secret
