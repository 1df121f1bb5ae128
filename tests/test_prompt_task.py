"""`evaluator=prompt` and `reflector=prompt_rules` (evaluators/prompt_task/) against the loopback
stub provider: what reaches the model, how replies are graded and explained, tokens from the
provider's usage, the offline reflector's edits, and a whole search that improves a prompt."""

from __future__ import annotations

import json

import pytest
from stub_llm import Reply, StubLLM

from evaluators.prompt_task import PromptEvaluator, PromptRulesReflector
from evaluators.prompt_task.evaluator import normalize
from gepa_lab import Case, Dataset, PromptArtifact, SearchConfig, optimize
from gepa_lab.lm import LMSettings

NEGATIVE = ("broke", "awful", "cold", "rude", "late")


def toy_model(request):
    """Names the label alone only when told to answer in one word; otherwise a sentence."""
    text = request.text.lower()
    label = "negative" if any(cue in text.split("\n\n")[-1] for cue in NEGATIVE) else "positive"
    return label if "one word" in text else f"The review is {label}."


def settings(stub: StubLLM) -> LMSettings:
    return LMSettings(model="openai/stub", api_base=stub.url, api_key_env=None, max_tokens=16)


def case(n: int, text: str, label: str) -> Case:
    return Case(f"c{n}", text, label)


def test_replies_are_graded_and_explained_with_tokens_from_the_provider():
    replies = iter([Reply("positive", prompt_tokens=40, completion_tokens=2),
                    Reply("The review is negative.", prompt_tokens=41, completion_tokens=6),
                    Reply("", prompt_tokens=39, completion_tokens=0),
                    Reply("positive or negative", prompt_tokens=42, completion_tokens=4)])
    with StubLLM(lambda request: next(replies)) as stub:
        evaluator = PromptEvaluator(settings(stub), labels=["positive", "negative"])
        cases = [case(1, "Great!", "positive"), case(2, "It broke.", "negative"), case(3, "Meh.", "negative"),
                 case(4, "Fine.", "positive")]
        results = evaluator.evaluate(PromptArtifact("Classify the review."), cases, seed=7)
        bodies = [r.body for r in stub.requests]
    assert [r.score for r in results] == [1.0, 0.0, 0.0, 0.0]
    assert results[0].feedback == "Correct: the answer is 'positive'."
    assert results[1].feedback.splitlines() == [
        "Wrong: expected 'negative', got 'The review is negative.'.",
        "Format: the reply contains the answer inside other words; reply with the answer only."]
    assert "Format: the reply was empty." in results[2].feedback
    assert "names several answers (positive, negative); give exactly one" in results[3].feedback
    # placement=user: prompt, a blank line, the input; one message; the case's provider seed sent.
    assert bodies[1]["messages"] == [{"role": "user", "content": "Classify the review.\n\nIt broke."}]
    assert all(isinstance(b.get("seed"), int) for b in bodies) and len({b["seed"] for b in bodies}) == 4
    assert [r.objectives["tokens"] for r in results] == [42.0, 47.0, 39.0, 46.0]
    assert [r.objectives["format_ok"] for r in results] == [1.0, 0.0, 0.0, 0.0]
    assert evaluator.usage.tokens == 42 + 47 + 39 + 46


@pytest.mark.parametrize(("metric", "extra", "reply", "expected", "passed"), [
    ("exact", {}, '"Positive."', "positive", True),
    ("exact", {}, "It is positive", "positive", False),
    ("label", {"labels": ["sports", "science"]}, "This is about sports.", "sports", True),
    ("label", {"labels": ["sports", "science"]}, "sports and science", "sports", False),
    ("label", {}, "The city is Oslo.", "Oslo", True),
    ("numeric", {}, "The total is 1,250 km.", "1250", True),
    ("numeric", {}, "about 12", "13", False),
    ("regex", {"pattern": r"(?i)answer:\s*(\w+)"}, "Answer: Lima", "lima", True),
    ("regex", {"pattern": r"(?i)answer:\s*(\w+)"}, "Lima", "lima", False),
])
def test_each_metric(metric, extra, reply, expected, passed):
    evaluator = PromptEvaluator(LMSettings(model="openai/stub", api_base="http://127.0.0.1:9/v1", api_key_env=None),
                                metric=metric, **extra)
    assert evaluator.grade(reply, expected) is passed


