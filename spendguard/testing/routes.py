"""Which handler answers which method and path; unknown paths get the provider's own 404."""

from __future__ import annotations

import re
from collections.abc import Callable

from spendguard.testing import (
    anthropic_api,
    anthropic_batches,
    files,
    gemini_api,
    gemini_batches,
    openai_api,
    openai_batches,
    openai_responses,
)
from spendguard.testing.platforms import PLATFORM_ROUTES
from spendguard.testing.state import Ctx
from spendguard.testing.wire import EmulatedError, WireResponse

__all__ = ["ROUTES", "dispatch"]

Route = tuple[str, re.Pattern[str], Callable[[Ctx, dict[str, str]], WireResponse]]
ROUTES: list[Route] = []


def route(method: str, pattern: str,
          handler: Callable[[Ctx, dict[str, str]], WireResponse]) -> None:
    """Register a handler; later issues add endpoints through this one function."""
    ROUTES.append((method, re.compile(pattern.replace("{id}", "(?P<id>[A-Za-z0-9_.-]+)")),
                   handler))


route("POST", "/v1/chat/completions", openai_api.chat_completions)
# Gemini's OpenAI-compatible endpoint answers chat completions the OpenAI way.
route("POST", "/v1beta/openai/chat/completions", openai_api.chat_completions)
route("POST", "/v1/embeddings", openai_api.embeddings)
route("POST", "/v1/responses", openai_responses.responses)
route("POST", "/v1/responses/input_tokens", openai_responses.input_token_count)
route("GET", "/v1/responses/{id}", openai_responses.retrieve_response)
route("POST", "/v1/messages", anthropic_api.messages)
route("POST", "/v1/messages/count_tokens", anthropic_api.count_tokens)
route("POST", "/v1/files", files.upload_file)
route("GET", "/v1/files", files.list_files)
route("GET", "/v1/files/{id}", files.retrieve_file)
route("DELETE", "/v1/files/{id}", files.delete_file)
route("GET", "/v1/files/{id}/content", files.file_content)
route("POST", "/v1/batches", openai_batches.create_batch)
route("GET", "/v1/batches", openai_batches.list_batches)
route("GET", "/v1/batches/{id}", openai_batches.retrieve_batch)
route("POST", "/v1/batches/{id}/cancel", openai_batches.cancel_batch)
route("POST", "/v1/messages/batches", anthropic_batches.create_batch)
route("GET", "/v1/messages/batches", anthropic_batches.list_batches)
route("GET", "/v1/messages/batches/{id}", anthropic_batches.retrieve_batch)
route("DELETE", "/v1/messages/batches/{id}", anthropic_batches.delete_batch)
route("GET", "/v1/messages/batches/{id}/results", anthropic_batches.batch_results)
route("POST", "/v1/messages/batches/{id}/cancel", anthropic_batches.cancel_batch)
for _method, _pattern, _handler in (*gemini_api.GEMINI_ROUTES,  # model in the path
                                    *gemini_batches.GEMINI_BATCH_ROUTES):
    route(_method, _pattern, _handler)
ROUTES.extend(PLATFORM_ROUTES)  # Azure, Bedrock and Vertex paths (model in the path)


_GEMINI_FIRST: list[Route] = [
    (method, re.compile(pattern.replace("{id}", "(?P<id>[A-Za-z0-9_.-]+)")), handler)
    for method, pattern, handler in gemini_batches.GEMINI_BATCH_ROUTES]
"""google-genai's batches share OpenAI's ``/v1/batches`` paths: tried first for its requests."""


def dispatch(ctx: Ctx) -> WireResponse:
    request = ctx.request
    for method, pattern, handler in (_GEMINI_FIRST + ROUTES if ctx.provider == "gemini"
                                     else ROUTES):
        match = pattern.fullmatch(request.path)
        if match is not None and method == request.method:
            return handler(ctx, match.groupdict())
    if ctx.provider in ("anthropic", "gemini"):
        raise EmulatedError(404, f"Not found: {request.method} {request.path} "
                                 "(spendguard emulator)")
    raise EmulatedError(404, f"Invalid URL ({request.method} {request.path})")
