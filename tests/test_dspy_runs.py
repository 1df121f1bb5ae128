"""Complete short runs from the command line against the loopback stub, through dspy and litellm's
real HTTP path: `experiment=recipe reflector=dspy` and `experiment=dspy_math` (the third,
`evaluator=skillcraft_dspy`, is in test_dspy_skillcraft.py).

Each shows: the run finishes; tokens and cost are counted; malformed replies are recorded
rejections / failures; 429 and 500 are retried; no request to the reflection model holds
Validation or Holdout case text; the API key appears in no file under the run dir, no log and
not in MLflow."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from stub_llm import Reply, StubLLM, chat_fields

from gepa_lab.core.contracts import Case, split_digest

pytestmark = [pytest.mark.slow, pytest.mark.filterwarnings("ignore::UserWarning")]

ROOT = Path(__file__).resolve().parents[1]
KEY_ENV = "GEPA_LAB_TEST_STUB_KEY"
SECRET = "sk-stub-c0ffee7d15ea5e1234"
QUESTION = re.compile(r"\[\[ ## question ## \]\]\n(.*?)(?:\n\n|$)", re.S)


def gepa(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    env = {**os.environ, KEY_ENV: SECRET, "OPENAI_API_KEY": SECRET, "PYTHONUNBUFFERED": "1"}
    env.pop("MLFLOW_TRACKING_URI", None)
    return subprocess.run([sys.executable, "-m", "gepa_lab", *args], cwd=cwd, env=env, capture_output=True,
                          text=True, timeout=300)


def run_dir_of(stdout: str) -> Path:
    line = next(x for x in stdout.splitlines() if x.strip().startswith("record"))
    return Path(line.split(None, 1)[1].strip())


def jsonl(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def lm_overrides(role: str, stub: StubLLM, model: str, price: float, key_env: str = KEY_ENV) -> list[str]:
    return [f"lm.{role}.model=openai/{model}", f"lm.{role}.api_base={stub.url}", f"lm.{role}.api_key_env={key_env}",
            f"lm.{role}.usd_per_1k_tokens={price}"]


def assert_key_never_written(done: subprocess.CompletedProcess, *places: Path) -> int:
    """No file under `places` (run dir, MLflow store) and neither output stream holds the key."""
    assert SECRET not in done.stdout and SECRET not in done.stderr
    checked = 0
    for place in places:
        files = [place] if place.is_file() else [p for p in place.rglob("*") if p.is_file()]
        for path in files:
            assert SECRET.encode() not in path.read_bytes(), path
            checked += 1
    return checked


def tokens_of(requests) -> int:
    return sum(r.usage.get("prompt_tokens", 0) + r.usage.get("completion_tokens", 0) for r in requests)


def as_record_text(text: str) -> str:
    """How a case text appears inside the reflection prompt's records JSON."""
    return json.dumps(text, ensure_ascii=False)[1:-1].replace("<", "\\u003c")


# -- experiment=recipe reflector=dspy -----------------------------------------------------------------
def recipe_reflection(request) -> str:
    """A JSON-speaking model: a small valid edit of whatever component is selected."""
    component = re.search(r"Selected component: `(\w+)`", request.text).group(1)
    if component in ("steps", "pitfalls"):
        value = json.loads(request.text.split(f"## Current value of `{component}`\n```json\n", 1)[1].split("```")[0])
        return json.dumps({component: [*value, "Check every written field against the tool output."],
                           "rationale": "verification"})
    return json.dumps({component: "Use for recipe tasks that collect dishes and write a checked report.",
                       "rationale": "scope"})