def test_placement_system_sends_the_prompt_as_the_system_message():
    with StubLLM(lambda request: "positive") as stub:
        PromptEvaluator(settings(stub), placement="system").evaluate(PromptArtifact("Be brief."),
                                                                     [case(1, "Nice.", "positive")], seed=1)
        assert stub.requests[0].body["messages"] == [{"role": "system", "content": "Be brief."},
                                                     {"role": "user", "content": "Nice."}]


@pytest.mark.parametrize(("kwargs", "message"), [
    ({"metric": "fuzzy"}, "evaluator.metric must be one of exact, label, numeric, regex (got 'fuzzy')"),
    ({"placement": "assistant"}, "evaluator.placement must be one of user, system"),
    ({"metric": "regex"}, "evaluator.metric=regex needs evaluator.pattern=<regular expression>"),
    ({"metric": "regex", "pattern": "("}, "evaluator.pattern is not a regular expression"),
    ({"labels": "positive"}, "evaluator.labels must be a list of answers"),
    ({"labels": []}, "evaluator.labels must be a list of answers"),
])
def test_bad_settings_are_one_line_errors(kwargs, message):
    with pytest.raises(ValueError, match=message.replace("(", r"\(").replace(")", r"\)").replace("[", r"\[")):
        PromptEvaluator(LMSettings(model="openai/stub", api_base="http://127.0.0.1:9/v1", api_key_env=None), **kwargs)


def test_cases_without_expected_or_a_wrong_artifact_kind_are_refused():
    evaluator = PromptEvaluator(LMSettings(model="openai/stub", api_base="http://127.0.0.1:9/v1", api_key_env=None),
                                metric="numeric")
    with pytest.raises(ValueError, match="case 'c1' has no expected answer"):
        evaluator.check_cases([Case("c1", "x", None)])
    with pytest.raises(ValueError, match="expected 'ten' is not a number"):
        evaluator.check_cases([Case("c1", "x", "ten")])
    from gepa_lab import RoutingPolicy

    with pytest.raises(ValueError, match="optimizes a prompt artifact"):
        evaluator.evaluate(RoutingPolicy("route"), [Case("c1", "x", "1")], 1)


def test_a_seed_of_another_kind_is_refused_before_anything_is_paid(tmp_path):
    from helpers import dataset, seed_spec

    with StubLLM(toy_model) as stub:
        with pytest.raises(ValueError, match=r"^the seed artifact does not fit the evaluator PromptEvaluator: "
                                             r"ValueError: evaluator=prompt optimizes a prompt artifact .*, not a "
                                             r"'skill' one; point dataset.seed_artifact at a prompt file$"):
            optimize(seed_spec(), dataset(), PromptEvaluator(settings(stub)), PromptRulesReflector(),
                     run_dir=tmp_path / "run")
        assert stub.requests == []


def record(n: int, text: str, expected: str, output: str, score: float) -> dict:
    return {"case_id": f"case-{n}", "input": text, "expected": expected, "score": score, "output": output,
            "feedback": "", "trace": ""}


