"""The winner as the program's own saved state (as `program.save` writes it, so `program.load`
restores it), in the run dir and under `best/` in the run's MLflow run: `program.json` when the
winner is promotion-eligible, `program.not_eligible.json` when it is not, so a refused winner is
never mistaken for a shippable one."""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

from gepa_lab import Result, describe

log = logging.getLogger("gepa_lab.dspy_program")


class ProgramStateTracker:
    """A tracker with only the `finish` hook; put it after the MLflow tracker."""

    def __init__(self, evaluator: Any, run_dir: str | Path):
        self.evaluator = evaluator
        self.run_dir = Path(run_dir)
        self.path: Path | None = None

    def finish(self, result: Result) -> None:
        name = "program.json" if result.promotion_eligible else "program.not_eligible.json"
        path = self.path = self.evaluator.save_program(result.best, self.run_dir / name)
        log.info("winner's program state%s: %s (dspy: program.load(path))",
                 "" if result.promotion_eligible else " (NOT ELIGIBLE)", path)
        run_id, uri = result.links.get("mlflow_run_id"), result.links.get("mlflow_tracking_uri")
        if run_id and not uri:
            log.warning("%s not logged to MLflow run %s: its tracking URI holds a password (keep credentials "
                        "in MLFLOW_TRACKING_USERNAME / MLFLOW_TRACKING_PASSWORD)", name, run_id)
        elif run_id:
            try:
                from mlflow import MlflowClient

                MlflowClient(tracking_uri=uri).log_artifact(run_id, str(path), "best")
            except Exception as exc:  # like every MLflow failure after start-up: logged, never fatal
                log.warning("could not log %s to MLflow run %s: %s", name, run_id, describe(exc))
