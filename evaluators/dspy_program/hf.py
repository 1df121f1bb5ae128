"""Freeze a Hugging Face dataset saved to disk (`DatasetDict.save_to_disk`) into gepa-lab's
dataset layout: one JSONL file per split (feedback / validation / holdout, each mapped from an HF
split), `manifest.json` with the content digests the loader verifies, and optionally the seed
artifact of a program. Freezing once keeps every later run on the same bytes; to read a saved
dataset in place instead, set `dataset.hf` (gepa_lab/data.py `HFSplits`).

    python -m evaluators.dspy_program freeze-hf <saved dir> <out dir> \\
        --split feedback=train --split validation=validation --split holdout=test \\
        --inputs question --expected answer [--id-field id] [--metadata level ...] [--program mod:attr]
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from gepa_lab import SPLITS, HFSplits, frozen_files, load_hf_saved

SEED_FILE = "seed_texts.json"


def freeze_hf_dataset(source: str | Path, out: str | Path, splits: Mapping[str, str], inputs: Sequence[str],
                      expected: str | None = "answer", id_field: str | None = None, metadata: Sequence[str] = (),
                      dataset_id: str | None = None, version: str = "v1", program: str | None = None) -> dict[str, Any]:
    """Write the frozen dataset to `out`; returns the manifest. `splits` maps gepa splits to HF
    split names, e.g. {"feedback": "train", "validation": "validation", "holdout": "test"}."""
    # Read exactly as `dataset.hf` reads it in place, so both layouts give the same cases.
    hf = HFSplits(dict(splits), list(inputs), expected, id_field, list(metadata))
    dataset = load_hf_saved(source, hf, id=dataset_id, version=version, manifest=None)
    extra: dict[str, Any] = {"source": {"hf_saved_dataset": str(source), "splits": dict(splits)}}
    seed: dict[str, str] = {}
    if program is not None:
        from gepa_lab.lm import load_program, seed_json

        extra["seed_artifact"] = SEED_FILE
        seed[SEED_FILE] = seed_json(load_program(program))
    rows = {split: [case.to_dict() for case in dataset.split(split)] for split in SPLITS if split in splits}
    files = {"holdout.jsonl": "", **frozen_files(rows, dataset.id, dataset.version, **extra), **seed}
    Path(out).mkdir(parents=True, exist_ok=True)
    for name, text in files.items():
        (Path(out) / name).write_text(text, encoding="utf-8")
    return dict(json.loads(files["manifest.json"]))
