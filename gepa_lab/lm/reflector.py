"""`reflector=dspy`: reflection by a real model, through `dspy.LM` and litellm.

The reflector sends the prompt of `gepa_lab.lm.prompt` as a messages list (system + user, no DSPy
signature adapter) and returns the model's raw text; the engine parses it with its tolerant JSON
parser, so an unusable reply is a recorded `reflection_rejected`, not a crash. Tokens and USD of
every call come from the LM's usage and are counted here, apart from the task's (`total_cost_usd`
is what the engine adds to the run's reflection cost).

Records that carry per-predictor feedback (`gepa_lab.lm.records`) are narrowed to the component
being improved: the model sees that predictor's feedback and trace lines, not the others'.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Mapping
from typing import Any

from gepa_lab.core.artifacts import Artifact, get_component, sha256_hex
from gepa_lab.core.errors import ReflectionRejected
from gepa_lab.core.reply import parse_reply
from gepa_lab.lm.client import chat
from gepa_lab.lm.config import LMSettings
from gepa_lab.lm.metered import LMCaller
from gepa_lab.lm.prompt import build_prompt, system_prompt
from gepa_lab.lm.records import for_component

log = logging.getLogger("gepa_lab.lm")


class DspyReflector(LMCaller):
    """Reflector (`gepa_lab.core.contracts.Reflector`) backed by the `lm.reflection` model.

    `lm`: the LM settings (the YAML passes `${lm.reflection}`) or a `dspy.LM` built by the caller;
    `seed`: sent to providers that accept one (`null`: none), so a rerun asks the same questions
    the same way; `prompt`: the reflection rules (a .md / .txt file or the text; null: the default
    in gepa_lab/lm/prompt.yaml); `samples`: replies asked for per proposal, one after another
    (sample k with seed + k), until one parses and changes the component (worth it only at a
    temperature above 0; a small model's replies often do neither). The model, its sampling
    settings and the prompt's hash are the reflector's fingerprint: part of the run's identity.
    """

    def __init__(self, lm: LMSettings | Mapping[str, Any] | Any = None, seed: int | None = None,
                 prompt: str | None = None, samples: int = 1):
        super().__init__(lm, "lm.reflection")
        if seed is not None and (isinstance(seed, bool) or not isinstance(seed, int)):
            raise ValueError(f"reflector.seed must be an integer or null, got {seed!r}")
        if isinstance(samples, bool) or not isinstance(samples, int) or samples < 1:
            raise ValueError(f"reflector.samples must be an integer >= 1, got {samples!r}")
        self.seed = None if seed is None else seed % 2**31  # what providers accept
        self.samples = samples
        self.system = system_prompt(prompt)

    def fingerprint(self) -> str:
        s = self.settings.public()
        lm = {k: s.get(k) for k in ("model", "api_base", "server", "temperature", "max_tokens")}
        return json.dumps({"class": "gepa_lab.lm.DspyReflector", **lm, "seed": self.seed, "samples": self.samples,
                           "prompt_sha256": sha256_hex(self.system)}, sort_keys=True)

    # -- what the engine reads -------------------------------------------------------------
    @property
    def total_cost_usd(self) -> float:
        return self.usage.cost_usd

    @property
    def total_tokens(self) -> int:
        return self.usage.tokens

    # -- one reflection ----------------------------------------------------------------------
    def reflect(self, artifact: Artifact, component: str, records: list[dict[str, Any]]) -> str:
        system, user = build_prompt(artifact, component, [for_component(r, component) for r in records], self.system)
        messages = [{"role": "system", "content": system}, {"role": "user", "content": user}]
        reply = ""
        for k in range(self.samples):
            reply = self._ask(messages, None if self.seed is None else (self.seed + k) % 2**31)
            if self.samples > 1 and _changes(reply, component, get_component(artifact, component)):
                break
        return reply

    def _ask(self, messages: list[dict[str, str]], seed: int | None) -> str:
        extra = {"seed": seed} if seed is not None and self.sends_seed else {}
        lm = self.lm.copy()  # its own history: this call's usage only
        try:
            with self.endpoint():
                return chat(lm, messages, **extra)
        finally:
            usage, total = self.count(lm), self.usage
            log.info("reflection LM %s: %d prompt + %d completion tokens, $%.6f (total %d calls, %d tokens, "
                     "$%.6f)", self.settings.model, usage.prompt_tokens, usage.completion_tokens, usage.cost_usd,
                     total.calls, total.tokens, total.cost_usd)


def _changes(reply: str, component: str, current: Any) -> bool:
    """Whether the engine could apply this reply: it parses and gives the component a new value."""
    try:
        value = parse_reply(reply).get(component)
    except ReflectionRejected:
        return False
    return value is not None and value != (list(current) if isinstance(current, tuple) else current)
