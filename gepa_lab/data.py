"""Loading and freezing datasets: JSONL / Parquet split files through Hugging Face `datasets`,
checked against the manifest's content digests (our own sha256, never HF's path-based
fingerprint), or a `DatasetDict` saved with `save_to_disk` read in place through a split mapping;
and the seed artifact file."""

from __future__ import annotations

import json
import os
import tempfile
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from gepa_lab.core.artifacts import Artifact, artifact_from_dict
from gepa_lab.core.contracts import SPLITS, Case, Dataset, canonical_json, content_key, split_digest
from gepa_lab.core.errors import ConfigError
from gepa_lab.core.settings import from_mapping

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


def _hf() -> Any:
    """Hugging Face `datasets`, offline and quiet."""
    os.environ.setdefault("HF_DATASETS_OFFLINE", "1")
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    import datasets

    datasets.disable_progress_bars()
    datasets.logging.set_verbosity_error()
    return datasets


def load_split(path: Path) -> list[Case]:
    """Rows → Cases via HF `datasets` (JSON lines or Parquet)."""
    fmt = _FORMATS.get(path.suffix.lower())
    if fmt is None:
        raise ValueError(f"unsupported split file {path.name}: use .jsonl, .json or .parquet")
    if not path.is_file():
        raise FileNotFoundError(f"dataset split file not found: {path}")
    lines = _json_lines(path) if fmt == "json" and path.suffix.lower() == ".jsonl" else None
    if path.stat().st_size == 0 or lines == []:  # no record (blank lines at most): no cases
        return []
    datasets = _hf()
    # A throwaway cache: HF's cache key is path+mtime, useless for freezing, and would litter ~.
    with tempfile.TemporaryDirectory(prefix="gepa-lab-hf-") as cache:
        try:
            table = datasets.load_dataset(fmt, data_files=str(path), split="train", cache_dir=cache)
        except Exception as exc:  # HF wraps parse errors in several exception types
            raise ValueError(f"cannot read dataset split {path}: {exc.__class__.__name__}: {exc}") from exc
        rows: list[dict[str, Any]] = table.to_list()
    # HF gives every row every column (None where a line lacks the key): drop those Nones so a
    # missing field is reported as missing, and an unknown field on the line that has it.
    return _cases([{k: v for k, v in row.items() if v is not None} for row in rows],
                  lambda n: f"{path.name} line {lines[n - 1]}" if lines is not None else f"{path.name} row {n}")


def _cases(rows: list[dict[str, Any]], where: Callable[[int], str]) -> list[Case]:
    """Rows as cases; a bad row is a ValueError naming `where(row number)`."""
    cases = []
    for n, row in enumerate(rows, start=1):
        try:
            cases.append(Case.from_dict(row))
        except ValueError as exc:
            raise ValueError(f"{where(n)}: {exc}") from exc
    return cases


def _json_lines(path: Path) -> list[int]:
    """Line numbers of the JSONL file's records; a line that is not a JSON object is an error that
    names it (HF's own parser reports 0-based rows, twice)."""
    numbers = []
    with open(path, "rb") as fh:
        for number, raw in enumerate(fh, start=1):
            try:
                line = raw.decode("utf-8")
            except UnicodeDecodeError as exc:
                raise ValueError(f"{path.name} line {number}: not UTF-8 text (byte {raw[exc.start]:#04x} at column "
                                 f"{exc.start + 1}); save the file as UTF-8") from None
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


