"""A stand-in for `python -m llama_cpp.server` in the tests (tests/test_local_server.py puts this
folder first on PYTHONPATH): the same command line, an OpenAI-compatible `/v1` on 127.0.0.1, and a
toy "model" that answers the bare label only when the prompt asks for one word, a sentence
otherwise. A model file whose name holds `crash` makes it fail at start-up, `mute` makes it never
listen."""

import argparse
import json
import signal
import sys
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

NEGATIVE = ("broke", "waste", "never", "damaged", "flimsy", "stale", "slow", "crash", "dirty", "rude", "loud",
            "apart", "overpriced", "leaked", "impossible", "headache", "not worth", "not what", "nothing special",
            "smelled", "bored", "stopped")

parser = argparse.ArgumentParser()
parser.add_argument("--model")
parser.add_argument("--host")
parser.add_argument("--port", type=int)
args, _ = parser.parse_known_args()
if "crash" in args.model:
    print("error loading model: not a GGUF file", file=sys.stderr)
    sys.exit(1)
signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
if "mute" in args.model:
    time.sleep(600)


def answer(text):
    label = "negative" if any(cue in text.lower() for cue in NEGATIVE) else "positive"
    return label if "one word" in text.lower() else f"The review is {label}."


class Handler(BaseHTTPRequestHandler):
    def log_message(self, *a):
        pass

    def _send(self, payload):
        data = json.dumps(payload).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def do_GET(self):
        self._send({"object": "list", "data": [{"id": "fake", "object": "model"}]})

    def do_POST(self):
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        text = "\n".join(m["content"] for m in body["messages"])
        reply = answer(text)
        self._send({"id": "x", "object": "chat.completion", "created": 0, "model": body.get("model", "fake"),
                    "choices": [{"index": 0, "finish_reason": "stop",
                                 "message": {"role": "assistant", "content": reply}}],
                    "usage": {"prompt_tokens": len(text) // 4, "completion_tokens": len(reply) // 4,
                              "total_tokens": len(text) // 4 + len(reply) // 4}})


ThreadingHTTPServer((args.host, args.port), Handler).serve_forever()
