"""Deterministic generator of SkillCraft-sim dataset directories, for every registered family.

    python -m evaluators.skillcraft.generate                   # writes datasets/skillcraft/<family>/ for all
    python -m evaluators.skillcraft.generate --family weather  # one family
    python -m evaluators.skillcraft.generate --check           # exit 1 if committed files differ

Per family: fixtures.json (the local API), feedback/validation/holdout.jsonl (10 cases per scale:
e1,e2 | e3,m1 | m2,h1), manifest.json (split digests, docs/design.md §2.2) and seed_skill.json.
The family's `build_dataset()` makes the fixtures and cases; this module adds the rest.
See docs/skillcraft_sim.md §3.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from evaluators.skillcraft.family import SPLIT_SCALES
from evaluators.skillcraft.registry import family_names, get_family
from gepa_lab.core.contracts import Case, split_digest

DATASETS = Path(__file__).resolve().parents[2] / "datasets" / "skillcraft"


def render_files(family: str = "recipe") -> dict[str, str]:
    """file name -> exact text of the family's dataset directory."""
    spec = get_family(family)
    built = spec.build_dataset()
    files = {"fixtures.json": built.fixtures_text}
    manifest: dict[str, Any] = {"id": f"skillcraft-sim/{family}", "version": built.version, "splits": {}}
    for split, scales in SPLIT_SCALES.items():
        rows = built.splits[split]
        name = f"{split}.jsonl"
        files[name] = "".join(json.dumps(row, ensure_ascii=False, sort_keys=True) + "\n" for row in rows)
        cases = [Case.from_dict(row) for row in rows]
        manifest["splits"][split] = {"file": name, "cases": len(cases), "sha256": split_digest(cases),
                                     "scales": list(scales)}
    manifest["seed_artifact"] = "seed_skill.json"
    manifest["generator"] = "python -m evaluators.skillcraft.generate"
    manifest["note"] = built.note
    files["manifest.json"] = json.dumps(manifest, indent=2, ensure_ascii=False) + "\n"
    files["seed_skill.json"] = json.dumps(spec.seed_skill, indent=2, ensure_ascii=False) + "\n"
    return files


def stale_files(family: str, out: Path) -> list[str]:
    return [n for n, t in render_files(family).items()
            if not (out / n).is_file() or (out / n).read_text(encoding="utf-8") != t]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--family", choices=family_names(), help="one family (default: all registered)")
    ap.add_argument("--out", type=Path, default=None,
                    help="output directory (default datasets/skillcraft/<family>; needs --family)")
    ap.add_argument("--check", action="store_true", help="compare with the files on disk, write nothing")
    args = ap.parse_args(argv)
    if args.out is not None and args.family is None:
        ap.error("--out needs --family")
    status = 0
    for family in [args.family] if args.family else family_names():
        out = args.out or DATASETS / family
        if args.check:
            stale = stale_files(family, out)
            if stale:
                print(f"stale or missing in {out}: {', '.join(stale)}", file=sys.stderr)
                status = 1
            else:
                print(f"{out}: up to date")
            continue
        out.mkdir(parents=True, exist_ok=True)
        files = render_files(family)
        for name, text in files.items():
            (out / name).write_text(text, encoding="utf-8")
        print(f"wrote {len(files)} files to {out}")
    return status


if __name__ == "__main__":
    raise SystemExit(main())
