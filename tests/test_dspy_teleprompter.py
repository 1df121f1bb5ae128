"""`gepa_lab.dspy.GEPA`: a DSPy user's two-predictor program, written here (not in the project),
optimized through the teleprompter against the loopback stub, and the issue-23 frictions."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from stub_llm import StubLLM, chat_fields

from gepa_lab.core.errors import ConfigError, ResumeError

pytestmark = pytest.mark.filterwarnings("ignore::UserWarning")  # litellm's import warns about pydantic

dspy = pytest.importorskip("dspy")
from gepa_lab.dspy import GEPA  # noqa: E402

PEOPLE = ("Ann", "Bob", "Cleo", "Dev", "Eli", "Fay")
QUOTE = "QUOTE the sentence about the person asked for."
NUMBER = "Reply with the NUMBER ONLY."
FIELD = re.compile(r"\[\[ ## (\w+) ## \]\]\n(.*?)(?=\n\n\[\[ ## |\n\nRespond with|\Z)", re.S)


class Pets(dspy.Module):
    def __init__(self):
        super().__init__()
        self.extract = dspy.ChainOfThought(dspy.Signature("passage, question -> fact", "Find the fact."))
        self.answer = dspy.Predict(dspy.Signature("fact, question -> answer", "Answer from the fact."))

    def forward(self, passage, question):
        return self.answer(fact=self.extract(passage=passage, question=question).fact, question=question)


def examples(offset: int, n: int = 8):
    out = []
    for i in range(n):
        people = [PEOPLE[(offset + i + k) % len(PEOPLE)] for k in range(3)]
        counts = [(offset * 7 + i * 3 + k * 5) % 40 + 2 for k in range(3)]
        asked = (i % 2) + 1  # never the first sentence: the seed extractor gets it wrong
        passage = " ".join(f"{p} has {c} pets." for p, c in zip(people, counts, strict=True))
        out.append(dspy.Example(passage=passage, question=f"How many pets does {people[asked]} have?",
                                answer=str(counts[asked]), person=people[asked]).with_inputs("passage", "question"))
    return out


def metric(gold, pred, trace=None, pred_name=None, pred_trace=None):
    answer = str(pred.answer).strip()
    score = 1.0 if answer == gold.answer else 0.5 if gold.answer in answer.split() else 0.0
    if pred_name is None:
        return dspy.Prediction(score=score, feedback="Correct." if score == 1 else "Not the expected answer.")
    outputs = pred_trace[0][2]
    if pred_name == "extract.predict":
        ok = gold.person in outputs.fact
        return dspy.Prediction(score=score, feedback="Right sentence." if ok else
                               f"EXTRACT-FIX: the fact must be the sentence about {gold.person}.")
    return dspy.Prediction(score=score, feedback="Bare number." if answer.isdigit() else
                           "ANSWER-FIX: the answer carries words besides the number.")


def fields(text: str) -> dict[str, str]:
    return {m.group(1): m.group(2).strip() for m in FIELD.finditer(text)}


class Model:
    """The stub's two roles: the task model (obeys QUOTE / NUMBER ONLY in its instructions) and a
    reflection model that adds the rule the feedback it is shown asks for."""

    def __init__(self):
        self.reflections: list[tuple[str, str]] = []  # (component, user message)

    def __call__(self, request) -> str:
        if "You revise one component" in request.system:
            user = request.last_user
            component = re.search(r"Selected component: `([^`]+)`", user).group(1)
            self.reflections.append((component, user))
            current = json.loads(user.split(f"## Current value of `{component}`\n```json\n", 1)[1].split("\n```")[0])
            records = user.split("<records>", 1)[1]
            rules = [r for r, cue in ((QUOTE, "EXTRACT-FIX"), (NUMBER, "ANSWER-FIX")) if cue in records]
            return json.dumps({component: " ".join([current, *rules]) if rules else current + " Be exact."})
        got = fields(request.last_user)
        if "`fact` (str)" in request.system.split("Your output fields are:", 1)[1]:
            sentences = re.findall(r"[^.]+\.", got["passage"])
            person = got["question"].split()[-2]
            fact = next(s for s in sentences if person in s) if QUOTE in request.system else sentences[0]
            return chat_fields(reasoning="Find the sentence.", fact=fact.strip())
        number = re.findall(r"\d+", got["fact"])[0]
        return chat_fields(answer=number if NUMBER in request.system else f"{number} pets")


@pytest.fixture
def stub():
    model = Model()
    with StubLLM(model) as server:
        server.model = model
        yield server


def lms(stub):
    task = dspy.LM("openai/stub-task", api_base=stub.url, api_key="k", cache=False)
    reflect = dspy.LM("openai/stub-reflect", api_base=stub.url, api_key="k", cache=False)
    return task, reflect


def teleprompter(stub, tmp_path, **kw):
    task, reflect = lms(stub)
    settings = dict(metric=metric, reflection_lm=reflect, task_lm=task, max_metric_calls=200, max_iterations=4,
                    run_dir=tmp_path / "run", mlflow=False, progress="off", promotion="lenient", num_threads=2)
    return GEPA(**{**settings, **kw})


# -- the teleprompter ------------------------------------------------------------------------------
def test_a_two_predictor_program_is_optimized_with_per_predictor_feedback(stub, tmp_path):
    optimizer = teleprompter(stub, tmp_path)
    student = Pets()
    optimized = optimizer.compile(student, trainset=examples(0), valset=examples(10), holdoutset=examples(20))

    decision = optimized.decision
    assert decision.eligible and decision.returned == "winner" and decision.experiment == "Pets"
    assert decision.holdout_delta == pytest.approx(decision.result.candidate_holdout.score
                                                   - decision.result.baseline_holdout.score)
    assert decision.result.baseline_holdout.score < 0.5 and decision.result.candidate_holdout.score == 1.0
    instructions = {n: p.signature.instructions for n, p in optimized.named_predictors()}
    assert QUOTE in instructions["extract.predict"] and NUMBER not in instructions["extract.predict"]
    assert NUMBER in instructions["answer"] and QUOTE not in instructions["answer"]
    assert student.extract.predict.signature.instructions == "Find the fact."  # the student is untouched

    # Each reflection saw the feedback and trace of the predictor it improved, not the other's.
    seen = {}
    for component, user in stub.model.reflections:  # the first reflection on each
        seen.setdefault(component, user)
    assert set(seen) == {"extract.predict", "answer"}
    assert "EXTRACT-FIX" in seen["extract.predict"] and "ANSWER-FIX" not in seen["extract.predict"]
    assert "ANSWER-FIX" in seen["answer"] and "EXTRACT-FIX" not in seen["answer"]
    assert "[extract.predict] inputs:" in seen["extract.predict"] and "[answer] inputs:" not in seen["extract.predict"]
    assert "[answer] outputs:" in seen["answer"] and "[extract.predict]" not in seen["answer"]

    # The run record is the CLI's; the saved state loads in plain dspy.
    run = decision.run_dir
    assert {"result.json", "events.jsonl", "evaluations.jsonl", "experiment.json", "program.json"} <= {
        p.name for p in run.iterdir()}
    assert decision.program_file == run / "program.json"
    optimized.save(str(tmp_path / "mine.json"))  # the returned program's own state, as a user saves it
    for path in (decision.program_file, tmp_path / "mine.json"):
        plain = Pets()
        plain.load(str(path))
        assert {n: p.signature.instructions for n, p in plain.named_predictors()} == instructions
    result = json.loads((run / "result.json").read_text())
    assert result["promotion_eligible"] and result["dataset"]["id"] == "Pets"
    assert set(result["dataset"]["digests"]) == {"feedback", "validation", "holdout"}
    assert "eligible" in str(decision).lower() and str(run) in str(decision)


def test_a_not_eligible_winner_is_not_returned_nor_saved_as_program_json(stub, tmp_path, caplog):
    # No holdout: nothing can be eligible (rule 2), whatever the search found; compile says so when it starts.
    with caplog.at_level("WARNING", logger="gepa_lab"):
        optimized = teleprompter(stub, tmp_path).compile(Pets(), trainset=examples(0), valset=examples(10))
    [said] = [r.getMessage() for r in caplog.records if "holdoutset" in r.getMessage()]
    assert said.startswith("no holdoutset: no winner can be promotion-eligible") and "\n" not in said
    decision = optimized.decision
    assert not decision.eligible and decision.reason == "no holdout split configured"
    assert decision.returned == "seed" and decision.holdout_delta is None
    assert optimized.extract.predict.signature.instructions == "Find the fact."
    assert decision.result.best_id != decision.result.seed_id  # there was a winner, refused
    names = {p.name for p in decision.run_dir.iterdir()}
    assert "program.json" not in names and "program.not_eligible.json" in names
    assert decision.program_file.name == "program.not_eligible.json"

    anyway = teleprompter(stub, tmp_path / "again", return_winner_if_not_eligible=True).compile(
        Pets(), trainset=examples(0), valset=examples(10))
    assert anyway.decision.returned == "winner" and QUOTE in anyway.extract.predict.signature.instructions


def test_the_result_does_not_depend_on_num_threads(stub, tmp_path):
    def run(threads: int):
        optimized = teleprompter(stub, tmp_path / str(threads), num_threads=threads).compile(
            Pets(), trainset=examples(0), valset=examples(10), holdoutset=examples(20))
        result = optimized.decision.result
        return ([(p.id, p.validation_scores) for p in result.pool], result.metric_calls, result.best_id,
                result.holdout_cases, {n: p.signature.instructions for n, p in optimized.named_predictors()})

    assert run(1) == run(4)


def test_an_interrupted_compile_resumes_from_its_run_dir(stub, tmp_path):
    stub.fail_next(400, model="stub-reflect")  # a bad request is a bug: the run stops, resumable
    with pytest.raises(Exception, match="reflector DspyReflector raised"):
        teleprompter(stub, tmp_path).compile(Pets(), trainset=examples(0), valset=examples(10),
                                             holdoutset=examples(20))
    paid = len(stub.for_model("stub-task"))
    assert paid > 0
    optimized = teleprompter(stub, tmp_path).compile(Pets(), trainset=examples(0), valset=examples(10),
                                                     holdoutset=examples(20))
    events = [json.loads(x) for x in (tmp_path / "run" / "events.jsonl").read_text().splitlines()]
    lifecycle = [e["kind"] for e in events if e["kind"] in ("run_failed", "run_resumed")]
    assert lifecycle == ["run_failed", "run_resumed"]
    assert optimized.decision.eligible
    # The seed's validation was paid once: the resumed run served it from the run's cache.
    passages = {e.passage for e in examples(10)}
    seed_val = [r for r in stub.for_model("stub-task") if r.system.endswith("Find the fact.")
                and fields(r.last_user).get("passage") in passages]
    assert len(seed_val) == len(passages) == 8
    with pytest.raises(ResumeError, match="holds a finished run"):
        teleprompter(stub, tmp_path).compile(Pets(), trainset=examples(0), valset=examples(10),
                                             holdoutset=examples(20))


def test_auto_light_in_an_empty_directory_leaves_it_empty(stub, tmp_path, monkeypatch):
    """dspy.GEPA's preset, defaults otherwise: the record goes under the cache directory, no MLflow."""
    from dspy.teleprompt.gepa.gepa import AUTO_RUN_SETTINGS

    work, cache = tmp_path / "work", tmp_path / "cache"
    work.mkdir()
    monkeypatch.chdir(work)
    monkeypatch.setenv("XDG_CACHE_HOME", str(cache))
    monkeypatch.delenv("MLFLOW_TRACKING_URI", raising=False)
    task, reflect = lms(stub)
    optimizer = GEPA(metric, auto="light", reflection_lm=reflect, task_lm=task, max_iterations=2)
    optimized = optimizer.compile(Pets(), trainset=examples(0), valset=examples(10), holdoutset=examples(20))
    assert list(work.iterdir()) == []
    run = optimized.decision.run_dir
    assert run.parent == cache / "gepa_lab" / "runs" and (run / "result.json").exists()
    assert optimized.decision.mlflow_run_id is None
    # dspy.GEPA's budget for 2 predictors and 8 validation examples (778), plus seed and winner on 8 holdout ones.
    assert dspy.GEPA(metric, auto="light", reflection_lm=reflect).auto_budget(
        2, AUTO_RUN_SETTINGS["light"]["n"], 8) == 778
    assert json.loads((run / "experiment.json").read_text())["config"]["search"]["max_metric_calls"] == 778 + 16


