"""The README's library example runs as written; its opening commands are the ones CI runs."""

from __future__ import annotations

import contextlib
import io
import os
from pathlib import Path

from conftest import ROOT

README = (ROOT / "README.md").read_text(encoding="utf-8")


def _block(marker: str) -> str:
    body = README.split(f"<!-- {marker} -->")[1].split(f"<!-- /{marker} -->")[0]
    return body.split("```python")[1].split("```")[0]


def test_the_library_example_runs_as_written(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    out = io.StringIO()
    namespace: dict[str, object] = {"__name__": "__main__"}
    with contextlib.redirect_stdout(out):
        exec(compile(_block("library-example"), "README.md", "exec"), namespace)  # noqa: S102
    eligible, *_, delta = out.getvalue().splitlines()[0].split()
    result = namespace["result"]
    assert eligible == "True" and result.promotion_eligible is True
    assert all(f"Mention {w}." in result.best.text for w in namespace["words"])
    assert (tmp_path / "runs" / "keywords" / "result.json").exists()
    assert float(delta) == round(result.holdout_delta, 3) > 0


def test_the_opening_commands_are_what_ci_runs():
    first, second = [b.split("```")[0].strip() for b in README.split("```bash")[1:3]]
    assert first.endswith("pip install -e '.[dev]' && python -m gepa_lab experiment=recipe")
    ci = (ROOT / ".ci" / "run").read_text(encoding="utf-8")
    assert "pip install -e '.[dev]'" in ci and second.split("&& ")[-1] in ci
    assert os.access(ROOT / ".ci" / "run", os.R_OK) and Path(ROOT / ".ci" / "run").read_text().startswith("#!")
