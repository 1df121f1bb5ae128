"""Dataset files through HF `datasets` (JSONL and Parquet), manifests and seed artifacts."""

from __future__ import annotations

import json

import pandas as pd
import pytest

from gepa_lab.core.contracts import split_digest
from gepa_lab.data import load_artifact, load_dataset_dir, load_split

ROWS = [
    {"id": "a-1", "input": "task one", "expected": "{\"n\": 1}", "critical": False, "metadata": {"scale": "e1"}},
    {"id": "a-2", "input": "task two", "expected": None, "critical": True, "metadata": {"scale": "h1", "k": "v"}},
]


def write_jsonl(path, rows):
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))


def test_jsonl_and_parquet_give_the_same_cases_and_digest(tmp_path):
    write_jsonl(tmp_path / "s.jsonl", ROWS)
    pd.DataFrame(ROWS).to_parquet(tmp_path / "s.parquet")
    from_jsonl = load_split(tmp_path / "s.jsonl")
    from_parquet = load_split(tmp_path / "s.parquet")
    assert [c.id for c in from_jsonl] == ["a-1", "a-2"]
    assert from_jsonl[1].critical is True and from_jsonl[1].expected is None
    # HF unifies struct columns (a missing key becomes None); None metadata values are dropped.
    assert from_jsonl[0].metadata == {"scale": "e1"}
    assert from_jsonl == from_parquet
    assert split_digest(from_jsonl) == split_digest(from_parquet)


def test_structured_input_is_canonicalised(tmp_path):
    write_jsonl(tmp_path / "s.jsonl", [{"id": "x", "input": {"b": 1, "a": [1, 2]}, "expected": {"ok": True}}])
    (case,) = load_split(tmp_path / "s.jsonl")
    assert case.input == '{"a":[1,2],"b":1}' and case.expected == '{"ok":true}'


GOOD = {"id": "ok", "input": "t"}


@pytest.mark.parametrize(
    "bad, message",
    [
        ({"id": "x", "input": "t", "extra": 1}, "case has unknown field(s) ['extra']; allowed: id, input, "
                                                "expected, critical, metadata"),
        ({"id": "x"}, "case is missing 'input' (every case needs 'id' and 'input')"),
        ({"input": "t"}, "case is missing 'id' (every case needs 'id' and 'input')"),
        ({"id": "x", "input": "t", "critical": "false"}, "case 'x': critical must be true or false, got 'false'"),
    ],
)
def test_bad_rows_name_their_own_line_and_the_problem(tmp_path, bad, message):
    # The bad record is on line 4 (after a blank line): the error names that line, not line 1.
    rows = [json.dumps({**GOOD, "id": f"ok-{i}"}) for i in range(2)]
    (tmp_path / "s.jsonl").write_text("\n".join([*rows, "", json.dumps(bad)]) + "\n")
    with pytest.raises(ValueError) as err:
        load_split(tmp_path / "s.jsonl")
    assert str(err.value) == f"s.jsonl line 4: {message}"


def test_a_missing_input_is_never_the_string_null(tmp_path):
    write_jsonl(tmp_path / "s.jsonl", [{"id": "a", "input": "t"}, {"id": "b"}])
    with pytest.raises(ValueError, match="s.jsonl line 2: case is missing 'input'"):
        load_split(tmp_path / "s.jsonl")


def test_a_malformed_json_line_is_named_once_with_its_line(tmp_path):
    (tmp_path / "bad.jsonl").write_text('{"id": "a", "input": "t"}\n{not json\n')
    with pytest.raises(ValueError) as err:
        load_split(tmp_path / "bad.jsonl")
    assert str(err.value) == ("bad.jsonl line 2: not valid JSON (Expecting property name enclosed in double "
                              "quotes at column 2); fix or remove the line")


