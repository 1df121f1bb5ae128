"""A Hugging Face DatasetDict saved with `save_to_disk`, read in place through `dataset.hf`: the
same cases (and digests) as the frozen JSONL layout, one-line errors, and a command-line run whose
result equals the run on the JSONL files it was made from."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from conftest import strip_volatile
from helpers_cli import gepa

from gepa_lab import DatasetSource, HFSplits, load_dataset, load_hf_saved
from gepa_lab.core.errors import ConfigError

RECIPE = Path(__file__).resolve().parents[1] / "datasets" / "skillcraft" / "recipe"
SPLITS = {"feedback": "feedback", "validation": "validation", "holdout": "holdout"}
METADATA = ["family", "generator", "scale", "task"]


def save_recipe(target: Path) -> None:
    """The recipe JSONL splits as a DatasetDict: one column per case field, metadata flattened."""
    import datasets

    parts = {}
    for split in SPLITS:
        rows = [json.loads(line) for line in (RECIPE / f"{split}.jsonl").read_text().splitlines() if line.strip()]
        columns = {"id": [r["id"] for r in rows], "input": [r["input"] for r in rows],
                   "expected": [r["expected"] for r in rows], "critical": [bool(r.get("critical")) for r in rows]}
        columns.update({k: [r["metadata"][k] for r in rows] for k in METADATA})
        parts[split] = datasets.Dataset.from_dict(columns)
    datasets.DatasetDict(parts).save_to_disk(str(target))


def recipe_hf() -> HFSplits:
    return HFSplits(splits=dict(SPLITS), inputs=["input"], expected="expected", id_field="id", metadata=METADATA,
                    critical="critical")


@pytest.fixture(scope="module")
def saved(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("hf") / "recipe"
    save_recipe(path)
    return path


def test_the_saved_dataset_reads_as_the_same_cases(saved):
    frozen, _ = load_dataset(DatasetSource(path=str(RECIPE)))
    in_place = load_hf_saved(saved, recipe_hf(), id="skillcraft-sim/recipe", version=frozen.version)
    assert in_place.digests() == frozen.digests()
    assert in_place.holdout == frozen.holdout and any(c.critical for c in in_place.holdout)


def test_defaults_name_the_dataset_after_its_folder_and_number_the_rows(saved):
    dataset = load_hf_saved(saved, HFSplits(splits={"feedback": "feedback", "validation": "validation"},
                                            inputs=["input"], expected=None))
    assert (dataset.id, dataset.version) == ("recipe", "hf") and dataset.holdout == ()
    assert [c.id for c in dataset.feedback[:2]] == ["feedback-00000", "feedback-00001"]


def test_bad_mappings_and_folders_are_one_line_errors(saved, tmp_path):
    with pytest.raises(ConfigError, match="maps feedback and validation"):
        HFSplits(splits={"feedback": "feedback"}, inputs=["input"])
    with pytest.raises(ConfigError, match="must name at least one column"):
        HFSplits(splits=dict(SPLITS), inputs=[])
    with pytest.raises(ValueError, match=r"has no split 'test' \(dataset.hf.splits.holdout\); it has \['feedback'"):
        load_hf_saved(saved, HFSplits(splits={**SPLITS, "holdout": "test"}, inputs=["input"], expected="expected"))
    with pytest.raises(ValueError, match=r"HF split 'feedback' has no column\(s\) \['question', 'answer'\]; columns: \['critical'"):
        load_hf_saved(saved, HFSplits(splits=dict(SPLITS), inputs=["question"]))
    with pytest.raises(ValueError, match="cannot read .* as a saved Hugging Face dataset"):
        load_hf_saved(RECIPE, recipe_hf())
    with pytest.raises(FileNotFoundError, match="dataset directory not found"):
        load_hf_saved(tmp_path / "nowhere", recipe_hf())
    with pytest.raises(ConfigError, match="unknown config key 'dataset.hf.split'; dataset.hf takes: critical"):
        DatasetSource(path=str(saved), hf={"split": {}})


def test_a_run_on_the_saved_dataset_equals_the_run_on_its_jsonl_files(saved, tmp_path):
    def run(*overrides: str) -> dict:
        done = gepa("experiment=recipe", "tracking=none", "progress=off", "search.max_metric_calls=300", *overrides,
                    cwd=tmp_path)
        assert done.returncode == 0, done.stderr[-2000:]
        record = Path(next(x for x in done.stdout.splitlines() if x.strip().startswith("record")).split(None, 1)[1])
        return json.loads((record / "result.json").read_text())

    mapping = ("{splits:{feedback:feedback,validation:validation,holdout:holdout},inputs:[input],"
               "expected:expected,id_field:id,critical:critical,metadata:[family,generator,scale,task]}")
    version = json.loads((RECIPE / "manifest.json").read_text())["version"]
    in_place = run(f"dataset.path={saved}", f"dataset.hf={mapping}", "dataset.id=skillcraft-sim/recipe",
                   f"dataset.version={version}", f"dataset.seed_artifact={RECIPE / 'seed_skill.json'}")
    frozen = run()
    assert in_place["dataset"] == frozen["dataset"]
    assert strip_volatile(in_place) == strip_volatile(frozen)