def test_recipe_with_the_dspy_reflector_against_a_stub_server(tmp_path):
    from gepa_lab.data import load_dataset_dir

    script = [Reply(status=429), Reply(status=500), None, "Sorry, I can't produce JSON today.", None]

    def respond(request):
        reply = script.pop(0) if script else None
        return recipe_reflection(request) if reply is None else reply

    with StubLLM(respond) as stub:
        # The acceptance line: model + api_base, the key in the default variable (OPENAI_API_KEY).
        done = gepa("experiment=recipe", "reflector=dspy", "lm.reflection.model=openai/stub-reflect",
                    f"lm.reflection.api_base={stub.url}", "lm.reflection.usd_per_1k_tokens=0.5",
                    "search.max_iterations=4", "reflection.retry_backoff_s=0", "progress=log",
                    f"tracking.uri=sqlite:///{tmp_path}/mlflow.db", cwd=tmp_path)
        requests = list(stub.requests)
    assert done.returncode == 0, done.stderr
    run = run_dir_of(done.stdout)
    result = json.loads((run / "result.json").read_text())
    assert result["stop_reason"] == "max_iterations" and result["proposals"] == 4

    # 429 and 500 were retried by gepa_lab's reflection layer; the malformed reply is a rejection.
    assert [r.status for r in requests] == [429, 500, 200, 200, 200, 200]
    events = jsonl(run / "events.jsonl")
    rejected = [e for e in events if e["kind"] == "reflection_rejected"]
    assert any("no JSON object found" in e["data"]["reason"] for e in rejected)
    assert "Sorry, I can't produce JSON today." in json.dumps(rejected)

    # Reflection tokens and USD: what the stub reported, priced at 0.5 $/1k tokens, kept apart from the task's.
    tokens = tokens_of(requests)
    assert tokens > 0 and result["cost_usd"]["reflection"] == pytest.approx(tokens / 1000 * 0.5)
    assert f"total 4 calls, {tokens} tokens" in done.stderr
    assert result["cost_usd"]["task"] > 0  # the simulated agent's own cost

    # The reflection model saw Feedback cases and never Validation or Holdout case text.
    dataset = load_dataset_dir(ROOT / "datasets" / "skillcraft" / "recipe")
    feedback = {c.input for c in dataset.feedback}
    hidden = [c.input for c in (*dataset.validation, *dataset.holdout) if c.input not in feedback]
    assert hidden and any(as_record_text(text) in r.text for r in requests for text in feedback)
    assert not [t for t in hidden for r in requests if as_record_text(t) in r.text or t in r.text]

    # The key reached the provider, and nothing else.
    assert requests[0].headers["authorization"] == f"Bearer {SECRET}"
    assert assert_key_never_written(done, run, tmp_path / "mlflow.db", tmp_path / "mlruns") > 10
    assert (tmp_path / "mlflow.db").stat().st_size > 0 and json.loads((run / "mlflow_run.json").read_text())["run_id"]


