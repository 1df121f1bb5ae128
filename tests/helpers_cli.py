"""`python -m gepa_lab ...` run in this process: for tests that read only the exit code, stdout,
stderr and the files a run writes, a subprocess adds nothing but its start-up (~2 s of imports).
Tests that need a process of their own (signals, a closed pipe, an installed wheel, SIGKILL) keep
starting one."""

from __future__ import annotations

import contextlib
import io
import logging
import os
import signal
import subprocess
import sys
from pathlib import Path
from unittest import mock


def gepa(*args: str, cwd: Path, env: dict[str, str] | None = None, path: Path | None = None
         ) -> subprocess.CompletedProcess:
    """The command line's exit code, stdout and stderr, with the process state it changes (working
    directory, environment, argv, SIGTERM handler, logging) restored afterwards. `path`: a folder
    of plugin modules, importable during the call (as PYTHONPATH would make it)."""
    import gepa_lab.__main__ as main
    import gepa_lab.cli  # noqa: F401  (it sets up the failure logger: its state is restored as it was)

    loggers = [logging.getLogger(), logging.getLogger("gepa_lab.failure")]
    saved = (os.getcwd(), dict(os.environ), sys.argv, signal.getsignal(signal.SIGTERM),
             [(lg.handlers[:], lg.level, lg.propagate) for lg in loggers], set(sys.modules), sys.path[:])
    out, err, code = io.StringIO(), io.StringIO(), 0
    try:
        os.chdir(cwd)
        os.environ.update(env or {})
        sys.argv = ["gepa_lab", *args]
        if path is not None:
            sys.path.insert(0, str(path))
        # The MLflow logging process started ahead of a run would outlive this call.
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err), mock.patch.object(
                main, "start_logger_early", lambda argv: None, create=True):
            try:
                main.entry()
            except SystemExit as exc:
                code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
    finally:
        cwd_before, env_before, sys.argv, handler, states, modules, sys.path[:] = saved
        os.chdir(cwd_before)
        os.environ.clear()
        os.environ.update(env_before)
        signal.signal(signal.SIGTERM, handler)
        for lg, (handlers, level, propagate) in zip(loggers, states, strict=True):
            lg.handlers[:], lg.level, lg.propagate = handlers, level, propagate
        if path is not None:  # the plugin's modules go with their folder
            for name in set(sys.modules) - modules:
                if str(getattr(sys.modules[name], "__file__", "") or "").startswith(str(path)):
                    del sys.modules[name]
    return subprocess.CompletedProcess(["gepa_lab", *args], code, out.getvalue(), err.getvalue())
