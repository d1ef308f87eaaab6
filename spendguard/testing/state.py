"""The emulator's settings and mutable state, and the per-request context handlers receive.

Handlers are plain functions of a :class:`Ctx`; the :class:`~spendguard.testing.Emulator`
holds its lock while one runs, so state here needs no locking of its own.
"""

from __future__ import annotations

import hashlib
import json
import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from spendguard.testing.prompt_cache import PromptCache
from spendguard.testing.replies import Responder
from spendguard.testing.wire import IdFactory, Provider, WireRequest

__all__ = ["BatchLimits", "Ctx", "EmulatorConfig", "State"]

# Minimum cacheable prompt per Anthropic model (tokens). Anthropic's prompt-caching docs, as
# gathered in shared/research/provider-facts.md §4.1; models not listed use the default.
ANTHROPIC_MIN_CACHEABLE_TOKENS: Mapping[str, int] = {
    "claude-opus-5": 512, "claude-fable-5": 512, "claude-mythos-5": 512,
    "claude-opus-4-8": 1024, "claude-sonnet-5": 1024, "claude-sonnet-4-6": 1024,
    "claude-sonnet-4-5": 1024, "claude-opus-4-1": 1024, "claude-opus-4": 1024,
    "claude-sonnet-4": 1024, "claude-opus-4-7": 2048, "claude-opus-4-6": 4096,
    "claude-opus-4-5": 4096, "claude-haiku-4-5": 4096, "claude-3-5-haiku": 2048,
    "claude-3-haiku": 2048,
}


@dataclass(frozen=True, slots=True)
class BatchLimits:
    """The providers' published batch limits (requests per batch, bytes per file / request)."""

    openai_max_requests: int = 50_000
    openai_max_file_bytes: int = 200 * 1024 * 1024
    openai_max_embedding_inputs: int = 50_000
    anthropic_max_requests: int = 100_000
    anthropic_max_bytes: int = 256 * 1024 * 1024
    gemini_max_requests: int = 10_000
    gemini_max_bytes: int = 20 * 1000 * 1000


@dataclass(frozen=True, slots=True)
class EmulatorConfig:
    """Every knob of an :class:`~spendguard.testing.Emulator`, fixed at construction."""

    seed: int = 0
    latency_s: float = 0.0
    stream_interval_s: float = 0.0
    respond: Responder | None = None
    reply_tokens: int | None = None
    openai_cache_ttl_s: float = 300.0
    anthropic_min_cacheable_tokens: Mapping[str, int] = field(
        default_factory=lambda: dict(ANTHROPIC_MIN_CACHEABLE_TOKENS))
    default_min_cacheable_tokens: int = 1024
    batch_completion_s: float = 60.0
    batch_cancel_s: float = 0.0
    batch_error_rate: float = 0.0
    batch_limits: BatchLimits = field(default_factory=BatchLimits)
    anthropic_token_ratio: float = 1.0
    anthropic_token_spread: float = 0.0

    def anthropic_tokens(self, body: Mapping[str, Any], central: int) -> int:
        """Claude input tokens billed for a prompt spendguard counts ``central`` tokens.

        ``central × ratio``, times a factor within ``1 ± spread`` drawn from the prompt's
        text (system, messages, tools): the same prompt always bills the same, as a real
        tokenizer would, but prompts differ in how far they land from spendguard's count.
        """
        if self.anthropic_token_ratio == 1.0 and not self.anthropic_token_spread:
            return central
        prompt = json.dumps([body.get(k) for k in ("system", "messages", "tools")],
                            sort_keys=True, default=str)
        draw = int.from_bytes(hashlib.sha256(prompt.encode()).digest()[:8], "big") / 2**64
        factor = self.anthropic_token_ratio * (1 + self.anthropic_token_spread * (2 * draw - 1))
        return math.ceil(central * factor)

    def min_cacheable_tokens(self, model: str) -> int:
        """The shortest prompt prefix ``model`` caches (exact id, or id minus a date suffix)."""
        table = self.anthropic_min_cacheable_tokens
        if model in table:
            return table[model]
        base, _, suffix = model.rpartition("-")
        if suffix.isdigit() and len(suffix) == 8 and base in table:
            return table[base]
        return self.default_min_cacheable_tokens


@dataclass(slots=True)
class State:
    """Everything an emulator remembers between requests."""

    config: EmulatorConfig
    ids: IdFactory
    cache: PromptCache = field(default_factory=PromptCache)
    files: dict[str, Any] = field(default_factory=dict)
    openai_batches: dict[str, Any] = field(default_factory=dict)
    anthropic_batches: dict[str, Any] = field(default_factory=dict)
    responses: dict[str, Any] = field(default_factory=dict)
    extensions: dict[str, Any] = field(default_factory=dict)
    """Room for later features (more endpoints, cache modes) without changing this record."""


@dataclass(frozen=True, slots=True)
class Ctx:
    """One request being answered: the state, the request, its id and the time it arrived."""

    state: State
    request: WireRequest
    provider: Provider
    request_id: str
    now_s: float

    @property
    def config(self) -> EmulatorConfig:
        return self.state.config