def test_a_dataset_without_manifest_or_id_says_how_to_fix_it(tmp_path):
    make_dir(tmp_path)
    with pytest.raises(ValueError, match=r'has no id: it has no manifest.json; add one with "id" or set dataset.id$'):
        load_dataset_dir(tmp_path)
    (tmp_path / "manifest.json").write_text('{"version": "1"}')
    with pytest.raises(ValueError, match=r'has no id: its manifest.json has no "id"; add it there or set dataset.id$'):
        load_dataset_dir(tmp_path)
    with pytest.raises(ValueError, match=r"has no id: dataset.manifest is null, so no manifest is read; set "
                                         r"dataset.id$"):  # not "no manifest": one is there, unread
        load_dataset_dir(tmp_path, manifest=None)
    assert load_dataset_dir(tmp_path, id="d", version="1").id == "d"


@pytest.mark.parametrize("split", ["feedback", "validation", "holdout"])
def test_a_split_file_without_cases_is_refused_before_anything_runs(tmp_path, split):
    make_dir(tmp_path)
    (tmp_path / f"{split}.jsonl").write_text("\n" if split == "validation" else "")  # blank lines are no cases
    leave_out = r" \(or set dataset.holdout=null to run without one\)" if split == "holdout" else ""
    with pytest.raises(ValueError, match=rf"^dataset split '{split}' \(.*{split}.jsonl\) has no cases; add cases"
                                         rf"{leave_out}$"):
        load_dataset_dir(tmp_path, id="d", version="1")
    if split == "holdout":  # the fix the message names
        assert load_dataset_dir(tmp_path, id="d", version="1", files={"holdout": None}).holdout == ()


def test_unsupported_or_missing_files(tmp_path):
    (tmp_path / "s.csv").write_text("id,input\n")
    with pytest.raises(ValueError, match="use .jsonl, .json or .parquet"):
        load_split(tmp_path / "s.csv")
    with pytest.raises(FileNotFoundError, match="dataset split file not found"):
        load_split(tmp_path / "missing.jsonl")
    (tmp_path / "bad.parquet").write_text("not parquet")
    with pytest.raises(ValueError, match="cannot read dataset split"):
        load_split(tmp_path / "bad.parquet")


def make_dir(tmp_path, holdout=True):
    for split in ("feedback", "validation") + (("holdout",) if holdout else ()):
        write_jsonl(tmp_path / f"{split}.jsonl", [{"id": f"{split}-{i}", "input": f"{split} {i}"} for i in range(3)])
    return tmp_path


def test_manifest_supplies_identity_and_guards_the_digests(tmp_path):
    make_dir(tmp_path)
    loaded = load_dataset_dir(tmp_path, id="d", version="1")
    manifest = {"id": "toy", "version": "v9",
                "splits": {s: {"file": f"{s}.jsonl", "sha256": d} for s, d in loaded.digests().items()}}
    (tmp_path / "manifest.json").write_text(json.dumps(manifest))
    ds = load_dataset_dir(tmp_path)
    assert (ds.id, ds.version) == ("toy", "v9") and ds.digests() == loaded.digests()
    write_jsonl(tmp_path / "holdout.jsonl", [{"id": "holdout-0", "input": "changed"}])
    with pytest.raises(ValueError, match="'holdout' does not match its manifest digest"):
        load_dataset_dir(tmp_path)


def test_holdout_can_be_switched_off(tmp_path):
    make_dir(tmp_path, holdout=False)
    ds = load_dataset_dir(tmp_path, id="d", version="1", files={"holdout": None})
    assert ds.holdout == () and len(ds.validation) == 3
    with pytest.raises(FileNotFoundError):
        load_dataset_dir(tmp_path, id="d", version="1")


def test_seed_artifact_files(tmp_path):
    (tmp_path / "seed.json").write_text(json.dumps({"kind": "prompt", "text": "Answer briefly."}))
    assert load_artifact(tmp_path / "seed.json").to_dict() == {"text": "Answer briefly."}
    (tmp_path / "bad.json").write_text("[1, 2]")
    with pytest.raises(ValueError, match="must be a JSON object"):
        load_artifact(tmp_path / "bad.json")
    (tmp_path / "kind.json").write_text(json.dumps({"kind": "poem", "text": "x"}))
    with pytest.raises(ValueError, match="unknown artifact kind 'poem'"):
        load_artifact(tmp_path / "kind.json")