def test_a_reflection_lm_without_a_key_fails_before_any_request_in_dspys_words(stub, tmp_path, monkeypatch):
    from gepa_lab.core.redact import redact

    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    keyless = dspy.LM("openai/stub-reflect", api_base=stub.url, cache=False)
    with pytest.raises(ConfigError) as info:
        teleprompter(stub, tmp_path, reflection_lm=keyless).compile(Pets(), trainset=examples(0),
                                                                     holdoutset=examples(20))
    text = str(info.value)
    assert text.startswith("reflection_lm: ") and "\n" not in text
    assert 'Set OPENAI_API_KEY in the environment, or pass api_key="..." to dspy.LM(...)' in text
    assert redact(text) == text  # dspy's hint survives the redaction every logged error goes through
    assert not stub.requests and not (tmp_path / "run").exists()


# -- checked up front: one line each, before the first paid call -------------------------------------
def two_args_wrong(gold):
    return 1.0


@pytest.mark.parametrize("change, message", [
    (dict(metric=two_args_wrong), r"metric .*two_args_wrong takes \(gold\); it must accept \(gold, pred\)"),
    (dict(reflection_lm="gpt-4o"), r"reflection_lm must be a dspy.LM"),
    (dict(submit=True), r"submit=True needs artifact_name"),
    (dict(max_metric_calls=0), r"search.max_metric_calls must be an integer >= 1"),
    (dict(auto="fast"), r"auto must be one of light, medium, heavy, without max_metric_calls \(got auto='fast'"),
    (dict(auto="light"), r"auto must be one of .* \(got auto='light', max_metric_calls=200\)"),
    (dict(promotion="loose"), r"unknown promotion preset 'loose'"),
    (dict(candidate_selection_strategy="best"), r"candidate_selection_strategy must be one of"),
    (dict(reflection_prompt="my_rules.md"), r"reflection_prompt file not found: my_rules.md"),
])
def test_bad_settings_fail_at_construction(stub, tmp_path, change, message):
    with pytest.raises(ConfigError, match=message) as info:
        teleprompter(stub, tmp_path, **change)
    assert "\n" not in str(info.value) and not stub.requests


