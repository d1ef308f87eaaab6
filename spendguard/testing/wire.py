"""The emulator's own request and response records, and the providers' wire conventions.

Both shells (the httpx2 transport and the loopback server) translate to and from these two
small records, so every endpoint is written once. Error bodies, request ids and SSE framing
follow each provider's published format exactly, because the official SDKs parse them.
"""

from __future__ import annotations

import hashlib
import json
import re
from dataclasses import dataclass, field
from typing import Any, Literal

__all__ = [
    "EMULATOR_HEADER",
    "EmulatedError",
    "IdFactory",
    "Provider",
    "WireRequest",
    "WireResponse",
    "default_error",
    "error_response",
    "json_response",
    "normalise_path",
    "provider_for",
    "sse_frame",
    "sse_response",
]

Provider = Literal["openai", "anthropic", "gemini"]

# Every response carries this header: nothing the emulator says can pass for a provider's word.
EMULATOR_HEADER = ("x-spendguard-emulator", "not a real provider")

_OPENAI_ERROR_TYPES = {400: "invalid_request_error", 401: "invalid_request_error",
                       403: "permission_error", 404: "invalid_request_error",
                       409: "conflict_error", 413: "invalid_request_error", 429: "requests"}
_ANTHROPIC_ERROR_TYPES = {400: "invalid_request_error", 401: "authentication_error",
                          403: "permission_error", 404: "not_found_error",
                          413: "request_too_large", 429: "rate_limit_error", 500: "api_error",
                          504: "timeout_error", 529: "overloaded_error"}
_DEFAULT_MESSAGES = {429: "Rate limit reached (spendguard emulator fault injection).",
                     500: "The server had an error while processing your request "
                          "(spendguard emulator).",
                     529: "Overloaded (spendguard emulator fault injection)."}


class EmulatedError(Exception):
    """A provider-style API error: raise it from a responder to make one call fail.

    The emulator answers with the provider's own error body for ``status`` (OpenAI
    ``{"error": {...}}`` or Anthropic ``{"type": "error", ...}``); in a batch the request
    becomes an errored result line instead.
    """

    def __init__(self, status: int, message: str, *, error_type: str | None = None,
                 code: str | None = None, param: str | None = None) -> None:
        super().__init__(message)
        self.status = status
        self.message = message
        self.error_type = error_type
        self.code = code
        self.param = param

    def openai_body(self) -> dict[str, Any]:
        """The error as OpenAI's JSON body."""
        error_type = self.error_type or _OPENAI_ERROR_TYPES.get(
            self.status, "server_error" if self.status >= 500 else "invalid_request_error")
        code = self.code
        if code is None and self.status == 429:
            code = "rate_limit_exceeded"
        return {"error": {"message": self.message, "type": error_type, "param": self.param,
                          "code": code}}

    def anthropic_body(self, request_id: str) -> dict[str, Any]:
        """The error as Anthropic's JSON body."""
        error_type = self.error_type or _ANTHROPIC_ERROR_TYPES.get(
            self.status, "api_error" if self.status >= 500 else "invalid_request_error")
        return {"type": "error", "error": {"type": error_type, "message": self.message},
                "request_id": request_id}

    def gemini_body(self) -> dict[str, Any]:
        """The error as Google's JSON body (``google.rpc.Status``)."""
        status = self.error_type or _GOOGLE_STATUSES.get(
            self.status, "INTERNAL" if self.status >= 500 else "INVALID_ARGUMENT")
        return {"error": {"code": self.status, "message": self.message, "status": status}}


_GOOGLE_STATUSES = {400: "INVALID_ARGUMENT", 401: "UNAUTHENTICATED", 403: "PERMISSION_DENIED",
                    404: "NOT_FOUND", 429: "RESOURCE_EXHAUSTED", 503: "UNAVAILABLE"}
_GEMINI_PATH = re.compile(r"^/v1beta1?/(?!openai/)|/models/[^/]+:[A-Za-z]+$|^/v1/cachedContents"
                          r"|^/upload/v1")


@dataclass(frozen=True, slots=True)
class WireRequest:
    """One HTTP request as the emulator sees it (header names lower-case)."""

    method: str
    path: str
    query: dict[str, str]
    headers: dict[str, str]
    body: bytes
    origin: str
    """Scheme and host the caller used (``http://127.0.0.1:8080``), for absolute URLs."""

    def json(self) -> dict[str, Any]:
        """The body as a JSON object, or a provider-style 400."""
        try:
            value = json.loads(self.body or b"null")
        except ValueError as exc:
            raise EmulatedError(400, f"We could not parse the JSON body of your request: {exc}"
                                ) from exc
        if not isinstance(value, dict):
            raise EmulatedError(400, "The request body must be a JSON object.")
        return value


