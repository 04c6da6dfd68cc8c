"""Settings: one validated object, from command-line flags and ``EVOMEM_*`` environment variables.

Precedence: flag > environment > default. Every setting is listed in the README.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any

from evomem.domain.text import DEFAULT_MAX_NOTE_BYTES

AUTO_SUPERSEDE = ("off", "heuristic", "scored", "llm")
TRANSPORTS = ("stdio", "http")
VECTORS = ("auto", "on", "off")


class SettingsError(ValueError):
    pass


def _default_db() -> str:
    return str(Path("~/.evomem/evomem.db").expanduser())


@dataclass(frozen=True)
class Settings:
    db: str = field(default_factory=_default_db)
    transport: str = "stdio"
    host: str = "127.0.0.1"
    port: int = 8765
    auto_supersede: str = "off"
    namespace: str = "default"
    author: str | None = None
    max_note_bytes: int = DEFAULT_MAX_NOTE_BYTES
    log_level: str = "INFO"
    log_format: str = "text"  # text | json
    linker_model: str | None = None  # --auto-supersede llm: model name at the endpoint
    linker_base_url: str | None = None  # OpenAI-compatible base URL, e.g. http://localhost:8080/v1
    linker_timeout_s: int = 10
    linker_structured: str = "grammar"  # grammar (llama.cpp) | json_schema | none
    vectors: str = "auto"  # hybrid recall: on | off (BM25 only, lite) | auto (on when the model is installed)

    def __post_init__(self) -> None:
        if self.transport not in TRANSPORTS:
            raise SettingsError(f"transport must be one of {', '.join(TRANSPORTS)}, got {self.transport!r}")
        if self.auto_supersede not in AUTO_SUPERSEDE:
            raise SettingsError(
                f"auto_supersede must be one of {', '.join(AUTO_SUPERSEDE)}, got {self.auto_supersede!r}"
            )
        if not 0 <= self.port <= 65535:
            raise SettingsError(f"port must be 0-65535, got {self.port}")
        if not 1 <= self.max_note_bytes <= 64 * 1024 * 1024:
            raise SettingsError("max_note_bytes must be between 1 and 67108864")
        if self.log_level.upper() not in ("DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL"):
            raise SettingsError(f"log_level {self.log_level!r} is not a logging level")
        if self.auto_supersede == "llm" and not (self.linker_model and self.linker_base_url):
            raise SettingsError(
                "auto_supersede llm needs --linker-model and --linker-base-url (or EVOMEM_LINKER_MODEL and "
                "EVOMEM_LINKER_BASE_URL); the API key, if any, comes from EVOMEM_LINKER_API_KEY"
            )
        if self.linker_structured not in ("grammar", "json_schema", "none"):
            raise SettingsError("linker_structured must be grammar, json_schema or none")
        if not 1 <= self.linker_timeout_s <= 600:
            raise SettingsError("linker_timeout_s must be between 1 and 600")
        if self.vectors not in VECTORS:
            raise SettingsError(f"vectors must be one of {', '.join(VECTORS)}, got {self.vectors!r}")
        if self.log_format not in ("text", "json"):
            raise SettingsError("log_format must be text or json")

    @classmethod
    def from_env(cls, env: dict[str, str] | None = None, **overrides: Any) -> Settings:
        """Read ``EVOMEM_<NAME>`` for every field, then apply non-None ``overrides``."""
        env = dict(os.environ if env is None else env)
        values: dict[str, Any] = {}
        for f in fields(cls):
            raw = env.get(f"EVOMEM_{f.name.upper()}")
            if raw is None or raw == "":
                continue
            if f.type in ("int", int):
                try:
                    values[f.name] = int(raw)
                except ValueError as exc:
                    raise SettingsError(f"EVOMEM_{f.name.upper()} must be an integer, got {raw!r}") from exc
            else:
                values[f.name] = raw
        from_env = set(values)
        values.update({k: v for k, v in overrides.items() if v is not None})
        try:
            return cls(**values)
        except SettingsError as exc:
            # Fix: name the variable when the bad value came from the environment, so
            # "port must be 0-65535" says which of EVOMEM_PORT or --port to correct.
            for name in sorted(from_env - {k for k, v in overrides.items() if v is not None}):
                try:
                    cls(**{name: values[name]})
                except SettingsError as own:
                    raise SettingsError(f"EVOMEM_{name.upper()}: {own}") from exc
            raise
