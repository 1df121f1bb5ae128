"""The reflection boundary (docs/design.md §2.6)."""

from __future__ import annotations

import json

import pytest
from helpers import (
    IMPROVED_STEP,
    ImprovingReflector,
    RevisionReflector,
    TextReflector,
    ToyEvaluator,
    attach,
    full_dict,
    revisions,
    seed_spec,
)

from gepa_lab import Case, Dataset, Evaluation, SearchConfig, optimize
from gepa_lab.core.errors import ReflectionRejected
from gepa_lab.search.reflection import apply_reply, build_records

CANARY = "CANARY-7f3a"
META_CANARY = "META-CANARY-91c2"
OBJECTIVE_CANARY = "objective_canary_q7"
MARKER = "\n...[truncated]...\n"
RECORD_KEYS = {"case_id", "input", "expected", "score", "output", "feedback", "trace"}


def _leaky_dataset() -> Dataset:
    feedback = [
        Case(
            id=f"fb-real-id-{i}",
            input=f"feedback question {i}",
            expected=f"feedback answer {i}",
            critical=True,
            metadata={"owner": META_CANARY},
        )
        for i in range(1, 6)
    ]

    def planted(prefix: str, n: int) -> list[Case]:
        return [
            Case(
                id=f"{prefix}-{i}",
                input=f"{prefix} question {i} {CANARY}",
                expected=f"{prefix} answer {CANARY}",
                critical=i == 1,
                metadata={"note": CANARY},
            )
            for i in range(1, n + 1)
        ]

    return Dataset("leaky", "v1", feedback, planted("val", 3), planted("ho", 3))


def _score(artifact, case, seed):
    return min(1.0, 0.1 + 0.1 * revisions(artifact))


def test_validation_and_holdout_content_never_reaches_the_reflector():
    ds = _leaky_dataset()
    ev, rf = attach(ToyEvaluator(_score, echo=True, objectives={OBJECTIVE_CANARY: 1.0}), RevisionReflector())
    result = optimize(seed_spec(), ds, ev, rf, SearchConfig(max_iterations=6, minibatch_size=3))

    assert len(rf.seen) == 6
    assert result.candidate_count > 2  # a multi-iteration run with several parents
    # The evaluator really did echo the canary for validation / holdout cases.
    assert any(c.case_ids[0].startswith("val") for c in ev.calls)
    for seen in rf.seen:
        shown = json.dumps(seen.records) + json.dumps(full_dict(seen.artifact))
        assert CANARY not in shown
        assert META_CANARY not in shown  # metadata of feedback cases never crosses either
        assert OBJECTIVE_CANARY not in shown
        assert "fb-real-id" not in shown  # real case ids are replaced
        assert "critical" not in shown
        assert "metadata" not in shown
        assert "objectives" not in shown


def test_records_have_exact_keys_and_ordinal_ids_in_minibatch_order():
    ds = _leaky_dataset()
    by_id = {c.id: c for c in ds.feedback}
    ev, rf = attach(ToyEvaluator(_score, echo=True), RevisionReflector())
    optimize(seed_spec(), ds, ev, rf, SearchConfig(max_iterations=4, minibatch_size=3))

    assert rf.seen
    for seen in rf.seen:
        records = seen.records
        assert len(records) == 3
        # The parent's minibatch is the feedback batch scored right before this reflection.
        minibatch = [cid for call in ev.calls[: seen.evaluator_calls_before] for cid in call.case_ids][-3:]
        assert all(cid.startswith("fb-") for cid in minibatch)
        assert [r["case_id"] for r in records] == ["case-1", "case-2", "case-3"]
        for record, cid in zip(records, minibatch, strict=True):
            assert set(record) == RECORD_KEYS
            case = by_id[cid]
            assert record["input"] == case.input
            assert record["expected"] == case.expected
            assert record["score"] == pytest.approx(_score(seen.artifact, case, 0))
            assert record["output"].startswith("output for " + case.input)
            assert case.input in record["feedback"] and case.input in record["trace"]


def _ev(case_id="c1", **texts):
    return Evaluation(case_id=case_id, score=0.5, **texts)


def test_each_text_field_is_capped_at_4000_chars_head_three_quarters_tail_one_quarter():
    long_text = " ".join(f"w{i:05d}" for i in range(1500))  # 10,499 chars, distinct positions
    case = Case(id="c1", input=long_text, expected=long_text)
    [record] = build_records([case], [_ev(output=long_text, feedback=long_text, trace=long_text)])
    head, tail = 2985, 4000 - 19 - 2985  # ⌊(4000−19)·3/4⌋ and the rest
    expected = long_text[:head] + MARKER + long_text[-tail:]
    for key in ("input", "expected", "output", "feedback", "trace"):
        assert len(record[key]) == 4000
        assert record[key] == expected, key
    # Short fields are only trimmed.
    [short] = build_records([Case(id="c2", input="  hi  ")], [_ev("c2", output=" out ")])
    assert short["input"] == "hi" and short["output"] == "out"