def unlabeled(rows):
    return [dspy.Example(**r.toDict()) for r in rows]  # with_inputs(...) forgotten


class OneInput(dspy.Module):
    def __init__(self):
        super().__init__()
        self.answer = dspy.Predict("question -> answer")

    def forward(self, question):
        return self.answer(question=question)


@pytest.mark.parametrize("student, sets, message", [
    (Pets(), dict(trainset=unlabeled(examples(0))), r"trainset|declares no input fields: build it as dspy.Example"),
    (OneInput(), dict(trainset=examples(0)), r"\['passage', 'question'\] do not match OneInput.forward\(question\): set the examples' with_inputs\(...\) to \[question\]"),
    (Pets(), dict(trainset=[]), r"the examples is empty|trainset must not be empty"),
    (Pets(), dict(trainset=examples(0), valset=[*examples(10)[:2], dspy.Example(x=1).with_inputs("x")]),
     r"has inputs \['x'\] but the examples before it have \['passage', 'question'\]"),
])
def test_bad_programs_and_examples_fail_before_any_request(stub, tmp_path, student, sets, message):
    with pytest.raises(ConfigError, match=message) as info:
        teleprompter(stub, tmp_path).compile(student, **sets)
    assert "\n" not in str(info.value) and not stub.requests and not (tmp_path / "run").exists()