@dataclass(slots=True)
class WireResponse:
    """One response: a whole body, or SSE frames the shells send one at a time."""

    status: int
    headers: dict[str, str]
    body: bytes = b""
    events: list[bytes] | None = None
    break_after_events: int | None = None
    """Drop the connection after this many frames (fault injection)."""
    timeout: bool = False
    """Send nothing: the client sees a read timeout (fault injection)."""
    extra: dict[str, Any] = field(default_factory=dict)


class IdFactory:
    """Deterministic, realistic-looking ids: the same seed and call order give the same ids."""

    def __init__(self, seed: int) -> None:
        self._seed = seed
        self._count = 0

    def new(self, prefix: str, length: int = 24) -> str:
        self._count += 1
        digest = hashlib.sha256(f"{self._seed}:{self._count}".encode()).hexdigest()
        return prefix + digest[:length]


def normalise_path(path: str) -> str:
    """The API path from ``/v1/`` on, so base URLs with or without ``/v1`` (or a prefix) work;
    Gemini's ``/v1beta/``, ``/v1beta1/`` and ``/upload/`` paths are kept as they are."""
    if path.startswith("/upload/v1"):
        return path.rstrip("/")
    for marker in ("/v1beta/", "/v1beta1/"):
        index = path.find(marker)
        if index >= 0:
            return path[index:].rstrip("/")
    index = path.find("/v1/")
    if index >= 0:
        path = path[index:]
    elif not path.startswith("/v1"):
        path = "/v1" + (path if path.startswith("/") else "/" + path)
    return path.rstrip("/") or "/v1"


def provider_for(path: str, headers: dict[str, str]) -> Provider:
    """Which provider's conventions a request expects (by path, then by Anthropic's headers)."""
    if _GEMINI_PATH.match(path):
        return "gemini"
    # google-genai's own headers: its batches live at /v1/batches/..., as OpenAI's do.
    if "x-goog-api-key" in headers or "x-goog-api-client" in headers:
        return "gemini"
    if path == "/v1/messages" or path.startswith("/v1/messages/"):
        return "anthropic"
    if "anthropic-version" in headers or "x-api-key" in headers:
        return "anthropic"
    return "openai"


def _base_headers(provider: Provider, request_id: str, content_type: str) -> dict[str, str]:
    id_header = "request-id" if provider == "anthropic" else "x-request-id"
    return {"content-type": content_type, id_header: request_id,
            EMULATOR_HEADER[0]: EMULATOR_HEADER[1]}


def json_response(provider: Provider, request_id: str, payload: Any, status: int = 200,
                  *, content_type: str = "application/json") -> WireResponse:
    body = payload if isinstance(payload, bytes) else json.dumps(payload).encode()
    return WireResponse(status, _base_headers(provider, request_id, content_type), body)


def sse_response(provider: Provider, request_id: str, frames: list[bytes]) -> WireResponse:
    headers = _base_headers(provider, request_id, "text/event-stream; charset=utf-8")
    headers["cache-control"] = "no-cache"
    return WireResponse(200, headers, events=frames)


def error_response(provider: Provider, request_id: str, error: EmulatedError,
                   *, retry_after_ms: int | None = None) -> WireResponse:
    """The provider's error body and headers for ``error``."""
    payload = (error.anthropic_body(request_id) if provider == "anthropic"
               else error.gemini_body() if provider == "gemini" else error.openai_body())
    response = json_response(provider, request_id, payload, error.status)
    if retry_after_ms is not None:
        response.headers["retry-after-ms"] = str(retry_after_ms)
        response.headers["retry-after"] = str(max(1, -(-retry_after_ms // 1000)))
    return response


def default_error(status: int) -> EmulatedError:
    """The error an injected fault of ``status`` reports."""
    return EmulatedError(status, _DEFAULT_MESSAGES.get(
        status, f"HTTP {status} (spendguard emulator fault injection)."))


_EVENT_NAME = re.compile(r"^[a-z_.]+$")


def sse_frame(data: Any, event: str | None = None) -> bytes:
    """One server-sent event: ``event: <name>`` (when named) and one ``data:`` line."""
    text = data if isinstance(data, str) else json.dumps(data, separators=(",", ":"))
    if event is None:
        return f"data: {text}\n\n".encode()
    if not _EVENT_NAME.match(event):  # pragma: no cover - a wiring bug
        raise ValueError(f"bad SSE event name {event!r}")
    return f"event: {event}\ndata: {text}\n\n".encode()
