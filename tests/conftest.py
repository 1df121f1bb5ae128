"""Test-wide environment: offline, no telemetry, no shared caches."""

import os

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
os.environ.setdefault("MLFLOW_DISABLE_TELEMETRY", "true")
os.environ.setdefault("HF_DATASETS_OFFLINE", "1")
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("DSPY_CACHEDIR", os.path.join(os.environ.get("TMPDIR", "/tmp"), "gepa-lab-test-dspy-cache"))
