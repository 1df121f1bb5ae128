"""A loopback OpenAI-compatible chat-completions server for the real-model tests.

`StubLLM` listens on 127.0.0.1 (an OS-chosen port) and answers `POST /v1/chat/completions` with
scripted replies and a `usage` block; it can answer 429 or 500 on demand and logs every request
(body and headers, in memory and optionally to a JSONL file) so tests can grep what reached the
"provider" (canary strings, the API key in the Authorization header).

    with StubLLM(responder) as stub:           # responder(request) -> str | Reply
        stub.fail_next(429, times=1)           # the next request gets a 429
    StubLLM(responder, latency_s=0.02)         # every answer waits 20 ms, like a fast provider
        lm = dspy.LM("openai/stub", api_base=stub.url, api_key="k", engine="litellm", cache=False)

No network beyond 127.0.0.1; the server thread is a daemon and `close()` (or the context
manager) shuts it down.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any


@dataclass
class Reply:
    """One scripted answer: a chat completion with `content`, or an HTTP error `status`."""

    content: str = ""
    status: int = 200
    prompt_tokens: int | None = None  # None: estimated from the request (chars / 4)
    completion_tokens: int | None = None  # None: estimated from the content (chars / 4)
    message: str | None = None  # an error's message (None: "stub <status>")


@dataclass
class StubRequest:
    """One request as the server received it."""

    path: str
    body: dict[str, Any]
    headers: dict[str, str]
    status: int = 200  # what the stub answered
    usage: dict[str, int] = field(default_factory=dict)  # the usage block it returned (200 only)

    @property
    def model(self) -> str:
        return str(self.body.get("model", ""))

    @property
    def messages(self) -> list[dict[str, Any]]:
        return list(self.body.get("messages") or [])

    @property
    def text(self) -> str:
        """All message content as one string (what a canary check greps)."""
        parts = []
        for message in self.messages:
            content = message.get("content")
            if isinstance(content, list):  # content parts
                parts += [str(p.get("text", "")) for p in content if isinstance(p, dict)]
            elif content is not None:
                parts.append(str(content))
        return "\n".join(parts)

    @property
    def system(self) -> str:
        return "\n".join(str(m.get("content", "")) for m in self.messages if m.get("role") == "system")

    @property
    def last_user(self) -> str:
        users = [m for m in self.messages if m.get("role") == "user"]
        return str(users[-1].get("content", "")) if users else ""


Responder = Callable[[StubRequest], "str | Reply"]


def _estimate(text: str) -> int:
    return max(1, len(text) // 4)


@dataclass
class _Failure:
    status: int
    model: str | None  # only requests for this model (None: any)


class StubLLM:
    """The server. `responder(request)` gives the reply for every request not failed on demand."""

    def __init__(self, responder: Responder, log_path: str | Path | None = None, latency_s: float = 0.0):
        self.responder = responder
        self.log_path = Path(log_path) if log_path is not None else None
        self.latency_s = latency_s
        self.requests: list[StubRequest] = []
        self._failures: list[_Failure] = []
        self._lock = threading.Lock()
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, kwargs={"poll_interval": 0.05},
                                        name="stub-llm", daemon=True)
        self._thread.start()

    # -- control ---------------------------------------------------------------------------
    @property
    def port(self) -> int:
        return int(self._server.server_address[1])

    @property
    def url(self) -> str:
        """The OpenAI-style base URL (`api_base`)."""
        return f"http://127.0.0.1:{self.port}/v1"

    def fail_next(self, status: int, times: int = 1, model: str | None = None) -> None:
        """Answer the next `times` requests (for `model`, if given) with HTTP `status`."""
        with self._lock:
            self._failures += [_Failure(status, model) for _ in range(times)]

    def for_model(self, model: str) -> list[StubRequest]:
        """Requests whose `model` ends with `model` (litellm strips the provider prefix)."""
        return [r for r in self.requests if r.model == model or r.model.endswith("/" + model)]

    def close(self) -> None:
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(timeout=5)

    def __enter__(self) -> StubLLM:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- serving ---------------------------------------------------------------------------
    def _take_failure(self, model: str) -> int | None:
        with self._lock:
            for i, failure in enumerate(self._failures):
                if failure.model is None or model == failure.model or model.endswith("/" + failure.model):
                    return self._failures.pop(i).status
        return None

    def _record(self, request: StubRequest) -> None:
        with self._lock:
            self.requests.append(request)
            if self.log_path is not None:
                with self.log_path.open("a", encoding="utf-8") as fh:
                    fh.write(json.dumps({"path": request.path, "status": request.status, "body": request.body},
                                        ensure_ascii=False) + "\n")

    def answer(self, request: StubRequest) -> tuple[int, dict[str, Any]]:
        failure = self._take_failure(request.model)
        if failure is not None:
            kind = "rate_limit_exceeded" if failure == 429 else "server_error"
            return failure, {"error": {"message": f"stub {failure}", "type": kind, "code": kind}}
        reply = self.responder(request)
        if self.latency_s:
            time.sleep(self.latency_s)
        if isinstance(reply, str):
            reply = Reply(reply)
        if reply.status != 200:
            return reply.status, {"error": {"message": reply.message or f"stub {reply.status}", "type": "error"}}
        prompt = reply.prompt_tokens if reply.prompt_tokens is not None else _estimate(request.text)
        completion = (reply.completion_tokens if reply.completion_tokens is not None
                      else _estimate(reply.content))
        with self._lock:
            number = len(self.requests)
        request.usage = {"prompt_tokens": prompt, "completion_tokens": completion}
        return 200, {
            "id": f"chatcmpl-stub-{number}",
            "object": "chat.completion",
            "created": 1_700_000_000,
            "model": request.model,
            "choices": [{"index": 0, "finish_reason": "stop",
                         "message": {"role": "assistant", "content": reply.content}}],
            "usage": {"prompt_tokens": prompt, "completion_tokens": completion,
                      "total_tokens": prompt + completion},
        }

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        stub = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"
            # Headers and body go out in two writes: with Nagle's algorithm the body waits for the
            # client's delayed ACK (about 40 ms per request on Linux), which no provider adds.
            disable_nagle_algorithm = True

            def log_message(self, format: str, *args: Any) -> None:  # quiet
                pass

            def _send(self, status: int, payload: dict[str, Any]) -> None:
                data = json.dumps(payload).encode("utf-8")
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                if status == 429:
                    self.send_header("Retry-After", "0")
                self.end_headers()
                self.wfile.write(data)

            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                raw = self.rfile.read(length) if length else b""
                try:
                    body = json.loads(raw.decode("utf-8") or "{}")
                except ValueError:
                    body = {"_unparsable": raw.decode("utf-8", "replace")}
                request = StubRequest(self.path, body, {k.lower(): v for k, v in self.headers.items()})
                if not self.path.rstrip("/").endswith("/chat/completions"):
                    request.status = 404
                    stub._record(request)
                    self._send(404, {"error": {"message": f"no route {self.path}"}})
                    return
                try:
                    status, payload = stub.answer(request)
                except Exception as exc:  # a broken responder is the test's bug: say so loudly
                    status, payload = 599, {"error": {"message": f"stub responder failed: {exc!r}"}}
                request.status = status
                stub._record(request)
                self._send(status if status != 599 else 500, payload)

        return Handler


def chat_fields(**fields: str) -> str:
    """A reply in DSPy's ChatAdapter format: `[[ ## name ## ]]` sections plus the completion marker."""
    parts = [f"[[ ## {name} ## ]]\n{value}" for name, value in fields.items()]
    return "\n\n".join([*parts, "[[ ## completed ## ]]"])


@dataclass
class Script:
    """A responder from a list of replies, served in order (then `default`, if any)."""

    replies: list[str | Reply] = field(default_factory=list)
    default: str | Reply | None = None

    def __call__(self, request: StubRequest) -> str | Reply:
        if self.replies:
            return self.replies.pop(0)
        if self.default is None:
            raise RuntimeError("stub script exhausted")
        return self.default
