"""Loading and freezing datasets: JSONL / Parquet split files through Hugging Face `datasets`,
checked against the manifest's content digests (our own sha256, never HF's path-based
fingerprint), and the seed artifact file."""

from __future__ import annotations

import json
import os
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from gepa_lab.core.artifacts import Artifact, artifact_from_dict
from gepa_lab.core.contracts import SPLITS, Case, Dataset, split_digest

PROJECT_ROOT = Path(__file__).resolve().parent.parent
# A wheel install carries the repo's datasets/ as gepa_lab/bundled/.
BUNDLED_DATASETS = Path(__file__).resolve().parent / "bundled"
_FORMATS = {".jsonl": "json", ".json": "json", ".parquet": "parquet"}


def resolve_path(path: str | Path, base: Path | None = None) -> Path:
    """Absolute as given; relative to `base`, then the working directory, then the project root,
    then (for `datasets/...`) the copy bundled in an installed wheel."""
    p = Path(path).expanduser()
    if p.is_absolute():
        return p
    candidates = [root / p for root in ([base] if base else []) + [Path.cwd(), PROJECT_ROOT]]
    if p.parts and p.parts[0] == "datasets":
        candidates.append(BUNDLED_DATASETS.joinpath(*p.parts[1:]))
    for candidate in candidates:
        if candidate.exists():
            return candidate
    return (base or Path.cwd()) / p


def load_split(path: Path) -> list[Case]:
    """Rows → Cases via HF `datasets` (JSON lines or Parquet)."""
    fmt = _FORMATS.get(path.suffix.lower())
    if fmt is None:
        raise ValueError(f"unsupported split file {path.name}: use .jsonl, .json or .parquet")
    if not path.is_file():
        raise FileNotFoundError(f"dataset split file not found: {path}")
    if path.stat().st_size == 0:
        return []
    lines = _json_lines(path) if fmt == "json" and path.suffix.lower() == ".jsonl" else None
    os.environ.setdefault("HF_DATASETS_OFFLINE", "1")
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    import datasets

    datasets.disable_progress_bars()
    datasets.logging.set_verbosity_error()
    # A throwaway cache: HF's cache key is path+mtime, useless for freezing, and would litter ~.
    with tempfile.TemporaryDirectory(prefix="gepa-lab-hf-") as cache:
        try:
            table = datasets.load_dataset(fmt, data_files=str(path), split="train", cache_dir=cache)
        except Exception as exc:  # HF wraps parse errors in several exception types
            raise ValueError(f"cannot read dataset split {path}: {exc.__class__.__name__}: {exc}") from exc
        rows: list[dict[str, Any]] = table.to_list()
    cases = []
    for n, row in enumerate(rows, start=1):
        # HF gives every row every column (None where a line lacks the key): drop those Nones so
        # a missing field is reported as missing, and an unknown field on the line that has it.
        present = {k: v for k, v in row.items() if v is not None}
        try:
            cases.append(Case.from_dict(present))
        except ValueError as exc:
            where = f"line {lines[n - 1]}" if lines is not None else f"row {n}"
            raise ValueError(f"{path.name} {where}: {exc}") from exc
    return cases


def _json_lines(path: Path) -> list[int]:
    """Line numbers of the JSONL file's records; a line that is not a JSON object is an error that
    names it (HF's own parser reports 0-based rows, twice)."""
    numbers = []
    with open(path, encoding="utf-8") as fh:
        for number, line in enumerate(fh, start=1):
            if not line.strip():
                continue
            try:
                value = json.loads(line)
            except json.JSONDecodeError as exc:
                raise ValueError(f"{path.name} line {number}: not valid JSON ({exc.msg} at column {exc.colno}); "
                                 "fix or remove the line") from None
            if not isinstance(value, dict):
                raise ValueError(f"{path.name} line {number}: expected a JSON object with 'id' and 'input', "
                                 f"got {type(value).__name__}")
            numbers.append(number)
    return numbers


def load_dataset_dir(
    path: str | Path,
    *,
    id: str | None = None,
    version: str | None = None,
    files: dict[str, str | None] | None = None,
    manifest: str | None = "manifest.json",
) -> Dataset:
    """Load the split files of a dataset directory and verify the manifest digests if present."""
    root = resolve_path(path)
    if not root.is_dir():
        raise FileNotFoundError(f"dataset directory not found: {path} (set dataset.path to a folder of split files)")
    meta: dict[str, Any] = {}
    manifest_path = root / manifest if manifest else None
    if manifest_path is not None and manifest_path.is_file():
        meta = json.loads(manifest_path.read_text(encoding="utf-8"))
    names = {**{s: f"{s}.jsonl" for s in SPLITS}, **(files or {})}
    splits: dict[str, list[Case]] = {}
    for split in SPLITS:
        name = names[split]
        splits[split] = load_split(root / name) if name else []
        expected = meta.get("splits", {}).get(split, {}).get("sha256") if name else None
        actual = split_digest(splits[split])
        if expected and expected != actual:
            raise ValueError(
                f"dataset split {split!r} does not match its manifest digest ({expected[:12]}… vs files "
                f"{actual[:12]}…): the frozen data changed; restore the files or regenerate the manifest"
            )
    for key, value in (("id", id or meta.get("id")), ("version", version or meta.get("version"))):
        if not value:
            where = "its manifest.json has no" if meta else "it has no manifest.json with"
            raise ValueError(f"dataset {root} has no {key}: {where} \"{key}\"; add it there or set dataset.{key}")
    return Dataset(
        id=id or meta.get("id", ""),
        version=version or meta.get("version", ""),
        feedback=splits["feedback"],
        validation=splits["validation"],
        holdout=splits["holdout"],
    )


@dataclass
class DatasetSource:
    """Where a frozen dataset and its seed artifact live (also the `dataset` config group)."""

    path: str  # folder with the split files (relative: cwd, then the checkout, then the wheel's copy)
    id: str | None = None  # None: take it from the manifest
    version: str | None = None
    feedback: str = "feedback.jsonl"
    validation: str = "validation.jsonl"
    holdout: str | None = "holdout.jsonl"  # None: run without a holdout split
    manifest: str | None = "manifest.json"  # digests to verify; None: skip
    seed_artifact: str = "seed_skill.json"  # relative to `path`


def load_dataset(source: DatasetSource) -> tuple[Dataset, Artifact]:
    """The frozen dataset (digests checked against the manifest) and the seed artifact."""
    dataset = load_dataset_dir(source.path, id=source.id, version=source.version, manifest=source.manifest,
                               files={"feedback": source.feedback, "validation": source.validation,
                                      "holdout": source.holdout})
    return dataset, load_artifact(source.seed_artifact, base=resolve_path(source.path))


def load_artifact(path: str | Path, base: Path | None = None) -> Artifact:
    file = resolve_path(path, base)
    if not file.is_file():
        raise FileNotFoundError(f"seed artifact file not found: {file}")
    try:
        data = json.loads(file.read_text(encoding="utf-8"))
    except json.JSONDecodeError as exc:
        raise ValueError(f"seed artifact {file.name} is not valid JSON: {exc}") from exc
    if not isinstance(data, dict):
        raise ValueError(f"seed artifact {file.name} must be a JSON object")
    return artifact_from_dict(data)