@pytest.mark.parametrize("text, message", [
    ('{"id": "toy", "splits": ', r"dataset manifest .*manifest.json is damaged \(Expecting value at line 1\); restore"),
    ('["a", "b"]', r"dataset manifest .*manifest.json has the wrong shape: expected an object whose \"splits\""),
    ('{"splits": {"holdout": "abc"}}', r"has the wrong shape"),
])
def test_a_damaged_manifest_is_one_line_naming_it(tmp_path, text, message):
    make_dir(tmp_path)
    (tmp_path / "manifest.json").write_text(text)
    with pytest.raises(ValueError, match=message) as info:
        load_dataset_dir(tmp_path, id="d", version="1")
    assert "\n" not in str(info.value)


def test_bytes_that_are_not_utf8_are_named_with_their_line(tmp_path):
    make_dir(tmp_path)
    lines = (tmp_path / "validation.jsonl").read_bytes().splitlines(keepends=True)
    lines[1] = lines[1][:5] + b"\xff" + lines[1][5:]
    (tmp_path / "validation.jsonl").write_bytes(b"".join(lines))
    with pytest.raises(ValueError, match=r"validation.jsonl line 2: not UTF-8 text \(byte 0xff at column 6\); save "):
        load_dataset_dir(tmp_path, id="d", version="1")


def seal(root, rows):
    """A confirmation split and a manifest carrying every split's digest, the confirmation's included."""
    from gepa_lab.data import frozen_files

    splits = {s: [json.loads(line) for line in (root / f"{s}.jsonl").read_text().splitlines()]
              for s in ("feedback", "validation", "holdout")}
    for name, text in frozen_files({**splits, "confirmation": rows}, "d", "1").items():
        (root / name).write_text(text)


def test_the_confirmation_split_is_sealed_unseen_and_digested(tmp_path):
    from gepa_lab.data import DatasetSource, load_confirmation

    make_dir(tmp_path)
    dataset = load_dataset_dir(tmp_path, id="d", version="1")
    source = DatasetSource(path=str(tmp_path))
    with pytest.raises(FileNotFoundError, match="has no confirmation split"):
        load_confirmation(source, dataset)
    write_jsonl(tmp_path / "confirmation.jsonl", [{"id": "c-1", "input": "a task nobody saw"}])
    with pytest.raises(ValueError, match="has no digest for its confirmation split in manifest.json; add "
                                         "splits.confirmation.sha256"):
        load_confirmation(source, dataset)  # an unsealed split: anyone could have edited it
    seal(tmp_path, [{"id": "c-1", "input": "a task nobody saw"}])
    assert [c.id for c in load_confirmation(source, dataset)] == ["c-1"]
    assert len(load_dataset_dir(tmp_path, id="d", version="1").holdout) == len(dataset.holdout)  # never loaded
    write_jsonl(tmp_path / "confirmation.jsonl", [{"id": "c-1", "input": "an edited task"}])
    with pytest.raises(ValueError, match="split 'confirmation' does not match its manifest digest"):
        load_confirmation(source, dataset)
    seal(tmp_path, [{"id": "c-1", "input": dataset.feedback[0].input}])
    with pytest.raises(ValueError, match="confirmation case 'c-1' repeats case .* must be unseen data"):
        load_confirmation(source, dataset)


def test_report_confirm_refuses_a_run_that_recorded_no_evaluator_or_no_dataset_in_one_line(tmp_path, capsys):
    from helpers import ImprovingReflector, ToyEvaluator, seed_spec

    from gepa_lab import SearchConfig, optimize, report

    data = make_dir(tmp_path)
    for name, run_config, says in (("no-dataset", {"evaluator": {"_target_": "helpers.ToyEvaluator"}},
                                    "recorded no dataset configuration"),
                                   ("no-evaluator", {"dataset": {"path": str(data)}}, "recorded no evaluator")):
        optimize(seed_spec(), load_dataset_dir(data, id="d", version="1"), ToyEvaluator(), ImprovingReflector(),
                 SearchConfig(max_metric_calls=40), run_dir=tmp_path / name, run_config=run_config)
        assert report.main(["--confirm", str(tmp_path / name)]) == 1
        err = capsys.readouterr().err
        assert says in err and len(err.strip().splitlines()) == 1
