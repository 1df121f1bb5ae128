"""A run that SIGKILLs itself before its Nth paid evaluation (for the resume tests).

usage: killable_run.py RUN_DIR LOG_PATH KILL_BEFORE [--resume] [--workers N] [--kill-in-finish]
                       [--submit STORE_FILE] [--kill-in-submit] [--parent TARGET] [--validation-repeats R]
KILL_BEFORE counts evaluator calls made by this process (0 = never kill). --submit runs on a dataset
large enough to submit and hands the winner to a file-backed store.
Every paid evaluation is appended to LOG_PATH as one JSON line (artifact id, case id, seed).
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from helpers_long import FileSubmitter, HashEvaluator, VaryingReflector, long_dataset, long_seed  # noqa: E402

from gepa_lab import (  # noqa: E402
    EvaluationSettings,  # noqa: E402
    PromotionPolicy,
    SearchConfig,
    optimize,
)
from gepa_lab.core.artifacts import artifact_id  # noqa: E402
from gepa_lab.core.settings import GatePolicy  # noqa: E402


class KillingEvaluator(HashEvaluator):
    def __init__(self, log_path: Path, kill_before: int):
        super().__init__()
        self.log_path = log_path
        self.kill_before = kill_before
        self.count = 0

    def evaluate(self, artifact, cases, seed):
        self.count += 1
        if self.kill_before and self.count == self.kill_before:
            os.kill(os.getpid(), signal.SIGKILL)
        results = super().evaluate(artifact, cases, seed)
        with open(self.log_path, "a", encoding="utf-8") as fh:
            for case in cases:
                fh.write(json.dumps([artifact_id(artifact), case.id, seed]) + "\n")
        return results


class KillingSubmitter(FileSubmitter):
    """SIGKILLs the process as the store receives the revision (after it stored it)."""

    def submit(self, request):
        revision = super().submit(request)
        os.kill(os.getpid(), signal.SIGKILL)
        return revision


class KillInFinish:
    """A tracker that SIGKILLs the process while trackers finish (after result.json exists)."""

    def finish(self, result) -> None:
        os.kill(os.getpid(), signal.SIGKILL)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("run_dir")
    parser.add_argument("log_path")
    parser.add_argument("kill_before", type=int)
    parser.add_argument("--resume", action="store_true")
    parser.add_argument("--workers", type=int, default=1)
    parser.add_argument("--kill-in-finish", action="store_true")
    parser.add_argument("--submit", default=None)
    parser.add_argument("--kill-in-submit", action="store_true")
    parser.add_argument("--parent", default=None, help="a parent selector's `_target_` (default: Pareto)")
    parser.add_argument("--validation-repeats", type=int, default=1)
    args = parser.parse_args()
    submitter = None
    if args.submit:
        submitter = (KillingSubmitter if args.kill_in_submit else FileSubmitter)(args.submit)
    result = optimize(
        long_seed(),
        long_dataset(10, 10, 10) if args.submit else long_dataset(),
        KillingEvaluator(Path(args.log_path), args.kill_before),
        VaryingReflector(),
        SearchConfig(max_iterations=8, minibatch_size=2, random_seed=5, validation_repeats=args.validation_repeats,
                     **({"parent": {"_target_": args.parent}} if args.parent else {})),
        run_dir=args.run_dir,
        evaluation=EvaluationSettings(workers=args.workers),
        resume=args.resume,
        trackers=[KillInFinish()] if args.kill_in_finish else [],
        submit=submitter is not None,
        submitter=submitter,
        # A small holdout: the mean delta decides (the interval and the gates are tested elsewhere).
        promotion=PromotionPolicy(require_interval=False, gates=GatePolicy(ceilings={})) if args.submit else None,
    )
    print(result.best_id)


if __name__ == "__main__":
    main()
