"""Test-only evaluator for sweep tests (named by `evaluator._target_=sweep_plugins.KillingSkillCraft`,
with tests/scripts on PYTHONPATH).

SkillCraft-sim that SIGKILLs its own process once, the way the OOM killer or a lost node would end
a job: in the sweep job numbered $GEPA_TEST_KILL_JOB, at its $GEPA_TEST_KILL_AT-th evaluator call,
unless the file $GEPA_TEST_KILL_MARKER exists (it is created just before the kill). Settings come
from the environment so the job's overrides (and its run dir name) stay those of a normal sweep.
"""

from __future__ import annotations

import os
import signal
from pathlib import Path
from typing import Any

from evaluators.skillcraft import SkillCraftEvaluator


class KillingSkillCraft(SkillCraftEvaluator):
    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._calls = 0

    def evaluate(self, artifact: Any, cases: list[Any], seed: int) -> Any:
        from hydra.core.hydra_config import HydraConfig

        self._calls += 1
        marker = Path(os.environ.get("GEPA_TEST_KILL_MARKER", "/nonexistent/marker"))
        try:
            job = HydraConfig.get().job.num  # a multirun job's number; missing in a single run
        except Exception:
            job = None
        if (str(job) == os.environ.get("GEPA_TEST_KILL_JOB") and marker.parent.is_dir() and not marker.exists()
                and self._calls == int(os.environ.get("GEPA_TEST_KILL_AT", "0"))):
            marker.touch()
            os.kill(os.getpid(), signal.SIGKILL)
        return super().evaluate(artifact, cases, seed)
