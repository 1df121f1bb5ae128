"""The toy MLflow-tracked search of `fixtures_mlflow`, SIGKILLing itself at its Nth evaluator call
(no `fail()`, no cleanup: what an OOM kill leaves behind), once its MLflow parent run exists. With
--with-logger it first SIGKILLs its MLflow logging process too: what a power cut leaves behind.

usage: mlflow_killable_run.py URI RUN_DIR KILL_AT [--resume] [--with-logger]
KILL_AT counts evaluator calls of this process (0 = never kill).
"""

from __future__ import annotations

import argparse
import os
import signal
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from fixtures_mlflow import ToyEvaluator, toy_run  # noqa: E402

from gepa_lab.tracking.mlflow_tracker import MlflowTracker  # noqa: E402


class KillingEvaluator(ToyEvaluator):
    def __init__(self, kill_at: int, run_dir: Path, logger: Any):
        super().__init__()
        # private names: the kill switch is not part of the evaluator's fingerprint, so the
        # resumed run (kill_at 0) is the same search
        self._kill_at = kill_at
        self._run_dir = run_dir
        self._logger = logger

    def evaluate(self, artifact: Any, cases: Any, seed: int) -> Any:
        if self._kill_at and self.calls + 1 == self._kill_at:
            deadline = time.monotonic() + 120  # once the parent run exists: a run to resume
            while not (self._run_dir / "mlflow_run.json").is_file() and time.monotonic() < deadline:
                time.sleep(0.1)
            if self._logger is not None and self._logger.process is not None:
                os.kill(self._logger.process.pid, signal.SIGKILL)
            os.kill(os.getpid(), signal.SIGKILL)
        return super().evaluate(artifact, cases, seed)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("uri")
    parser.add_argument("run_dir")
    parser.add_argument("kill_at", type=int)
    parser.add_argument("--resume", action="store_true")
    parser.add_argument("--with-logger", action="store_true")
    args = parser.parse_args()
    tracker = MlflowTracker(uri=args.uri)
    toy_run(args.uri, Path(args.run_dir), experiment="toy-sigkill", tracker=tracker, resume=args.resume,
            evaluator=KillingEvaluator(args.kill_at, Path(args.run_dir), tracker if args.with_logger else None))
    print(tracker.run_id, len(tracker.errors))


if __name__ == "__main__":
    main()
