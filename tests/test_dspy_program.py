"""`evaluator=dspy_program` (any DSPy program's instructions as a texts artifact) and the
`dspy_math` example, driven over real HTTP (dspy + litellm) by the loopback stub."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from stub_llm import Reply, StubLLM, chat_fields

from gepa_lab import Case, Dataset, EvaluationSettings, PromotionPolicy, SearchConfig, optimize
from gepa_lab.core.artifacts import TextsArtifact
from gepa_lab.core.errors import is_transient
from gepa_lab.data import load_dataset, load_dataset_dir
from gepa_lab.search.evaluation import CaseRunner

pytestmark = pytest.mark.filterwarnings("ignore::UserWarning")  # litellm's import warns about pydantic

ROOT = Path(__file__).resolve().parents[1]
MATH = ROOT / "datasets" / "dspy_math"
KEY_ENV = "GEPA_LAB_TEST_STUB_KEY"
SECRET = "sk-stub-5e0c81d2a7f4b3c9e1"
PROGRAM = "evaluators.dspy_math.program:make_program"
METRIC = "evaluators.dspy_math.metric:metric"
QUESTION = re.compile(r"\[\[ ## question ## \]\]\n(.*?)(?:\n\n|$)", re.S)


@pytest.fixture(scope="session")
def litellm_loaded() -> None:
    """Pay litellm's one-time import (≈3.5 s) in a fixture, not inside a test's timing."""
    import litellm  # noqa: F401


def question_of(request) -> str:
    return QUESTION.search(request.last_user).group(1).strip()


class MathModel:
    """A scripted task model: the right answer, with units unless the instructions say
    NUMBER-ONLY, and a malformed reply for questions listed in `malformed`."""

    def __init__(self, answers: dict[str, str], malformed: tuple[str, ...] = ()):
        self.answers = answers
        self.malformed = malformed

    def __call__(self, request) -> str:
        question = question_of(request)
        if any(m in question for m in self.malformed):
            return "no fields here at all"
        answer = self.answers[question]
        if "NUMBER-ONLY" not in request.system:
            answer += " dollars"
        return chat_fields(reasoning="Work it out step by step.", answer=answer)


@pytest.fixture(scope="module")
def math_dataset() -> Dataset:
    dataset, _ = load_dataset(_source(MATH))
    return dataset


def _source(path: Path):
    from gepa_lab.data import DatasetSource

    return DatasetSource(path=str(path), seed_artifact="seed_texts.json")


def answers_of(dataset: Dataset) -> dict[str, str]:
    return {c.input: str(c.expected) for split in (dataset.feedback, dataset.validation, dataset.holdout)
            for c in split}


@pytest.fixture
def stub(litellm_loaded, math_dataset):
    server = StubLLM(MathModel(answers_of(math_dataset)))
    yield server
    server.close()


def evaluator(stub: StubLLM, monkeypatch: pytest.MonkeyPatch, run_dir: Path | None = None, **lm):
    from gepa_lab.lm.program import DspyProgramEvaluator

    monkeypatch.setenv(KEY_ENV, SECRET)
    return DspyProgramEvaluator(PROGRAM, METRIC, ["question"], run_dir=str(run_dir) if run_dir else None,
                                lm={"model": "openai/stub-task", "api_base": stub.url, "api_key_env": KEY_ENV,
                                    **lm})


# -- the program as a texts artifact ---------------------------------------------------------------
def test_program_instructions_round_trip_through_a_texts_artifact():
    import dspy

    from gepa_lab.lm.texts import apply_texts, program_texts

    class Pipeline(dspy.Module):
        def __init__(self):
            super().__init__()
            self.draft = dspy.ChainOfThought("question -> draft")
            self.finish = dspy.Predict("question, draft -> answer")

    program = Pipeline()
    texts = program_texts(program)
    assert texts.COMPONENTS == ("draft.predict", "finish")
    changed = apply_texts(program, texts.with_text("finish", "Answer with one word."))
    assert dict(changed.named_predictors())["finish"].signature.instructions == "Answer with one word."
    assert dict(program.named_predictors())["finish"].signature.instructions != "Answer with one word."
    with pytest.raises(ValueError, match="do not match the program's predictors"):
        apply_texts(program, TextsArtifact({"finish": "x"}))


def test_the_committed_seed_matches_the_program():
    from evaluators.dspy_math.program import make_program
    from gepa_lab.lm.texts import program_texts

    seed = json.loads((MATH / "seed_texts.json").read_text())
    assert seed == {"kind": "texts", **program_texts(make_program()).to_dict()}


def test_cases_become_examples():
    from gepa_lab.lm.examples import to_example

    plain = to_example(Case("a", "What is 2+2?", expected="4", metadata={"solution": "2 + 2 = 4"}),
                       ["question"], "answer")
    assert plain.inputs().toDict() == {"question": "What is 2+2?"}
    assert plain.answer == "4" and plain.solution == "2 + 2 = 4"
    structured = to_example(Case.from_dict({"id": "b", "input": {"question": "q", "context": "c"},
                                            "expected": {"answer": "x", "why": "y"}}),
                            ["question", "context"], "answer")
    assert structured.inputs().toDict() == {"question": "q", "context": "c"} and structured.why == "y"
    with pytest.raises(ValueError, match=r"no input field\(s\) \['context'\]"):
        to_example(Case.from_dict({"id": "c", "input": {"question": "q"}}), ["question", "context"], "answer")


@pytest.mark.parametrize("value, expected", [
    (1, (1.0, "")), (True, (1.0, "")), ({"score": 0.5, "feedback": "half"}, (0.5, "half")),
])
def test_metric_verdicts(value, expected):
    from gepa_lab.lm.examples import verdict

    assert verdict(value, "metric m") == expected


def test_metric_verdicts_from_predictions_and_bad_scores():
    import dspy

    from gepa_lab.lm.examples import verdict

    assert verdict(dspy.Prediction(score=0.25, feedback="close"), "m") == (0.25, "close")
    for bad in (1.5, -0.1, float("nan"), "0.5", None):
        with pytest.raises(ValueError, match="must return a score in"):
            verdict(bad, "metric m")


@pytest.mark.parametrize("answer, score, words", [
    ("48", 1.0, "Correct"), ("$48", 1.0, "Correct"), ("1,300", 1.0, "Correct"),
    ("48 dollars", 0.5, "extra text"), ("50", 0.0, "off by 2, too high"), ("about forty", 0.0, "holds no number"),
])
def test_math_metric_says_what_went_wrong(answer, score, words):
    from evaluators.dspy_math.metric import grade

    expected = "1300" if answer == "1,300" else "48"
    got, feedback = grade(answer, expected, "a; b")
    assert got == score and words in feedback
    assert ("The intended steps: a; b" in feedback) == (score == 0.0)


def test_generated_dataset_is_committed_fresh_and_exact():
    from evaluators.dspy_math.generate import main

    assert main(["--check"]) == 0
    manifest = json.loads((MATH / "manifest.json").read_text())
    assert all(manifest["splits"][s]["cases"] >= 30 for s in ("feedback", "validation", "holdout"))
    dataset = load_dataset_dir(MATH)  # digests verified
    for case in (*dataset.feedback, *dataset.validation, *dataset.holdout):
        last = case.metadata["solution"].split("; ")[-1]
        assert last.endswith(f"= {case.expected}") and int(case.metadata["steps"]) >= 3


def test_freeze_a_saved_hugging_face_dataset(tmp_path):
    import datasets
    from evaluators.dspy_program import freeze_hf_dataset

    def split(n: int, offset: int) -> datasets.Dataset:
        return datasets.Dataset.from_dict({"qid": [f"q{offset + i}" for i in range(n)],
                                           "question": [f"What is {offset + i} + 1?" for i in range(n)],
                                           "answer": [offset + i + 1 for i in range(n)],
                                           "level": ["easy"] * n})

    datasets.DatasetDict({"train": split(4, 0), "dev": split(3, 100), "test": split(3, 200)}).save_to_disk(
        str(tmp_path / "saved"))
    manifest = freeze_hf_dataset(tmp_path / "saved", tmp_path / "frozen",
                                 {"feedback": "train", "validation": "dev", "holdout": "test"}, ["question"],
                                 "answer", id_field="qid", metadata=["level"], dataset_id="toy", program=PROGRAM)
    assert {k: v["cases"] for k, v in manifest["splits"].items()} == {"feedback": 4, "validation": 3, "holdout": 3}
    dataset, seed = load_dataset(_source(tmp_path / "frozen"))  # digests verified
    assert dataset.id == "toy" and dataset.validation[0].id == "q100"
    assert dataset.validation[0].input == "What is 100 + 1?" and dataset.validation[0].expected == "101"
    assert dataset.holdout[0].metadata == {"level": "easy"}
    assert isinstance(seed, TextsArtifact) and seed.COMPONENTS == ("predict",)
    with pytest.raises(ValueError, match="has no split 'validation'"):
        freeze_hf_dataset(tmp_path / "saved", tmp_path / "x", {"feedback": "train", "validation": "validation"},
                          ["question"])


# -- the evaluator over HTTP -----------------------------------------------------------------------
def test_evaluator_grades_counts_usage_and_sends_the_case_seed(stub, monkeypatch, math_dataset):
    ev = evaluator(stub, monkeypatch, usd_per_1k_tokens=0.01)
    seed = TextsArtifact({"predict": "Solve the arithmetic word problem."})
    cases = list(math_dataset.validation[:3])
    first = ev.evaluate(seed, cases, 1234)
    assert [e.score for e in first] == [0.5, 0.5, 0.5]  # the scripted model adds units
    assert "extra text" in first[0].feedback and json.loads(first[0].output)["answer"].endswith(" dollars")
    better = ev.evaluate(seed.with_text("predict", "Solve it. Answer NUMBER-ONLY."), cases, 1234)
    assert [e.score for e in better] == [1.0, 1.0, 1.0]
    assert len(stub.requests) == 6
    for ev_, request in zip(first, stub.requests[:3], strict=True):
        usage = ev_.objectives
        assert usage["tokens"] == usage["prompt_tokens"] + usage["completion_tokens"] > 0
        assert usage["prompt_tokens"] == len(request.text) // 4  # what the stub reported
        assert usage["cost_usd"] == pytest.approx(usage["tokens"] / 1000 * 0.01)
        assert usage["latency_ms"] > 0 and usage["lm_calls"] == 1 and usage["format_error"] == 0
        sent = request.body["seed"]
        assert f"provider seed {sent} (sent to the provider)" in ev_.trace
    # The same case and seed send the same provider seed, whatever the instructions: paired.
    assert [r.body["seed"] for r in stub.requests[:3]] == [r.body["seed"] for r in stub.requests[3:]]
    assert len({r.body["seed"] for r in stub.requests[:3]}) == 3
    assert ev.usage.calls == 6
    assert "[predict] inputs:" in first[0].trace and cases[0].input in first[0].trace


def test_a_malformed_reply_is_a_scored_failure_not_a_crash(stub, monkeypatch, math_dataset):
    case = math_dataset.feedback[0]
    stub.responder = MathModel(answers_of(math_dataset), malformed=(case.input,))
    ev = evaluator(stub, monkeypatch)
    [result] = ev.evaluate(TextsArtifact({"predict": "Solve."}), [case], 7)
    assert result.score == 0.0 and result.objectives["format_error"] == 1.0
    assert "did not follow the program's output format" in result.feedback
    assert result.output == "no fields here at all"
    assert len(stub.requests) == 2  # dspy's ChatAdapter, then its JSON fallback
    assert result.objectives["lm_calls"] == 2 and result.objectives["tokens"] > 0  # both were paid for


def test_rate_limits_and_server_errors_are_retried_by_the_case_runner(stub, monkeypatch, math_dataset):
    ev = evaluator(stub, monkeypatch)
    stub.fail_next(429, model="stub-task")
    stub.fail_next(500, model="stub-task")
    runner = CaseRunner(ev, EvaluationSettings(max_retries=2, retry_backoff_s=0.0))
    results = runner.run(TextsArtifact({"predict": "Solve. NUMBER-ONLY"}), "id", math_dataset.validation[:2], 5)
    assert [r.score for r in results] == [1.0, 1.0]
    assert [r.status for r in stub.requests] == [429, 500, 200, 200]
    stub.fail_next(400)
    with pytest.raises(Exception) as info:
        ev.evaluate(TextsArtifact({"predict": "Solve."}), math_dataset.validation[:1], 5)
    assert not is_transient(info.value, ev.retryable_exceptions)  # a bad request stops the run


def test_results_do_not_depend_on_the_worker_count(stub, monkeypatch, math_dataset):
    ev = evaluator(stub, monkeypatch)
    artifact, cases = TextsArtifact({"predict": "Solve."}), list(math_dataset.validation[:6])

    def scored(workers: int):
        runner = CaseRunner(ev, EvaluationSettings(workers=workers))
        try:
            return [(r.case_id, r.score, r.output, r.feedback) for r in runner.run(artifact, "id", cases, 11)]
        finally:
            runner.close()

    assert scored(1) == scored(4)
    seeds = [r.body["seed"] for r in stub.requests]
    assert sorted(seeds[:6]) == sorted(seeds[6:])


def test_a_short_run_saves_every_candidate_and_the_winner_as_program_state(stub, monkeypatch, math_dataset,
                                                                            tmp_path):
    import dspy

    from evaluators.dspy_math.program import make_program

    run_dir = tmp_path / "run"
    ev = evaluator(stub, monkeypatch, run_dir=run_dir)

    class Reflector:
        def reflect(self, artifact, component, records):
            return {component: artifact.texts[component] + " Answer NUMBER-ONLY.", "rationale": "units"}

    small = Dataset("m", "v1", math_dataset.feedback[:4], math_dataset.validation[:4], math_dataset.holdout[:4])
    seed = TextsArtifact({"predict": "Solve the arithmetic word problem."})
    # Lenient: the stub's wall-clock latency is noise, and the default latency ceiling would judge it.
    result = optimize(seed, small, ev, Reflector(), SearchConfig(max_iterations=1, minibatch_size=2),
                      promotion=PromotionPolicy.preset("lenient"), run_dir=run_dir, trackers=ev.run_trackers(run_dir))
    assert result.best_id != result.seed_id and result.candidate_holdout.score == 1.0
    assert result.promotion_eligible
    saved = {p.stem for p in (run_dir / "programs").glob("*.json")}
    assert saved == {result.seed_id, result.best_id}
    winner = make_program()
    winner.load(str(run_dir / "program.json"))
    assert winner.predict.signature.instructions == "Solve the arithmetic word problem. Answer NUMBER-ONLY."
    seed_program = make_program()
    seed_program.load(str(run_dir / "programs" / f"{result.seed_id}.json"))
    assert seed_program.predict.signature.instructions == "Solve the arithmetic word problem."
    assert isinstance(winner, dspy.Module)
    assert all(SECRET.encode() not in p.read_bytes() for p in run_dir.rglob("*") if p.is_file())


def test_stub_reports_http_errors_it_was_told_to(stub):
    import urllib.error
    import urllib.request

    stub.fail_next(503)
    request = urllib.request.Request(stub.url + "/chat/completions", data=b'{"model": "x", "messages": []}',
                                     headers={"Content-Type": "application/json"})
    with pytest.raises(urllib.error.HTTPError) as info:
        urllib.request.urlopen(request, timeout=5)
    assert info.value.code == 503 and stub.requests[-1].status == 503
    assert isinstance(Reply("x").content, str)


@pytest.mark.slow
def test_the_winner_program_state_is_logged_to_mlflow(stub, monkeypatch, math_dataset, tmp_path, mlflow_env):
    from mlflow import MlflowClient

    from evaluators.dspy_math.program import make_program
    from gepa_lab.tracking.mlflow_tracker import MlflowTracker

    run_dir, uri = tmp_path / "run", f"sqlite:///{tmp_path}/mlflow.db"
    ev = evaluator(stub, monkeypatch, run_dir=run_dir)

    class Reflector:
        def reflect(self, artifact, component, records):
            return {component: artifact.texts[component] + " Answer NUMBER-ONLY."}

    small = Dataset("m", "v1", math_dataset.feedback[:2], math_dataset.validation[:2], math_dataset.holdout[:2])
    result = optimize(TextsArtifact({"predict": "Solve."}), small, ev, Reflector(),
                      SearchConfig(max_iterations=1, minibatch_size=2), run_dir=run_dir,
                      promotion=PromotionPolicy.preset("lenient"),  # the stub's latency is noise
                      trackers=[MlflowTracker(uri=uri, plots=False), *ev.run_trackers(run_dir)])
    client = MlflowClient(tracking_uri=uri)
    run_id = result.links["mlflow_run_id"]
    assert "best/program.json" in [a.path for a in client.list_artifacts(run_id, "best")]
    local = client.download_artifacts(run_id, "best/program.json", str(tmp_path / "download"))
    program = make_program()
    program.load(local)
    assert program.predict.signature.instructions == "Solve. Answer NUMBER-ONLY."
    db = (tmp_path / "mlflow.db").read_bytes()
    assert SECRET.encode() not in db
    stored = [p for p in (tmp_path / "mlruns").rglob("*") if p.is_file()]
    assert stored and not [p for p in stored if SECRET.encode() in p.read_bytes()]


# -- per-predictor feedback, checks up front (issue 23) ------------------------------------------------
def test_per_predictor_feedback_is_narrowed_to_the_reflected_predictor():
    from gepa_lab.lm.records import compose_feedback, for_component, split_feedback, trace_line

    feedback = compose_feedback("Wrong answer.", {"extract.predict": "Quote the\nright sentence.", "answer": "",
                                                  "finish": "Drop the unit."})
    assert split_feedback(feedback) == ("Wrong answer.", {"extract.predict": "Quote the right sentence.",
                                                          "finish": "Drop the unit."})
    trace = "\n".join(["provider seed 7 (sent to the provider)", trace_line("extract.predict", "inputs", "{}"),
                       trace_line("finish", "outputs", '{"answer": "4 cats"}')])
    record = {"case_id": "case-1", "score": 0.0, "feedback": feedback, "trace": trace}
    narrowed = for_component(record, "finish")
    assert narrowed["feedback"] == "Wrong answer.\nAbout `finish`: Drop the unit."
    assert narrowed["trace"] == "provider seed 7 (sent to the provider)\n[finish] outputs: {\"answer\": \"4 cats\"}"
    assert for_component(record, "other")["feedback"] == "Wrong answer."  # no section of its own
    plain = {"feedback": "Just text.", "trace": "no tags"}
    assert for_component(plain, "finish") == plain  # nothing to narrow


def test_a_five_argument_metric_is_asked_about_each_predictor(stub, monkeypatch, math_dataset):
    import dspy

    from gepa_lab.lm.program import DspyProgramEvaluator

    calls = []

    def metric(gold, pred, trace=None, pred_name=None, pred_trace=None):
        calls.append((pred_name, None if pred_trace is None else len(pred_trace)))
        return dspy.Prediction(score=1.0, feedback="overall" if pred_name is None else f"about {pred_name}")

    ev = DspyProgramEvaluator(PROGRAM, metric, ["question"], lm={"model": "openai/stub-task", "api_base": stub.url,
                                                                  "api_key_env": None})
    [result] = ev.evaluate(TextsArtifact({"predict": "Solve. NUMBER-ONLY"}), math_dataset.validation[:1], 3)
    assert calls == [(None, None), ("predict", 1)]
    assert result.feedback == "overall\n[feedback for predict] about predict"
    assert "[predict] inputs:" in result.trace and "[predict] outputs:" in result.trace
    assert "metric_source" in ev.fingerprint()


def test_forgotten_inputs_and_a_wrong_metric_fail_when_the_evaluator_is_built(stub):
    import dspy

    from gepa_lab.lm.program import DspyProgramEvaluator

    class TwoInputs(dspy.Module):
        def __init__(self):
            super().__init__()
            self.answer = dspy.Predict("context, question -> answer")

        def forward(self, context, question):
            return self.answer(context=context, question=question)

    lm = {"model": "openai/stub-task", "api_base": stub.url, "api_key_env": None}
    with pytest.raises(ValueError, match=r"evaluator.inputs \['question'\] do not match TwoInputs.forward\(context, "
                                         r"question\): set evaluator.inputs to \[context, question\]"):
        DspyProgramEvaluator(TwoInputs(), METRIC, ["question"], lm=lm)
    with pytest.raises(ValueError, match=r"it must accept \(gold, pred\) or dspy.GEPA's"):
        DspyProgramEvaluator(PROGRAM, lambda gold: 1.0, ["question"], lm=lm)
    with pytest.raises(ValueError, match="run from the directory that holds it, or add that directory to PYTHONPATH"):
        DspyProgramEvaluator("no_such_pkg.mod:make", METRIC, ["question"], lm=lm)
    assert not stub.requests
