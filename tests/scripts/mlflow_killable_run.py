"""The toy MLflow-tracked search of `fixtures_mlflow`, SIGKILLing itself at its Nth evaluator call
(no `fail()`, no cleanup: what an OOM kill or a power cut leaves behind).

usage: mlflow_killable_run.py URI RUN_DIR KILL_AT [--resume]
KILL_AT counts evaluator calls of this process (0 = never kill).
"""

from __future__ import annotations

import argparse
import os
import signal
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from fixtures_mlflow import ToyEvaluator, toy_run  # noqa: E402


class KillingEvaluator(ToyEvaluator):
    def __init__(self, kill_at: int):
        super().__init__()
        self.kill_at = kill_at

    def evaluate(self, artifact: Any, cases: Any, seed: int) -> Any:
        if self.kill_at and self.calls + 1 == self.kill_at:
            os.kill(os.getpid(), signal.SIGKILL)
        return super().evaluate(artifact, cases, seed)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("uri")
    parser.add_argument("run_dir")
    parser.add_argument("kill_at", type=int)
    parser.add_argument("--resume", action="store_true")
    args = parser.parse_args()
    tracker = toy_run(args.uri, Path(args.run_dir), experiment="toy-sigkill",
                      evaluator=KillingEvaluator(args.kill_at), resume=args.resume)
    print(tracker.run_id, len(tracker.errors))


if __name__ == "__main__":
    main()