def test_cap_counts_characters_not_bytes():
    text = "漢" * 3999
    [record] = build_records([Case(id="c1", input=text)], [_ev(output="é" * 4000)])
    assert record["input"] == text
    assert record["output"] == "é" * 4000


SECRETS = [
    ("Authorization: Bearer abcdefghijklmnop123456", "abcdefghijklmnop123456"),
    ("please call with bearer tok_0123456789abcdef now", "tok_0123456789abcdef"),
    ("API_KEY=supersecretvalue1", "supersecretvalue1"),
    ('{"password": "hunter2-horse-battery"}', "hunter2-horse-battery"),
    ("MY_SECRET_TOKEN=zzz-secret-777", "zzz-secret-777"),
    ("use key sk-ABCDEF1234567890abcd for this", "sk-ABCDEF1234567890abcd"),
    ("jwt eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0In0.c2lnbmF0dXJlX3Zh end", "eyJhbGciOiJIUzI1NiJ9"),
    ("run tool --api-key cli-secret-999 --verbose", "cli-secret-999"),
]


@pytest.mark.parametrize("text, secret", SECRETS, ids=[s[1][:12] for s in SECRETS])
def test_credentials_are_redacted_in_every_record_field(text, secret):
    case = Case(id="c1", input=f"input: {text}", expected=f"expected: {text}")
    evaluation = _ev(output=f"out {text}", feedback=f"fb {text}", trace=f"trace {text}")
    [record] = build_records([case], [evaluation])
    for key in ("input", "expected", "output", "feedback", "trace"):
        assert secret not in record[key], key
        assert "[REDACTED]" in record[key], key
    # Redaction works on copies: the case and the evaluation are unchanged.
    assert case.input == f"input: {text}"
    assert evaluation.output == f"out {text}"


def test_secret_at_both_ends_of_an_oversized_field_is_bounded_and_redacted():
    text = "API_KEY=headsecret123 " + "filler " * 3_000 + " MY_SECRET_TOKEN=tailsecret456"
    [record] = build_records([Case(id="c1", input="q")], [_ev(output=text)])
    assert len(record["output"]) <= 4000
    assert "[truncated]" in record["output"]
    assert record["output"].count("[REDACTED]") == 2
    assert "headsecret123" not in record["output"] and "tailsecret456" not in record["output"]


def test_secrets_in_cases_outputs_and_seed_never_reach_the_reflector_and_nothing_is_mutated():
    secret_step = "Authenticate with API_KEY=seedsecret999 first."
    seed = seed_spec(steps=[secret_step, "Produce the requested result."])
    feedback = [
        Case(id=f"fb-{i}", input=f"call with Authorization: Bearer inputsecret{i:012d}")
        for i in range(1, 4)
    ]
    ds = Dataset("s", "v1", feedback, [Case(id="v-1", input="v")])
    originals = [c.input for c in feedback]

    def text(artifact, case, seed_):
        return {"output": "leaked sk-outputsecret12345678", "trace": '{"password": "tracepass77"}'}

    ev, rf = attach(ToyEvaluator(text=text), ImprovingReflector())
    optimize(seed, ds, ev, rf, SearchConfig(max_iterations=2, minibatch_size=2))

    assert rf.seen
    for seen in rf.seen:
        shown = json.dumps(seen.records) + json.dumps(full_dict(seen.artifact))
        for secret in ("seedsecret999", "inputsecret", "sk-outputsecret", "tracepass77"):
            assert secret not in shown
        assert "[REDACTED]" in json.dumps(full_dict(seen.artifact))
    assert [c.input for c in feedback] == originals
    assert seed.steps[0] == secret_step


# --------------------------------------------------------------------------------------------
# Reply parsing and applying the single selected component
# --------------------------------------------------------------------------------------------

NEW_STEPS = ["Read the task.", "Check the improved result."]


@pytest.mark.parametrize(
    "reply",
    [
        json.dumps({"steps": NEW_STEPS, "rationale": "r"}),
        "```json\n" + json.dumps({"steps": NEW_STEPS, "rationale": "r"}, indent=2) + "\n```",
        "```\n" + json.dumps({"steps": NEW_STEPS}) + "\n```",
        "Here is the improved skill:\n" + json.dumps({"steps": NEW_STEPS}) + "\nHope this helps!",
        '{"steps": ["Read the task.", "Check the improved result.",], "rationale": "r",}',
        '```json\n{"steps": ["Read the task.", "Check the improved result.",],}\n```',
        {"steps": NEW_STEPS, "rationale": "r"},
    ],
    ids=["plain", "json-fence", "bare-fence", "prose", "trailing-commas", "fence+commas", "dict"],
)
def test_reply_formats_parse(reply):
    parent = seed_spec()
    child, _ = apply_reply(parent, "steps", reply)
    assert list(child.steps) == NEW_STEPS
    assert full_dict(child) == {**full_dict(parent), "steps": NEW_STEPS}


