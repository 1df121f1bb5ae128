"""What MLflow accepts, built from gepa-lab values: keys, params (whole, never cut), tags (cut
visibly), readable metric values, per-batch metrics and tables, readable artifact text and diffs.
Pure functions (no MLflow import); `mlflow_tracker.py` builds the payloads, `mlflow_worker.py`
logs them."""

from __future__ import annotations

import difflib
import json
import math
import re
from collections.abc import Mapping
from typing import Any

from gepa_lab.core.artifacts import Artifact
from gepa_lab.core.events import ScoredBatch

# MLflow 3.17 limits (mlflow/utils/validation.py), spelled out so this module imports without mlflow.
PARAM_MAX, TAG_MAX, KEY_MAX, DIGEST_MAX = 6000, 8000, 250, 36
_BAD_KEY_CHARS = re.compile(r"[^A-Za-z0-9_\-. /]")


def safe_key(*parts: str) -> str:
    """A metric / tag key MLflow accepts."""
    return _BAD_KEY_CHARS.sub("_", ".".join(parts))[:KEY_MAX]


def flatten_config(config: dict[str, Any], prefix: str = "") -> dict[str, str]:
    """Dotted keys -> text values; lists stay one JSON value (a list is one setting)."""
    out: dict[str, str] = {}
    for name, value in config.items():
        full = f"{prefix}{_BAD_KEY_CHARS.sub('_', str(name))}"
        if isinstance(value, dict) and value:
            out.update(flatten_config(value, full + "."))
        elif isinstance(value, (bool, type(None), list, tuple, dict)):
            out[full] = json.dumps(value, ensure_ascii=False, sort_keys=True, default=str)
        else:
            out[full] = str(value)
    return out


def split_params(flat: dict[str, str]) -> tuple[dict[str, str], dict[str, str]]:
    """(params, long values). A value MLflow cannot store whole is not cut: the param says where
    the full value is, and the full value goes to the artifact `config/long_params.json`."""
    params, long_values = {}, {}
    for name, value in flat.items():
        if len(value) > PARAM_MAX or len(name) > KEY_MAX:
            long_values[name] = value
            if len(name) <= KEY_MAX:
                params[name] = f"<{len(value)} chars: see artifact config/long_params.json>"
        else:
            params[name] = value
    return params, long_values


def clip(text: str, limit: int = TAG_MAX) -> str:
    """For tags only, whose full text is also in an artifact; the cut is marked, never silent."""
    if len(text) <= limit:
        return text
    marker = f" …[{len(text) - limit + 40} chars cut; full text in artifacts]"
    return text[: limit - len(marker)] + marker


def render(artifact: Artifact) -> str:
    """Readable text of an artifact: SKILL.md for skills, else one section per field (so a
    prompt's text diffs line by line, not as one JSON string)."""
    markdown = getattr(artifact, "render_markdown", None)
    if callable(markdown):
        return str(markdown())
    return "\n".join(f"## {name}\n\n{chr(10).join(value) if isinstance(value, (list, tuple)) else value}\n"
                     for name, value in artifact.to_dict().items())


def validation_metrics(batch: ScoredBatch | None) -> dict[str, float]:
    """`validation_mean` and `validation.<objective>` of a candidate's validation batch: what
    candidates are compared on (minibatch objectives stay in the run record: every metric is a
    row MLflow writes, for each pool member)."""
    if batch is None:
        return {}
    summary = batch.summary
    return {"validation_mean": summary.score, **{safe_key("validation", k): v for k, v in summary.objectives.items()}}


def scores_table(batch: ScoredBatch) -> dict[str, list[Any]]:
    """Per-case scores and objectives, as a `log_table` table."""
    names = sorted({name for ev in batch.evaluations for name in ev.objectives})
    table: dict[str, list[Any]] = {"case_id": [ev.case_id for ev in batch.evaluations], "score": batch.scores}
    table.update({name: [ev.objectives.get(name) for ev in batch.evaluations] for name in names})
    return table


def readable(values: Mapping[str, float | None]) -> dict[str, float]:
    """Metric values without binary noise (12 significant digits: 0.6000000000000001 -> 0.6, which
    the UI's columns show; result.json keeps every bit). NaN / inf are legal in MLflow but useless
    in comparisons: left out, as are values not known (None)."""
    return {k: float(f"{float(v):.12g}") for k, v in values.items() if v is not None and math.isfinite(float(v))}


def diff_text(parent: str, child: str, fromfile: str = "parent", tofile: str = "candidate") -> str:
    """A unified diff of two rendered artifacts (a `.txt` artifact: MLflow previews it)."""
    diff = "".join(difflib.unified_diff(parent.splitlines(keepends=True), child.splitlines(keepends=True),
                                        fromfile=fromfile, tofile=tofile))
    return diff or f"{tofile} is identical to {fromfile}\n"
