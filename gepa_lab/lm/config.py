"""LM settings: one `LMSettings` per role, `LMConfig` = the `lm` config group (`lm.task` for the
agent / program under optimization, `lm.reflection` for the reflector).

The API key is never a setting: `api_key_env` names the environment variable that holds it, and
the key is read from there when the LM is built (`gepa_lab.lm.client.build_lm`).
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from dataclasses import dataclass, field, fields
from typing import Any

from gepa_lab.core.errors import ConfigError
from gepa_lab.core.settings import check_int, check_number, from_mapping, refuse_secrets
from gepa_lab.lm.server import LOCAL, ServerSettings, current

ENGINES = ("litellm", "auto")
# A variable's NAME as POSIX writes the environment's (OPENAI_API_KEY); a lower-case one only if it is
# set. Anything else (gsk_8fQ2…, sk-…) is a pasted key, refused before Hydra records the config.
_ENV_NAME = re.compile(r"^[A-Z_][A-Z0-9_]*$")


@dataclass
class LMSettings:
    """How to reach one model (a litellm model name such as `openai/gpt-4o-mini` or
    `ollama_chat/qwen2.5`) and what it costs."""

    model: str = "openai/gpt-4o-mini"
    api_base: str | None = None  # e.g. http://127.0.0.1:8000/v1; `local`: the lm.server; None: the provider's
    api_key_env: str | None = "OPENAI_API_KEY"  # NAME of the variable holding the key; None: no key
    temperature: float = 0.0
    max_tokens: int = 2048
    # dspy's own retries per request (1 s, 2 s, 4 s ... or the provider's Retry-After). Default 0:
    # transient errors surface to gepa_lab's retry layer (evaluation.max_retries /
    # reflection.max_retries), so retries are never doubled silently.
    num_retries: int = 0
    timeout_s: float = 30.0  # per request: the deadline of every call to the endpoint
    # dspy's response cache: off for evaluation (a cached reply would fake a paired seed), on for
    # development runs that replay the same requests.
    cache: bool = False
    engine: str = "litellm"  # litellm: every request goes through litellm; auto: dspy's native engine when it can
    # price of prompt + completion tokens; None: litellm's price map (0 if unknown)
    usd_per_1k_tokens: float | None = None

    # Validated by its holder with the role's name (`LMConfig`, `as_settings`, `build_lm`), so an
    # error names the full key, e.g. `lm.task.temperature`.
    def validate(self, role: str = "lm") -> None:
        if not isinstance(self.model, str) or not self.model.strip():
            raise ConfigError(f"{role}.model must name a litellm model, e.g. openai/gpt-4o-mini (got {self.model!r})")
        _check_api_base(self.api_base, f"{role}.api_base")
        name = self.api_key_env
        if name is not None and not (_ENV_NAME.match(str(name)) or (str(name).isidentifier() and name in os.environ)):
            # Never echo the value: a pasted key must not reach the terminal or a log.
            raise ConfigError(f"{role}.api_key_env must be the NAME of an environment variable (upper-case letters, "
                              "digits, underscores, e.g. OPENAI_API_KEY), not the key itself; export the key and "
                              "name its variable")
        check_number(self.temperature, f"{role}.temperature", 0.0, 2.0)
        check_int(self.max_tokens, f"{role}.max_tokens", 1)
        check_int(self.num_retries, f"{role}.num_retries", 0)
        check_number(self.timeout_s, f"{role}.timeout_s", 1.0)  # no request to a model completes faster
        if self.engine not in ENGINES:
            raise ConfigError(f"{role}.engine must be one of {', '.join(ENGINES)} (got {self.engine!r})")
        if self.usd_per_1k_tokens is not None:
            check_number(self.usd_per_1k_tokens, f"{role}.usd_per_1k_tokens", 0.0)

    def public(self) -> dict[str, Any]:
        """The settings as recorded (fingerprints, traces): no key, only its variable's name; for
        the local server (`api_base: local`), what of it can change a reply."""
        out = {f.name: getattr(self, f.name) for f in fields(self)}
        if self.api_base == LOCAL:
            out["server"] = current()["identity"]
        return out


@dataclass
class LMConfig:
    """The `lm` config group: one LM per role."""

    task: LMSettings = field(default_factory=LMSettings)
    reflection: LMSettings = field(default_factory=LMSettings)
    server: ServerSettings | None = None  # lm=local: the run's own model server (gepa_lab/lm/server.py)

    def __post_init__(self) -> None:
        self.task.validate("lm.task")
        self.reflection.validate("lm.reflection")
        if isinstance(self.server, Mapping):  # from Python: the fields as a mapping
            self.server = from_mapping(ServerSettings, self.server, "lm.server")
        if self.server is not None:
            self.server.validate()


def as_settings(value: LMSettings | Mapping[str, Any] | None, role: str = "lm") -> LMSettings:
    """An `LMSettings` from what a `_target_` class receives: the interpolated `lm.<role>` node
    (a mapping after `instantiate`), settings, or None (the defaults); checked."""
    if value is not None and not isinstance(value, (LMSettings, Mapping)):
        raise ConfigError(f"{role} must be a mapping of LM settings (got {type(value).__name__})")
    settings = value if isinstance(value, LMSettings) else from_mapping(LMSettings, value or {}, role)
    settings.validate(role)
    return settings


def settings_of(lm: Any, role: str = "lm") -> LMSettings:
    """What gepa-lab records of an LM object the caller built (a `dspy.LM`): its model, endpoint
    and sampling settings, never its key. Checked like settings: a model name, an http(s) base."""
    model = getattr(lm, "model", None)
    if not isinstance(model, str) or not callable(getattr(lm, "copy", None)):
        raise ConfigError(f"{role} must be a dspy.LM, e.g. dspy.LM('openai/gpt-4o-mini') (got {type(lm).__name__})")
    kwargs = getattr(lm, "kwargs", None) or {}
    settings = LMSettings(model=model, api_base=kwargs.get("api_base") or kwargs.get("base_url"), api_key_env=None,
                          temperature=kwargs.get("temperature", 0.0), cache=bool(getattr(lm, "cache", False)),
                          max_tokens=kwargs.get("max_tokens") or kwargs.get("max_completion_tokens") or 1,
                          num_retries=getattr(lm, "num_retries", 0) or 0, timeout_s=kwargs.get("timeout") or 30.0)
    if not model.strip():
        raise ConfigError(f"{role} has no model name; build it as dspy.LM('<provider>/<model>')")
    _check_api_base(settings.api_base, f"{role}.api_base")
    return settings


def _check_api_base(api_base: Any, role: str) -> None:
    if api_base is not None and api_base != LOCAL and not str(api_base).startswith(("http://", "https://")):
        raise ConfigError(f"{role} must be an http(s) URL such as http://127.0.0.1:8000/v1, or '{LOCAL}' for the "
                          f"server lm=local starts (got {api_base!r})")
    refuse_secrets(api_base, role)  # the endpoint is recorded with the run