@pytest.mark.parametrize(
    "reply, message",
    [
        ("this is not json", "parse reflection response"),
        ("", "empty reflection response"),
        (None, "empty reflection response"),
        ({"steps": []}, "invalid reflected candidate"),
        ({"steps": ["  ", ""]}, "invalid reflected candidate"),
        ({"steps": ["Read the task carefully.", "Produce the requested result."]}, "did not change"),
    ],
)
def test_unusable_replies_are_rejections(reply, message):
    with pytest.raises(ReflectionRejected, match=message):
        apply_reply(seed_spec(), "steps", reply)


def test_invalid_description_is_rejected():
    with pytest.raises(ReflectionRejected, match="invalid reflected candidate: description is required"):
        apply_reply(seed_spec(), "description", {"description": "   "})


EVERYTHING_CHANGED = {
    "name": "Hacked Name",
    "description": "new description",
    "when_to_use": "new when to use",
    "steps": ["new step"],
    "pitfalls": ["new pitfall"],
    "rationale": "changed it all",
}


@pytest.mark.parametrize("component", ["steps", "pitfalls", "when_to_use", "description"])
def test_only_the_selected_component_is_applied_and_name_never_changes(component):
    parent = seed_spec(pitfalls=["old pitfall"])
    fenced = "```json\n" + json.dumps(EVERYTHING_CHANGED) + "\n```"
    child, rationale = apply_reply(parent, component, fenced)
    assert full_dict(child) == {**full_dict(parent), component: EVERYTHING_CHANGED[component]}
    assert child.name == parent.name
    assert rationale == "changed it all"


def test_list_components_are_trimmed_and_blanks_dropped():
    parent = seed_spec()
    child, _ = apply_reply(parent, "steps", {"steps": ["  first  ", "", "   ", "\tsecond\n"]})
    assert child.steps == ("first", "second")
    child, _ = apply_reply(parent, "pitfalls", {"pitfalls": [" p1 ", "", " "]})
    assert child.pitfalls == ("p1",)
    child, _ = apply_reply(parent, "when_to_use", {"when_to_use": "  trimmed  "})
    assert child.when_to_use == "trimmed"


def test_reply_text_end_to_end_only_changes_the_selected_component():
    seed = seed_spec()
    reply = "Sure.\n```json\n" + json.dumps({**EVERYTHING_CHANGED, "steps": [*seed.steps, IMPROVED_STEP]}) + "\n```"
    ev, rf = attach(ToyEvaluator(), TextReflector(reply))
    result = optimize(seed, Dataset("d", "1", [Case("f1", "a"), Case("f2", "b")], [Case("v1", "c")]), ev, rf,
                      SearchConfig(max_iterations=1, minibatch_size=2))
    assert result.candidate_count == 2
    assert full_dict(result.best) == {**full_dict(seed), "steps": [*seed.steps, IMPROVED_STEP]}


def test_unsupported_component_is_a_plain_error_not_a_rejection():
    with pytest.raises(ValueError, match="unsupported component") as info:
        apply_reply(seed_spec(), "name", {"name": "Other"})
    assert not isinstance(info.value, ReflectionRejected)


def test_rationale_is_trimmed_and_bounded():
    child, rationale = apply_reply(seed_spec(), "description", {"description": "new", "rationale": "  why  "})
    assert rationale == "why"
    _, long_rationale = apply_reply(seed_spec(), "description", {"description": "new", "rationale": "why " * 2500})
    assert len(long_rationale) <= 4000 and "[truncated]" in long_rationale


# --------------------------------------------------------------------------------------------
# --------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "text, secret",
    [
        ("Authorization: token ghp_1234567890abcdefghij", "ghp_1234567890abcdefghij"),
        ('{"authorization": "Digest response=6629fae49393a0539745"}', "6629fae49393a0539745"),
    ],
)
def test_authorization_value_is_redacted_whatever_the_scheme(text, secret):
    [record] = build_records([Case(id="c1", input=text)], [_ev()])
    assert "[REDACTED]" in record["input"]
    assert secret not in record["input"]


def _best_time(fn, repeat):
    import time

    best = float("inf")
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - start)
    return best


def test_redaction_cost_is_linear_in_a_long_token():
    from gepa_lab.core.redact import prepare_field

    words = "abcd " * 800  # 4,000 chars of short tokens: the fast path
    token = "QUJD" * 1000  # 4,000 chars, one token (e.g. base64)
    t_words = _best_time(lambda: prepare_field(words), 3)
    t_token = _best_time(lambda: prepare_field(token), 1)
    assert t_token < max(0.05, 25 * t_words)
