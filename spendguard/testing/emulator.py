"""The provider emulator: state, settings, fault injection and the request log.

One :class:`Emulator` answers OpenAI and Anthropic requests offline, deterministically, through
two thin shells: an httpx2 transport (:meth:`Emulator.transport`) and a loopback HTTP server
(:func:`spendguard.testing.serve`). Both call :meth:`Emulator.handle`, which is thread-safe.
"""

from __future__ import annotations

import asyncio
import json
import threading
import time
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import httpx2

from spendguard._core.errors import ConfigError
from spendguard.testing.clock import ManualClock
from spendguard.testing.faults import Fault, FaultQueue
from spendguard.testing.replies import Responder
from spendguard.testing.routes import dispatch
from spendguard.testing.state import (
    ANTHROPIC_MIN_CACHEABLE_TOKENS,
    BatchLimits,
    Ctx,
    EmulatorConfig,
    State,
)
from spendguard.testing.transport import EmulatorTransport
from spendguard.testing.wire import (
    EmulatedError,
    IdFactory,
    WireRequest,
    WireResponse,
    default_error,
    error_response,
    provider_for,
)

if TYPE_CHECKING:  # pragma: no cover
    import anthropic
    import openai
    from google import genai
    from google.genai import types as genai_types

__all__ = ["ANTHROPIC_BASE_URL", "GEMINI_BASE_URL", "OPENAI_BASE_URL", "Emulator",
           "RecordedRequest"]

# `.invalid` never resolves (RFC 6761): a client built here cannot reach a real provider.
OPENAI_BASE_URL = "http://emulator.spendguard.invalid/v1"
ANTHROPIC_BASE_URL = "http://emulator.spendguard.invalid"
GEMINI_BASE_URL = "http://emulator.spendguard.invalid/"
_SECRET_WORDS = ("auth", "key", "token", "secret", "cookie")


@dataclass(frozen=True, slots=True)
class RecordedRequest:
    """One request the emulator received; credentials are never kept."""

    method: str
    path: str
    query: Mapping[str, str]
    headers: Mapping[str, str]
    """Headers minus anything that can carry a credential (authorization, x-api-key, ...)."""
    body: Any
    """The JSON body; for a file upload, ``{"purpose", "filename", "bytes"}``."""
    provider: str
    time_s: float
    status: int | None
    """The HTTP status answered; None when a timeout was injected."""
    fault: str | None = None