def _manifest(root: Path, name: str | None) -> dict[str, Any]:
    """The dataset's manifest.json (id, version, split digests), or {} when there is none."""
    path = root / name if name else None
    if path is None or not path.is_file():
        return {}
    try:
        meta = json.loads(path.read_text(encoding="utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        where = f" ({exc.msg} at line {exc.lineno})" if isinstance(exc, json.JSONDecodeError) else ""
        raise ValueError(f"dataset manifest {path} is damaged{where}; restore it (or delete it to load the split "
                         "files unchecked)") from None
    splits = meta.get("splits", {}) if isinstance(meta, dict) else None
    if not isinstance(splits, dict) or not all(isinstance(v, dict) for v in splits.values()):
        raise ValueError(f"dataset manifest {path} has the wrong shape: expected an object whose \"splits\" maps "
                         "each split name to {\"sha256\": ...}; restore it")
    return meta


def _check_split(meta: dict[str, Any], split: str, cases: list[Case], where: Any) -> None:
    """A split that is configured holds cases (an empty holdout would quietly make every run
    ineligible after paying for the search), and matches its manifest digest."""
    if not cases:
        leave_out = " (or set dataset.holdout=null to run without one)" if split == "holdout" else ""
        raise ValueError(f"dataset split {split!r} ({where}) has no cases; add cases{leave_out}")
    expected, actual = meta.get("splits", {}).get(split, {}).get("sha256"), split_digest(cases)
    if expected and expected != actual:
        raise ValueError(f"dataset split {split!r} does not match its manifest digest ({expected[:12]}… vs files "
                         f"{actual[:12]}…): the frozen data changed; restore the files or regenerate the manifest")


def load_dataset_dir(path: str | Path, *, id: str | None = None, version: str | None = None,
                     files: dict[str, str | None] | None = None, manifest: str | None = "manifest.json") -> Dataset:
    """Load the split files of a dataset directory and verify the manifest digests if present."""
    root = resolve_path(path)
    if not root.is_dir():
        raise FileNotFoundError(f"dataset directory not found: {path} (set dataset.path to a folder of split files)")
    meta = _manifest(root, manifest)
    names = {**{s: f"{s}.jsonl" for s in SPLITS}, **(files or {})}
    splits = {split: load_split(root / name) if (name := names[split]) else [] for split in SPLITS}
    for split in (split for split in SPLITS if names[split]):  # a split left out has nothing to verify
        _check_split(meta, split, splits[split], root / str(names[split]))
    for key, value in (("id", id or meta.get("id")), ("version", version or meta.get("version"))):
        if not value:
            why = ("dataset.manifest is null, so no manifest is read; set" if manifest is None else
                   f"its {manifest} has no \"{key}\"; add it there or set" if meta else
                   f"it has no {manifest}; add one with \"{key}\" or set")
            raise ValueError(f"dataset {root} has no {key}: {why} dataset.{key}")
    return Dataset(id or meta.get("id", ""), version or meta.get("version", ""), splits["feedback"],
                   splits["validation"], splits["holdout"])


@dataclass
class HFSplits:
    """A Hugging Face `DatasetDict` saved with `save_to_disk`, read in place (`dataset.path` is its
    folder): which HF split is which gepa split, and which columns make a case."""

    splits: dict[str, str] = field(default_factory=dict)  # feedback, validation[, holdout] -> HF split name
    inputs: list[str] = field(default_factory=list)  # one column: the input text; several: a JSON object
    expected: str | None = "answer"  # the label column (a non-text value becomes canonical JSON)
    id_field: str | None = None  # None: "<HF split>-<row number>"
    metadata: list[str] = field(default_factory=list)  # columns the evaluator may read, never the reflector
    critical: str | None = None  # a boolean column marking critical cases (promotion rule 4)

    def __post_init__(self) -> None:
        unknown = sorted(set(self.splits) - set(SPLITS))
        if unknown or "feedback" not in self.splits or "validation" not in self.splits:
            raise ConfigError(f"dataset.hf.splits maps feedback and validation (optionally holdout) to HF split "
                              f"names, got {dict(self.splits)}")
        if not self.inputs or not all(isinstance(c, str) and c for c in self.inputs):
            raise ConfigError("dataset.hf.inputs must name at least one column (e.g. [question])")


def hf_rows(table: Any, split: str, inputs: Sequence[str], expected: str | None, id_field: str | None,
            metadata: Sequence[str], critical: str | None = None) -> list[dict[str, Any]]:
    """One HF split's rows as case rows (`Case.from_dict` input)."""
    def text(value: Any) -> str:
        return value if isinstance(value, str) else canonical_json(value)

    columns = set(table.column_names)
    wanted = [*inputs, *(c for c in (expected, id_field, critical) if c), *metadata]
    missing = [c for c in wanted if c not in columns]
    if missing:
        raise ValueError(f"HF split {split!r} has no column(s) {missing}; columns: {sorted(columns)}")
    rows = []
    for n, record in enumerate(table.to_list()):
        row: dict[str, Any] = {"id": text(record[id_field]) if id_field else f"{split}-{n:05d}",
                               "input": text(record[inputs[0]]) if len(inputs) == 1 else {k: record[k] for k in inputs}}
        if expected:
            row["expected"] = text(record[expected])
        meta = {k: text(record[k]) for k in metadata if record[k] is not None}
        if meta:
            row["metadata"] = meta
        if critical and record[critical] is not None:
            row["critical"] = record[critical]
        rows.append(row)
    return rows


def load_hf_saved(path: str | Path, hf: HFSplits, *, id: str | None = None, version: str | None = None,
                  manifest: str | None = "manifest.json") -> Dataset:
    """The splits of a saved `DatasetDict`, mapped by `hf.splits`; a manifest beside them (as
    `freeze-hf` writes one) is verified when present. The digests are computed from the cases
    either way, so the run records and resume checks exactly what was read."""
    root = resolve_path(path)
    if not root.is_dir():
        raise FileNotFoundError(f"dataset directory not found: {path} (set dataset.path to the folder "
                                "DatasetDict.save_to_disk wrote)")
    datasets = _hf()
    try:
        saved = datasets.load_from_disk(str(root))
    except Exception as exc:  # HF raises FileNotFoundError / ValueError variants for a wrong folder
        raise ValueError(f"cannot read {root} as a saved Hugging Face dataset: "
                         f"{exc.__class__.__name__}: {exc}") from exc
    if not isinstance(saved, datasets.DatasetDict):
        raise ValueError(f"{root} holds one Dataset, not a DatasetDict with named splits; save a DatasetDict")
    meta = _manifest(root, manifest)
    splits: dict[str, list[Case]] = {s: [] for s in SPLITS}
    for split, name in hf.splits.items():
        if name not in saved:
            raise ValueError(f"{root} has no split {name!r} (dataset.hf.splits.{split}); it has {sorted(saved)}")
        rows = hf_rows(saved[name], name, hf.inputs, hf.expected, hf.id_field, hf.metadata, hf.critical)
        splits[split] = _cases(rows, lambda n: f"HF split {name!r} row {n}")  # noqa: B023 (called at once)
        _check_split(meta, split, splits[split], f"HF split {name!r}")
    return Dataset(id=id or meta.get("id") or root.name, version=version or meta.get("version") or "hf",
                   feedback=splits["feedback"], validation=splits["validation"], holdout=splits["holdout"])


def frozen_files(rows: Mapping[str, Sequence[dict[str, Any]]], id: str, version: str, **extra: Any) -> dict[str, str]:
    """A frozen dataset's files (name -> text): one JSONL file per split of case rows, and manifest.json
    with each split's digest (what `load_dataset_dir` verifies), then `extra`."""
    files = {f"{split}.jsonl": "".join(json.dumps(row, ensure_ascii=False, sort_keys=True) + "\n" for row in cases)
             for split, cases in rows.items()}
    splits = {split: {"file": f"{split}.jsonl", "cases": len(cases),
                      "sha256": split_digest([Case.from_dict(row) for row in cases])} for split, cases in rows.items()}
    manifest = {"id": id, "version": version, "splits": splits, **extra}
    return {**files, "manifest.json": json.dumps(manifest, indent=2, ensure_ascii=False) + "\n"}


@dataclass
class DatasetSource:
    """Where a frozen dataset and its seed artifact live (also the `dataset` config group)."""

    path: str  # folder with the split files (relative: cwd, then the checkout, then the wheel's copy)
    id: str | None = None  # None: take it from the manifest
    version: str | None = None
    feedback: str = "feedback.jsonl"
    validation: str = "validation.jsonl"
    holdout: str | None = "holdout.jsonl"  # None: run without a holdout split
    # Sealed: no run reads it; `report --confirm` opens it once per winner, its digest required (docs/research.md).
    confirmation: str | None = "confirmation.jsonl"
    manifest: str | None = "manifest.json"  # digests to verify; None: skip
    # Relative to `path`, then the working directory; null: the evaluator's own seed (a DSPy program's
    # current instructions).
    seed_artifact: str | None = "seed_skill.json"
    # Set: `path` is a saved HF DatasetDict, read through this mapping (HFSplits or its fields as a
    # mapping; typed Any because OmegaConf cannot merge a mapping into an Optional dataclass node).
    hf: Any = None

    def __post_init__(self) -> None:
        if self.hf is None or isinstance(self.hf, HFSplits):
            return
        if not isinstance(self.hf, Mapping):
            raise ConfigError(f"dataset.hf must be a mapping of HFSplits fields, got {self.hf!r}")
        self.hf = from_mapping(HFSplits, self.hf, "dataset.hf")


def load_dataset(source: DatasetSource) -> tuple[Dataset, Artifact | None]:
    """The frozen dataset (digests checked against the manifest) and the seed artifact (None when
    `seed_artifact` is unset)."""
    given = {"id": source.id, "version": source.version, "manifest": source.manifest}
    dataset = (load_hf_saved(source.path, source.hf, **given) if source.hf is not None
               else load_dataset_dir(source.path, files={s: getattr(source, s) for s in SPLITS}, **given))
    return dataset, (None if source.seed_artifact is None
                     else load_artifact(source.seed_artifact, base=resolve_path(source.path)))


def load_confirmation(source: DatasetSource, dataset: Dataset) -> list[Case]:
    """The dataset's sealed confirmation split, checked against the manifest's digest and against
    every case the run could see."""
    root = resolve_path(source.path)
    path = root / source.confirmation if source.confirmation and source.hf is None else None
    if path is None or not path.is_file():
        raise FileNotFoundError(f"dataset {root} has no confirmation split ({source.confirmation or 'none set'}); add "
                                "a confirmation.jsonl of unseen cases (and its digest to the manifest) to confirm a "
                                "study's winner")
    meta = _manifest(root, source.manifest)
    if not meta.get("splits", {}).get("confirmation", {}).get("sha256"):
        raise ValueError(f"dataset {root} has no digest for its confirmation split in {source.manifest or 'a manifest'}"
                         f"; add splits.confirmation.sha256 (gepa_lab.core.contracts.split_digest of its cases) "
                         "so that an edited split is refused")
    cases = load_split(path)
    _check_split(meta, "confirmation", cases, path)
    seen = {content_key(c): c.id for name in SPLITS for c in dataset.split(name)}
    ids = {c.id for name in SPLITS for c in dataset.split(name)}
    for case in cases:
        if content_key(case) in seen or case.id in ids:
            raise ValueError(f"confirmation case {case.id!r} repeats case {seen.get(content_key(case), case.id)!r} of "
                             "the run's splits; a confirmation split must be unseen data")
    return cases


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