def test_the_offline_reflector_alternates_format_rules_and_worked_examples():
    reflector = PromptRulesReflector(max_examples=2)
    rambling = [record(1, "It broke.", "negative", "The review is negative.", 0.0),
                record(2, "Great!", "positive", "The review is positive.", 0.0)]
    first = reflector.reflect(PromptArtifact("Classify the review."), "text", rambling)
    assert first["text"] == "Classify the review.\nAnswer with one word: negative or positive."
    # Replies still break the format: now a worked example (edits alternate), then another wording.
    second = reflector.reflect(PromptArtifact(first["text"]), "text", rambling)
    assert second["text"].splitlines()[-1] == "Example: It broke. -> negative"
    third = reflector.reflect(PromptArtifact(second["text"]), "text", rambling)
    assert "Reply with only the label (negative or positive), nothing else." in third["text"].splitlines()
    assert "Answer with one word" not in third["text"] and third["text"].count("Example:") == 1
    # A label seen later joins the rule; examples stay within max_examples, the oldest leaving.
    wrong = [record(3, "Sunny day", "neutral", "positive", 0.0), record(4, "Ok", "neutral", "negative", 0.0)]
    fourth = reflector.reflect(PromptArtifact(third["text"]), "text", wrong)
    fifth = reflector.reflect(PromptArtifact(fourth["text"]), "text", wrong)
    assert fifth["text"].count("Example:") == 2 and "Example: It broke. -> negative" not in fifth["text"]
    rambling_neutral = [record(5, "Meh", "neutral", "It is neutral I think", 0.0)]
    sixth = reflector.reflect(PromptArtifact(fifth["text"]), "text", rambling_neutral)
    assert sixth["text"].splitlines()[:2] == [
        "Classify the review.", "Output just one word, negative, neutral or positive, with no explanation."]
    # Same records, same parent: the same edit (no randomness).
    assert reflector.reflect(PromptArtifact(first["text"]), "text", rambling) == second


def test_extraction_answers_get_an_answer_only_rule_not_a_label_list():
    records = [record(1, "Ana flew from Lima to Oslo.", "Oslo", "Ana flew from Lima to Oslo.", 0.0)]
    edit = PromptRulesReflector().reflect(PromptArtifact("Extract the destination city."), "text", records)
    assert edit["text"] == "Extract the destination city.\nReply with the answer only, no sentence."
    passing = [record(1, "Ana flew to Oslo.", "Oslo", "Oslo", 1.0)]
    assert PromptRulesReflector().reflect(PromptArtifact(edit["text"]), "text", passing)["text"].endswith(
        "Example: Ana flew to Oslo. -> Oslo")
    unchanged = PromptRulesReflector(max_examples=0).reflect(PromptArtifact("P"), "text", passing)
    assert unchanged["text"] == "P"


def test_a_search_with_the_offline_reflector_improves_the_prompt(tmp_path):
    reviews = [("It broke on day one.", "negative"), ("Awful and cold.", "negative"), ("Lovely staff.", "positive"),
               ("The bus was late.", "negative"), ("Great value.", "positive"), ("Rude waiter.", "negative"),
               ("Works well.", "positive"), ("Fast delivery.", "positive")]
    splits = {name: [Case(f"{name[0]}{i}", f"{text} ({name} {i})", label) for i, (text, label) in enumerate(reviews)]
              for name in ("feedback", "validation", "holdout")}
    dataset = Dataset("toy-sentiment", "v1", splits["feedback"], splits["validation"], splits["holdout"])
    with StubLLM(toy_model) as stub:
        evaluator = PromptEvaluator(settings(stub), labels=["positive", "negative"])
        result = optimize(PromptArtifact("Classify the review."), dataset, evaluator, PromptRulesReflector(),
                          SearchConfig(max_metric_calls=60, minibatch_size=4), run_dir=tmp_path / "run")
        served = sum(r.usage["prompt_tokens"] + r.usage["completion_tokens"] for r in stub.requests)
    assert result.baseline_validation.score == 0.0 and result.candidate_validation.score == 1.0
    assert "Answer with one word: negative or positive." in result.best.text
    assert result.holdout_delta == 1.0
    # Every token the provider reported is counted once (a cache hit costs nothing again).
    assert result.task_tokens == served > 0
    assert json.loads((tmp_path / "run" / "result.json").read_text())["task_tokens"] == served


def test_normalize():
    assert normalize('  "Positive."\n') == "positive"
    assert normalize("**Oslo**") == "oslo"
