"""Each family's dataset manifest, from its committed files (the data is the source).

    python -m evaluators.skillcraft.generate                   # rewrite manifest.json of every family
    python -m evaluators.skillcraft.generate --family weather  # one family
    python -m evaluators.skillcraft.generate --check           # exit 1 if a manifest is stale

A family's dataset (datasets/skillcraft/<family>/) is fixtures.json (the local API),
feedback/validation/holdout.jsonl (10 cases per scale: e1,e2 | e3,m1 | m2,h1), seed_skill.json and
manifest.json (id, version, split digests: docs/design.md §2.2). After editing a split, rewrite the
manifest here; loading the dataset checks the digests. See docs/skillcraft_sim.md §3.7.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from evaluators.skillcraft.family import SPLIT_SCALES, family_names, known_family
from gepa_lab import Case, load_artifact, split_digest

DATASETS = Path(__file__).resolve().parents[2] / "datasets" / "skillcraft"


def manifest_text(folder: Path) -> str:
    """The folder's manifest.json with every split's case count and digest recomputed."""
    manifest = json.loads((folder / "manifest.json").read_text(encoding="utf-8"))
    for split, scales in SPLIT_SCALES.items():
        lines = (folder / f"{split}.jsonl").read_text(encoding="utf-8").splitlines()
        cases = [Case.from_dict(json.loads(line)) for line in lines if line.strip()]
        manifest["splits"][split] = {"file": f"{split}.jsonl", "cases": len(cases), "sha256": split_digest(cases),
                                     "scales": list(scales)}
    load_artifact(folder / manifest["seed_artifact"])  # a broken seed skill fails here, not in a run
    return json.dumps(manifest, indent=2, ensure_ascii=False) + "\n"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--family", type=known_family, help="one family (default: all)")
    ap.add_argument("--dir", type=Path, default=None, help="the dataset folder (default datasets/skillcraft/<family>)")
    ap.add_argument("--check", action="store_true", help="compare with manifest.json, write nothing")
    args = ap.parse_args(argv)
    status = 0
    for family in [args.family] if args.family else family_names():
        folder = args.dir or DATASETS / family
        text = manifest_text(folder)
        if (folder / "manifest.json").read_text(encoding="utf-8") == text:
            print(f"{folder}: manifest up to date")
        elif args.check:
            print(f"{folder}/manifest.json is stale: run python -m evaluators.skillcraft.generate", file=sys.stderr)
            status = 1
        else:
            (folder / "manifest.json").write_text(text, encoding="utf-8")
            print(f"{folder}: manifest rewritten")
    return status


if __name__ == "__main__":
    raise SystemExit(main())