# -- experiment=dspy_math ----------------------------------------------------------------------------
def canary_math_dataset(dest: Path) -> dict[str, str]:
    """The bundled dataset with a canary in every Validation and Holdout question (new manifest);
    returns question -> answer."""
    src = ROOT / "datasets" / "dspy_math"
    shutil.copytree(src, dest)
    manifest = json.loads((src / "manifest.json").read_text())
    answers = {}
    for split in ("feedback", "validation", "holdout"):
        rows = jsonl(src / f"{split}.jsonl")
        if split != "feedback":
            for row in rows:
                row["input"] += f" (ref CANARY-{row['id']})"
        answers.update({row["input"]: row["expected"] for row in rows})
        (dest / f"{split}.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
        manifest["splits"][split]["sha256"] = split_digest([Case.from_dict(r) for r in rows])
    (dest / "manifest.json").write_text(json.dumps(manifest))
    return answers


def test_dspy_math_end_to_end_against_a_stub_server(tmp_path):
    answers = canary_math_dataset(tmp_path / "data")
    malformed = next(q for q in answers if "CANARY-math-v003" in q)  # a Validation case, scored every time

    def respond(request):
        if request.model.endswith("stub-reflect"):
            current = re.search(r'## Current value of `predict`\n```json\n(".*?")\n```', request.text).group(1)
            return json.dumps({"predict": json.loads(current) + " Give the final number alone, no units.",
                               "rationale": "the answers carried units"})
        question = QUESTION.search(request.last_user).group(1).strip()
        if question == malformed:
            return "the model rambles without any field markers"
        unit = "" if "number alone" in request.system else " dollars"
        return chat_fields(reasoning="Compute each step in order.", answer=answers[question] + unit)

    with StubLLM(respond) as stub:
        stub.fail_next(429, model="stub-task")
        stub.fail_next(500, model="stub-task")
        done = gepa("experiment=dspy_math", f"dataset.path={tmp_path / 'data'}", "tracking=none", "progress=log",
                    "search.max_iterations=2", "evaluation.retry_backoff_s=0", "reflection.retry_backoff_s=0",
                    "promotion.gates.ceilings.latency_ms=null",  # the stub's wall-clock latency is noise
                    *lm_overrides("task", stub, "stub-task", 0.01), *lm_overrides("reflection", stub, "stub-reflect", 0.5),
                    cwd=tmp_path)
        requests = list(stub.requests)
    assert done.returncode == 0, done.stderr
    run = run_dir_of(done.stdout)
    result = json.loads((run / "result.json").read_text())
    task = [r for r in requests if r.model == "stub-task"]
    reflect = [r for r in requests if r.model == "stub-reflect"]

    # The run improved the program: the winner drops the units, on Validation and on Holdout.
    assert result["best_id"] != result["seed_id"]
    assert result["candidate_validation"]["score"] > result["baseline_validation"]["score"]
    assert result["candidate_holdout"]["score"] > result["baseline_holdout"]["score"]
    best = json.loads((run / "programs" / f"{result['best_id']}.json").read_text())
    assert best["predict"]["signature"]["instructions"].endswith("Give the final number alone, no units.")
    assert json.loads((run / "program.json").read_text()) == best  # the command line saves the winner too

    # Every paid evaluation counted the tokens the stub reported, priced at 0.01 $/1k tokens.
    results = jsonl(run / "evaluations.jsonl")  # one line per paid evaluation
    assert all(r["objectives"]["tokens"] > 0 and r["objectives"]["latency_ms"] > 0 for r in results)
    paid = sum(r["objectives"]["tokens"] for r in results)
    assert paid == tokens_of(task)
    assert result["cost_usd"]["task"] == pytest.approx(paid / 1000 * 0.01)
    assert tokens_of(reflect) > 0
    assert result["cost_usd"]["reflection"] == pytest.approx(tokens_of(reflect) / 1000 * 0.5)
    assert result["reflection_tokens"] == tokens_of(reflect)

    # 429 and 500 were retried; the malformed reply is a recorded 0 with feedback, on every scoring.
    assert [r.status for r in task[:2]] == [429, 500] and all(r.status == 200 for r in task[2:])
    assert not [r for r in results if "evaluation_failed" in r["objectives"]]
    bad = [r for r in results if r["case_id"] == "math-v003"]
    assert bad and all(r["score"] == 0 and r["objectives"]["format_error"] == 1 for r in bad)
    assert "did not follow the program's output format" in bad[0]["feedback"]

    # Each case's provider seed went out with its request and is in the record.
    traces = "\n".join(r["trace"] for r in results)
    sent = {r.body["seed"] for r in task[2:]}
    assert sent and all(f"provider seed {s} (sent to the provider)" in traces for s in sent)

    # Task requests carried Validation / Holdout questions; reflection requests never did.
    assert any("CANARY-" in r.text for r in task)
    assert reflect and not [r for r in reflect if "CANARY" in r.text]
    assert all("Selected component: `predict`" in r.text for r in reflect)
    assert assert_key_never_written(done, run) > 10


def test_a_program_run_from_the_command_line_needs_no_seed_file_and_is_named_after_its_evaluator(tmp_path):
    """`evaluator=dspy_program` without an experiment: the seed is the program's own instructions
    (`dataset.seed_artifact=null`, no seed file) and the run is named `dspy_program`, not `default`."""
    answers = canary_math_dataset(tmp_path / "data")
    (tmp_path / "data" / "seed_texts.json").unlink()  # nothing to fall back on

    def respond(request):
        if request.model.endswith("stub-reflect"):
            return json.dumps({"predict": "Give the final number alone."})
        return chat_fields(reasoning="Compute.", answer=answers[QUESTION.search(request.last_user).group(1).strip()])

    with StubLLM(respond) as stub:
        done = gepa("evaluator=dspy_program", "reflector=dspy", "evaluator.program=evaluators.dspy_math.program:make_program",
                    "evaluator.metric=evaluators.dspy_math.metric:metric", "evaluator.inputs=[question]",
                    "evaluator.label=answer", f"dataset.path={tmp_path / 'data'}", "dataset.seed_artifact=null",
                    "tracking=none", "progress=off", "search.max_iterations=1", "promotion.gates.ceilings.latency_ms=null",
                    *lm_overrides("task", stub, "stub-task", 0.01), *lm_overrides("reflection", stub, "stub-reflect", 0.5),
                    cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert "experiment=dspy_program " in done.stdout
    experiment = json.loads((run_dir_of(done.stdout) / "experiment.json").read_text())
    from evaluators.dspy_math.program import make_program
    from gepa_lab.core.artifacts import artifact_dict
    from gepa_lab.lm.texts import program_texts

    assert experiment["seed"]["artifact"] == artifact_dict(program_texts(make_program()))