def test_submission_is_checked_against_the_examples_before_any_request(stub, tmp_path):
    optimizer = teleprompter(stub, tmp_path, submit=True, artifact_name="pets", store_url=f"sqlite:///{tmp_path}/r.db")
    with pytest.raises(ConfigError, match=r"^submission requires at least 10 trainset examples \(got 8\)$"):
        optimizer.compile(Pets(), trainset=examples(0), valset=examples(10, 10), holdoutset=examples(20, 10))
    assert not stub.requests and not (tmp_path / "run").exists()


def test_an_eligible_winner_is_submitted_to_the_revision_store(stub, tmp_path):
    from gepa_lab.revisions.store import RevisionStore

    url = f"sqlite:///{tmp_path}/revisions.db"
    optimizer = teleprompter(stub, tmp_path, submit=True, artifact_name="pets", store_url=url)
    optimized = optimizer.compile(Pets(), trainset=examples(0, 10), valset=examples(10, 10),
                                  holdoutset=examples(20, 10))
    revision = optimized.decision.result.revision
    assert optimized.decision.eligible and revision["status"] == "pending_approval"
    stored = RevisionStore(url, create=False).get(revision["revision_id"])
    assert stored.artifact_name == "pets" and QUOTE in json.dumps(stored.body)


def test_a_custom_reflection_prompt_reaches_the_reflection_lm(stub, tmp_path):
    rules = tmp_path / "rules.md"
    rules.write_text("You revise one component. HOUSE RULE: keep it short.")
    teleprompter(stub, tmp_path, reflection_prompt=str(rules), max_iterations=1).compile(
        Pets(), trainset=examples(0), valset=examples(10))
    reflections = stub.for_model("stub-reflect")
    assert reflections and all("HOUSE RULE: keep it short." in r.system for r in reflections)


