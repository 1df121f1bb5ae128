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

from gepa_lab import SPLITS, Case, hf_rows, split_digest

SEED_FILE = "seed_texts.json"


def freeze_hf_dataset(source: str | Path, out: str | Path, splits: Mapping[str, str], inputs: Sequence[str],
                      expected: str | None = "answer", id_field: str | None = None, metadata: Sequence[str] = (),
                      dataset_id: str | None = None, version: str = "v1", program: str | None = None) -> dict[str, Any]:
    """Write the frozen dataset to `out`; returns the manifest. `splits` maps gepa splits to HF
    split names, e.g. {"feedback": "train", "validation": "validation", "holdout": "test"}."""
    import datasets

    unknown = sorted(set(splits) - set(SPLITS))
    if unknown or "feedback" not in splits or "validation" not in splits:
        raise ValueError(f"split mapping needs feedback and validation (optionally holdout), got {dict(splits)}")
    saved = datasets.load_from_disk(str(source))
    if not isinstance(saved, datasets.DatasetDict):
        raise ValueError(f"{source} holds one Dataset; save a DatasetDict with named splits")
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    manifest: dict[str, Any] = {"id": dataset_id or Path(source).name, "version": version, "splits": {},
                                "source": {"hf_saved_dataset": str(source), "splits": dict(splits)}}
    for split in SPLITS:
        if split not in splits:
            continue
        hf_split = splits[split]
        if hf_split not in saved:
            raise ValueError(f"{source} has no split {hf_split!r}; it has {sorted(saved)}")
        rows = hf_rows(saved[hf_split], hf_split, inputs, expected, id_field, metadata)
        name = f"{split}.jsonl"
        (out / name).write_text("".join(json.dumps(r, ensure_ascii=False, sort_keys=True) + "\n" for r in rows),
                                encoding="utf-8")
        cases = [Case.from_dict(r) for r in rows]
        manifest["splits"][split] = {"file": name, "cases": len(cases), "sha256": split_digest(cases)}
    if "holdout" not in splits:
        (out / "holdout.jsonl").write_text("", encoding="utf-8")
    if program is not None:
        from evaluators.dspy_program.loading import load_program
        from evaluators.dspy_program.texts import seed_json

        (out / SEED_FILE).write_text(seed_json(load_program(program)), encoding="utf-8")
        manifest["seed_artifact"] = SEED_FILE
    (out / "manifest.json").write_text(json.dumps(manifest, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    return manifest
