"""Helpers for `evaluator=dspy_program`:

    python -m evaluators.dspy_program seed <module:attr>          # the program's seed artifact (JSON)
    python -m evaluators.dspy_program freeze-hf <saved dir> <out> --split feedback=train ... --inputs question
"""

from __future__ import annotations

import argparse
import sys


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m evaluators.dspy_program", description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="command", required=True)
    seed = sub.add_parser("seed", help="print the program's instructions as a texts seed artifact")
    seed.add_argument("program", help="<module>:<attr>, a dspy.Module or a factory")
    hf = sub.add_parser("freeze-hf", help="freeze a save_to_disk HF DatasetDict into JSONL splits + manifest")
    hf.add_argument("source")
    hf.add_argument("out")
    hf.add_argument("--split", action="append", default=[], metavar="GEPA=HF",
                    help="feedback=<hf split>, validation=<hf split>, holdout=<hf split>")
    hf.add_argument("--inputs", nargs="+", required=True, help="the program's input columns")
    hf.add_argument("--expected", default="answer", help="the label column (default answer)")
    hf.add_argument("--id-field", default=None)
    hf.add_argument("--metadata", nargs="*", default=[], help="columns passed to the metric, never the reflector")
    hf.add_argument("--id", dest="dataset_id", default=None)
    hf.add_argument("--version", default="v1")
    hf.add_argument("--program", default=None, help="also write seed_texts.json for this program")
    args = ap.parse_args(argv)
    try:
        if args.command == "seed":
            from gepa_lab.lm import load_program, seed_json

            sys.stdout.write(seed_json(load_program(args.program)))
            return 0
        from evaluators.dspy_program.hf import freeze_hf_dataset

        mapping = dict(item.split("=", 1) for item in args.split if "=" in item)
        manifest = freeze_hf_dataset(args.source, args.out, mapping, args.inputs, args.expected, args.id_field,
                                     args.metadata, args.dataset_id, args.version, args.program)
        counts = ", ".join(f"{k} {v['cases']}" for k, v in manifest["splits"].items())
        print(f"froze {args.source} into {args.out}: {counts}")
        return 0
    except (ValueError, OSError) as exc:
        print(f"error: {' '.join(str(exc).split())}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    raise SystemExit(main())