def test_no_task_lm_is_a_one_line_error(stub, tmp_path):
    _, reflect = lms(stub)
    optimizer = GEPA(metric, reflection_lm=reflect, run_dir=tmp_path / "run", mlflow=False)
    with dspy.context(lm=None), pytest.raises(ConfigError, match=r"no task LM: call dspy.configure"):
        optimizer.compile(Pets(), trainset=examples(0))
    assert not stub.requests


def test_an_unreachable_reflection_lm_fails_as_a_transient_connection_error(tmp_path):
    """The reflector's error names the connection failure and is retryable, so the engine
    classifies it as the provider being down (stop_reason reflector_error), never as a bug."""
    from gepa_lab.core.artifacts import TextsArtifact
    from gepa_lab.core.errors import is_transient
    from gepa_lab.lm.reflector import DspyReflector

    with StubLLM(lambda r: "") as dead:
        url = dead.url
    reflector = DspyReflector(dspy.LM("openai/stub-reflect", api_base=url, api_key="k", cache=False, timeout=5))
    with pytest.raises(Exception) as info:
        reflector.reflect(TextsArtifact({"answer": "Answer."}), "answer", [])
    assert is_transient(info.value, reflector.retryable_exceptions)
    assert "connect" in str(info.value).lower()


@pytest.mark.slow
def test_compile_with_an_unreachable_reflection_lm_stops_naming_the_connection_error(stub, tmp_path):
    from gepa_lab.core.errors import ReflectorUnavailable

    with StubLLM(lambda r: "") as dead:
        url = dead.url
    task, _ = lms(stub)
    down = dspy.LM("openai/stub-reflect", api_base=url, api_key="k", cache=False, timeout=5, num_retries=0)
    with pytest.raises(ReflectorUnavailable, match=r"(?i)connect") as info:
        teleprompter(stub, tmp_path, reflection_lm=down).compile(Pets(), trainset=examples(0), valset=examples(10))
    assert "\n" not in str(info.value)
    assert json.loads((tmp_path / "run" / "events.jsonl").read_text().splitlines()[-1])["kind"] == "run_failed"


# -- MLflow ------------------------------------------------------------------------------------------
@pytest.mark.slow
def test_the_decision_names_the_mlflow_run_holding_the_program_state(stub, tmp_path, mlflow_env):
    from mlflow import MlflowClient

    uri = f"sqlite:///{tmp_path}/mlflow.db"
    optimized = teleprompter(stub, tmp_path, mlflow=True, tracking_uri=uri).compile(
        Pets(), trainset=examples(0), valset=examples(10), holdoutset=examples(20))
    run_id = optimized.decision.mlflow_run_id
    client = MlflowClient(tracking_uri=uri)
    run = client.get_run(run_id)
    assert run.data.tags.get("experiment") == "Pets"
    assert "best/program.json" in [a.path for a in client.list_artifacts(run_id, "best")]
    assert f"mlflow_run_id {run_id}" in " ".join(str(optimized.decision).split())


def test_the_default_policy_is_the_default_preset_without_the_latency_ceiling(stub, tmp_path):
    from gepa_lab.core.settings import PromotionPolicy
    from gepa_lab.dspy import default_policy

    optimizer = teleprompter(stub, tmp_path, promotion=None)
    assert optimizer.promotion == default_policy()
    assert default_policy().gates.ceilings == {**PromotionPolicy().gates.ceilings, "latency_ms": None}
    assert teleprompter(stub, tmp_path, promotion="default").promotion == PromotionPolicy()


@pytest.mark.slow
def test_the_benchmark_quick_mode_writes_its_report(tmp_path):
    import os
    import subprocess
    import sys

    root = Path(__file__).resolve().parents[1]
    done = subprocess.run([sys.executable, str(root / "experiments" / "dspy_vs_gepa.py"), "--quick", "--out-dir",
                           str(tmp_path)], cwd=root, capture_output=True, text=True, timeout=600,
                          env={**os.environ, "LITELLM_LOCAL_MODEL_COST_MAP": "True", "MLFLOW_DISABLE_TELEMETRY": "true"})
    assert done.returncode == 0, done.stderr[-3000:]
    report = (tmp_path / "dspy_vs_gepa.md").read_text()
    assert "QUICK MODE" in report and "| dspy.GEPA |" in report and "| gepa-lab |" in report
    assert "holdout gain" in report and str(tmp_path) not in report