class Emulator:
    """An offline, deterministic stand-in for the OpenAI and Anthropic APIs.

    It is NOT a real provider: replies are labelled ``[spendguard emulator]`` and every
    response carries an ``x-spendguard-emulator`` header. Usage is counted with spendguard's
    own token counters (Claude input scaled by ``anthropic_token_ratio``, each prompt within
    ``± anthropic_token_spread`` of that, to stand in for Claude's own tokenizer), prompt
    caches and batches run on ``clock`` (epoch seconds; pass a
    :class:`~spendguard.testing.ManualClock` to drive time by hand), and ``sleep`` /
    ``async_sleep`` (default: the manual clock's, else the real ones) serve ``latency_s``.
    """

    def __init__(self, *, clock: Callable[[], float] | None = None,
                 sleep: Callable[[float], None] | None = None,
                 async_sleep: Callable[[float], Awaitable[None]] | None = None,
                 latency_s: float = 0.0, stream_interval_s: float = 0.0, seed: int = 0,
                 respond: Responder | None = None, reply_tokens: int | None = None,
                 error_rate: float = 0.0, error_statuses: Sequence[int] = (429, 500),
                 openai_cache_ttl_s: float = 300.0,
                 anthropic_min_cacheable_tokens: Mapping[str, int] | None = None,
                 default_min_cacheable_tokens: int = 1024, batch_completion_s: float = 60.0,
                 batch_cancel_s: float = 0.0, batch_error_rate: float = 0.0,
                 batch_limits: BatchLimits | None = None,
                 anthropic_token_ratio: float = 1.0,
                 anthropic_token_spread: float = 0.0) -> None:
        for name, value in (("latency_s", latency_s), ("stream_interval_s", stream_interval_s),
                            ("openai_cache_ttl_s", openai_cache_ttl_s),
                            ("batch_completion_s", batch_completion_s),
                            ("batch_cancel_s", batch_cancel_s)):
            if value < 0:
                raise ConfigError(f"Emulator({name}={value!r}): give a number of seconds >= 0")
        if not 0.0 <= batch_error_rate <= 1.0:
            raise ConfigError(f"Emulator(batch_error_rate={batch_error_rate!r}): give a "
                              "fraction from 0 to 1")
        if not anthropic_token_ratio > 0 or not 0 <= anthropic_token_spread < 1:
            raise ConfigError(f"Emulator(anthropic_token_ratio={anthropic_token_ratio!r}, "
                              f"anthropic_token_spread={anthropic_token_spread!r}): give a "
                              "ratio > 0 and a spread from 0 to below 1")
        if reply_tokens is not None and reply_tokens < 0:
            raise ConfigError(f"Emulator(reply_tokens={reply_tokens!r}): give a token count "
                              ">= 0, or None for a length derived from each request")
        config = EmulatorConfig(
            seed=seed, latency_s=latency_s, stream_interval_s=stream_interval_s,
            respond=respond, reply_tokens=reply_tokens, openai_cache_ttl_s=openai_cache_ttl_s,
            anthropic_min_cacheable_tokens={**ANTHROPIC_MIN_CACHEABLE_TOKENS,
                                            **(anthropic_min_cacheable_tokens or {})},
            default_min_cacheable_tokens=default_min_cacheable_tokens,
            batch_completion_s=batch_completion_s, batch_cancel_s=batch_cancel_s,
            batch_error_rate=batch_error_rate, batch_limits=batch_limits or BatchLimits(),
            anthropic_token_ratio=anthropic_token_ratio,
            anthropic_token_spread=anthropic_token_spread)
        self.clock: Callable[[], float] = clock or time.time
        manual = clock if isinstance(clock, ManualClock) else None
        self.sleep: Callable[[float], None] = sleep or (manual.sleep if manual else time.sleep)
        self.async_sleep: Callable[[float], Awaitable[None]] = async_sleep or (
            manual.async_sleep if manual else asyncio.sleep)
        self._state = State(config=config, ids=IdFactory(seed))
        self._faults = FaultQueue(seed=seed, error_rate=error_rate,
                                  error_statuses=error_statuses)
        self._log: list[RecordedRequest] = []
        self._lock = threading.RLock()

    @property
    def config(self) -> EmulatorConfig:
        return self._state.config

    # -- faults ---------------------------------------------------------------------------

    def fail_next(self, count: int = 1, *, status: int = 429, retry_after_ms: int | None = 1,
                  path: str | None = None) -> None:
        """Answer the next ``count`` requests (to ``path``, if given) with HTTP ``status``.

        ``retry_after_ms`` is sent as ``retry-after-ms`` (default 1 ms, so SDK retries do not
        wait); None sends no retry header and the SDK uses its own backoff.
        """
        if status < 400:
            raise ConfigError(f"fail_next(status={status!r}): give an HTTP error status >= 400")
        self._add(Fault("status", status=status, retry_after_ms=retry_after_ms, path=path), count)

    def timeout_next(self, count: int = 1, *, path: str | None = None) -> None:
        """Let the next ``count`` requests time out (the client sees ``httpx2.ReadTimeout``)."""
        self._add(Fault("timeout", path=path), count)

    def break_next_stream(self, after_events: int = 1, *, count: int = 1,
                          path: str | None = None) -> None:
        """Drop the connection of the next streamed response after ``after_events`` events."""
        if after_events < 0:
            raise ConfigError(f"break_next_stream(after_events={after_events!r}): give >= 0")
        self._add(Fault("break_stream", after_events=after_events, path=path), count)

    def clear_faults(self) -> None:
        with self._lock:
            self._faults.clear()

    def _add(self, fault: Fault, count: int) -> None:
        with self._lock:
            self._faults.add(fault, count)

    # -- the request log ------------------------------------------------------------------

    @property
    def requests(self) -> list[RecordedRequest]:
        """Every request received so far, oldest first (a copy)."""
        with self._lock:
            return list(self._log)

    def clear_requests(self) -> None:
        with self._lock:
            self._log.clear()

    def reset_cache(self) -> None:
        """Forget every prompt-cache entry (as if the TTLs had all run out)."""
        with self._lock:
            self._state.cache.clear()

    # -- the core -------------------------------------------------------------------------

    def handle(self, request: WireRequest) -> WireResponse:
        """Answer one request (thread-safe); the shells add latency and stream the frames."""
        provider = provider_for(request.path, request.headers)
        with self._lock:
            now_s = self.clock()
            request_id = self._state.ids.new("req_emu_")
            fault = self._faults.take_request_fault(request.path)
            if fault is None:
                try:
                    response = dispatch(Ctx(self._state, request, provider, request_id, now_s))
                except EmulatedError as error:
                    response = error_response(provider, request_id, error)
                if response.events is not None:
                    cut = self._faults.take_stream_fault(request.path)
                    if cut is not None:
                        response.break_after_events = cut.after_events
                        fault = cut
            elif fault.kind == "timeout":
                response = WireResponse(0, {}, timeout=True)
            else:
                response = error_response(provider, request_id, default_error(fault.status),
                                          retry_after_ms=fault.retry_after_ms)
            self._log.append(RecordedRequest(
                request.method, request.path, dict(request.query), _redact(request.headers),
                response.extra.get("logged_body", _logged_body(request)), provider, now_s,
                None if response.timeout else response.status, fault.kind if fault else None))
        return response

    # -- clients --------------------------------------------------------------------------

    def transport(self) -> EmulatorTransport:
        """An ``httpx2`` transport (sync and async) answered by this emulator."""
        return EmulatorTransport(self)

    def openai_client(self, **options: Any) -> openai.OpenAI:
        """A plain ``openai.OpenAI`` wired to this emulator (``options`` go to the client)."""
        import openai  # noqa: PLC0415 - the SDKs are optional; loaded only when asked for

        options.setdefault("http_client", httpx2.Client(transport=self.transport()))
        return openai.OpenAI(**{"api_key": "emulated", "base_url": OPENAI_BASE_URL, **options})

    def async_openai_client(self, **options: Any) -> openai.AsyncOpenAI:
        """A plain ``openai.AsyncOpenAI`` wired to this emulator."""
        import openai  # noqa: PLC0415 - the SDKs are optional; loaded only when asked for

        options.setdefault("http_client", httpx2.AsyncClient(transport=self.transport()))
        return openai.AsyncOpenAI(**{"api_key": "emulated", "base_url": OPENAI_BASE_URL,
                                     **options})

    def anthropic_client(self, **options: Any) -> anthropic.Anthropic:
        """A plain ``anthropic.Anthropic`` wired to this emulator."""
        import anthropic  # noqa: PLC0415 - the SDKs are optional; loaded only when asked for

        options.setdefault("http_client", httpx2.Client(transport=self.transport()))
        return anthropic.Anthropic(**{"api_key": "emulated", "base_url": ANTHROPIC_BASE_URL,
                                      **options})

    def async_anthropic_client(self, **options: Any) -> anthropic.AsyncAnthropic:
        """A plain ``anthropic.AsyncAnthropic`` wired to this emulator."""
        import anthropic  # noqa: PLC0415 - the SDKs are optional; loaded only when asked for

        options.setdefault("http_client", httpx2.AsyncClient(transport=self.transport()))
        return anthropic.AsyncAnthropic(**{"api_key": "emulated",
                                           "base_url": ANTHROPIC_BASE_URL, **options})

    def gemini_http_options(self, **options: Any) -> genai_types.HttpOptions:
        """``google.genai.types.HttpOptions`` that send a Gemini client's requests (sync and
        async) to this emulator: ``genai.Client(api_key="emulated",
        http_options=emulator.gemini_http_options())``, or ``spendguard.Gemini(...)``."""
        from google.genai import types  # noqa: PLC0415 - the SDKs are optional

        return types.HttpOptions(**{
            "base_url": GEMINI_BASE_URL,
            "httpx_client": httpx2.Client(transport=self.transport()),
            "httpx_async_client": httpx2.AsyncClient(transport=self.transport()), **options})

    def gemini_client(self, **options: Any) -> genai.Client:
        """A plain ``google.genai.Client`` wired to this emulator (``options`` go to it)."""
        from google import genai  # noqa: PLC0415 - the SDKs are optional

        options.setdefault("http_options", self.gemini_http_options())
        return genai.Client(**{"api_key": "emulated", **options})


def _redact(headers: Mapping[str, str]) -> dict[str, str]:
    return {name: value for name, value in headers.items()
            if not any(word in name.lower() for word in _SECRET_WORDS)}


def _logged_body(request: WireRequest) -> Any:
    if not request.body:
        return None
    try:
        return json.loads(request.body)
    except ValueError:
        return {"content_type": request.headers.get("content-type"), "bytes": len(request.body)}
