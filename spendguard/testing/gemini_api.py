"""The Gemini API (generateContent, streamGenerateContent, countTokens, embeddings,
cachedContents, resumable file uploads), as the ``google-genai`` SDK expects it on the wire.

Paths are the Developer API's (``/v1beta/models/{model}:generateContent``) and Vertex AI's
(``/v1beta1/[projects/{p}/locations/{l}/]publishers/google/models/{model}:…``); streams are
``?alt=sse`` (every frame a whole ``GenerateContentResponse``, usage on each, the last one
final). ``usageMetadata`` follows the REST reference: ``promptTokenCount`` includes
``cachedContentTokenCount``; ``thoughtsTokenCount`` is apart from ``candidatesTokenCount``. A
request with a ``googleSearch`` tool is answered grounded: ``groundingMetadata`` with one
search query, and 100 ``toolUsePromptTokenCount`` for the results the model read.
"""

from __future__ import annotations

import json
import math
from datetime import UTC, datetime
from typing import Any

from spendguard.testing.counting import input_tokens
from spendguard.testing.generation import Generation, generate
from spendguard.testing.openai_stream import pieces
from spendguard.testing.prompt_cache import CacheUse
from spendguard.testing.state import Ctx, State
from spendguard.testing.wire import (
    EmulatedError,
    WireResponse,
    json_response,
    sse_frame,
    sse_response,
)

__all__ = ["GEMINI_ROUTES", "generate_content_body"]

SEARCH_RESULT_TOKENS = 100
_CACHES = "gemini_cached_contents"
_MODEL_PATH = (r"/v1(?:beta1?)?/(?:projects/[^/]+/locations/[^/]+/)?(?:publishers/google/)?"
               r"models/(?P<model>[^/:]+)")


def _field(container: Any, camel: str) -> Any:
    if not isinstance(container, dict):
        return None
    snake = "".join(f"_{c.lower()}" if c.isupper() else c for c in camel)
    return container.get(camel, container.get(snake))


def _caches(state: State) -> dict[str, dict[str, Any]]:
    caches: dict[str, dict[str, Any]] = state.extensions.setdefault(_CACHES, {})
    return caches


def _cached_tokens(ctx: Ctx, body: dict[str, Any], model: str) -> int:
    name = _field(body, "cachedContent")
    if not name:
        return 0
    cache = _caches(ctx.state).get(str(name).rpartition("/")[2])
    if cache is None or cache["expire_s"] <= ctx.now_s:
        raise EmulatedError(404, f"CachedContent not found (or expired): {name}")
    if cache["model"] != model:
        raise EmulatedError(400, f"Model {model} does not match the cached content's model "
                                 f"{cache['model']}")
    return int(cache["tokens"])


def _grounded(body: dict[str, Any]) -> bool:
    tools = _field(body, "tools")
    return isinstance(tools, list) and any(
        isinstance(tool, dict) and (_field(tool, "googleSearch") is not None
                                    or _field(tool, "googleSearchRetrieval") is not None)
        for tool in tools)


def _last_user_text(body: dict[str, Any]) -> str:
    contents = _field(body, "contents")
    for content in reversed(contents if isinstance(contents, list) else []):
        parts = _field(content, "parts")
        if isinstance(parts, list):
            texts = [p["text"] for p in parts if isinstance(p, dict) and isinstance(
                p.get("text"), str)]
            if texts:
                return " ".join(texts)
    return ""


def _run(ctx: Ctx, model: str, body: dict[str, Any], path: str) -> tuple[Generation, int]:
    if not isinstance(_field(body, "contents"), list) or not _field(body, "contents"):
        raise EmulatedError(400, "* GenerateContentRequest.contents: contents is not specified")
    config = _field(body, "generationConfig") or {}
    cap = _field(config, "maxOutputTokens")
    if cap is not None and (isinstance(cap, bool) or not isinstance(cap, int) or cap < 0):
        raise EmulatedError(400, "generationConfig.maxOutputTokens: expected an integer >= 0")
    cached = _cached_tokens(ctx, body, model)
    counted = {key: value for key, value in body.items()
               if key not in ("cachedContent", "cached_content")}
    generation = generate(ctx.state, provider="gemini", endpoint=path,
                          body={**body, "model": model}, counted_body=counted, model=model,
                          cap=cap, cache=lambda total: CacheUse(read_tokens=cached),
                          now_s=ctx.now_s, id_prefix="", call_prefix="call_emu_")
    return generation, cached


def generate_content_body(ctx: Ctx, model: str, body: dict[str, Any], path: str
                          ) -> dict[str, Any]:
    """The ``GenerateContentResponse`` for one request body."""
    generation, cached = _run(ctx, model, body, path)
    choice = generation.choices[0]
    parts: list[dict[str, Any]] = []
    if choice.text:
        parts.append({"text": choice.text})
    for call in choice.tool_calls:
        parts.append({"functionCall": {"name": call.name, "args": dict(call.arguments)}})
    candidate: dict[str, Any] = {
        "content": {"role": "model", "parts": parts},
        "finishReason": "MAX_TOKENS" if choice.stopped_by_cap else "STOP", "index": 0}
    grounded = _grounded(body)
    if grounded:
        query = _last_user_text(body)[:80] or "spendguard emulator"
        candidate["groundingMetadata"] = {
            "webSearchQueries": [query],
            "groundingChunks": [{"web": {"uri": "https://example.invalid/result",
                                         "title": "[spendguard emulator] search result"}}]}
    prompt = generation.prompt_tokens + cached
    usage: dict[str, Any] = {
        "promptTokenCount": prompt,
        "candidatesTokenCount": choice.output_tokens - choice.reasoning_tokens,
        "totalTokenCount": prompt + choice.output_tokens,
        "promptTokensDetails": [{"modality": "TEXT", "tokenCount": prompt}]}
    if cached:
        usage["cachedContentTokenCount"] = cached
        usage["cacheTokensDetails"] = [{"modality": "TEXT", "tokenCount": cached}]
    if choice.reasoning_tokens:
        usage["thoughtsTokenCount"] = choice.reasoning_tokens
    if grounded:
        usage["toolUsePromptTokenCount"] = SEARCH_RESULT_TOKENS
        usage["totalTokenCount"] += SEARCH_RESULT_TOKENS
    return {"candidates": [candidate], "usageMetadata": usage, "modelVersion": model,
            "responseId": ctx.state.ids.new("resp_emu_", 16)}


def _stream_frames(response: dict[str, Any]) -> list[bytes]:
    """SSE frames for a finished response: the text in pieces, usage on every chunk, the
    finish reason and grounding on the last."""
    candidate = response["candidates"][0]
    usage = response["usageMetadata"]
    texts = [part["text"] for part in candidate["content"]["parts"] if "text" in part]
    calls = [part for part in candidate["content"]["parts"] if "functionCall" in part]
    chunks: list[list[dict[str, Any]]] = [[{"text": piece}] for text in texts
                                          for piece in pieces(text)] or [[]]
    chunks[-1] = chunks[-1] + calls
    frames = []
    for index, parts in enumerate(chunks):
        last = index == len(chunks) - 1
        partial = {"promptTokenCount": usage["promptTokenCount"],
                   "totalTokenCount": usage["promptTokenCount"]}
        chunk_candidate: dict[str, Any] = {"content": {"role": "model", "parts": parts},
                                           "index": 0}
        if last:
            chunk_candidate = {**candidate, "content": {"role": "model", "parts": parts}}
        frames.append(sse_frame({"candidates": [chunk_candidate],
                                 "usageMetadata": usage if last else partial,
                                 "modelVersion": response["modelVersion"],
                                 "responseId": response["responseId"]}))
    return frames


def generate_content(ctx: Ctx, params: dict[str, str]) -> WireResponse:
    body = ctx.request.json()
    response = generate_content_body(ctx, params["model"], body, ctx.request.path)
    return json_response("gemini", ctx.request_id, response)


def stream_generate_content(ctx: Ctx, params: dict[str, str]) -> WireResponse:
    body = ctx.request.json()
    response = generate_content_body(ctx, params["model"], body, ctx.request.path)
    if ctx.request.query.get("alt") != "sse":
        return json_response("gemini", ctx.request_id, [response])
    return sse_response("gemini", ctx.request_id, _stream_frames(response))


def count_tokens(ctx: Ctx, params: dict[str, str]) -> WireResponse:
    body = ctx.request.json()
    request = _field(body, "generateContentRequest") or body
    total = input_tokens("gemini", ctx.request.path, request)
    return json_response("gemini", ctx.request_id, {"totalTokens": total})


def _embed_contents(body: dict[str, Any]) -> list[Any]:
    requests = _field(body, "requests")
    if isinstance(requests, list):
        return [_field(request, "content") for request in requests]
    return [_field(body, "content")]


def embed(ctx: Ctx, params: dict[str, str]) -> WireResponse:
    body = ctx.request.json()
    contents = _embed_contents(body)
    embeddings = []
    for content in contents:
        seed = sum(json.dumps(content).encode()) % 997
        embeddings.append({"values": [math.sin(seed + i) / 10 for i in range(8)]})
    if ctx.request.path.endswith(":embedContent"):
        return json_response("gemini", ctx.request_id, {"embedding": embeddings[0]})
    return json_response("gemini", ctx.request_id, {"embeddings": embeddings})


def _ttl_s(body: dict[str, Any]) -> float:
    ttl = _field(body, "ttl")
    if ttl is None:
        return 3600.0
    if not isinstance(ttl, str) or not ttl.endswith("s"):
        raise EmulatedError(400, f"ttl: expected a duration such as '3600s', got {ttl!r}")
    try:
        return float(ttl[:-1])
    except ValueError as exc:
        raise EmulatedError(400, f"ttl: expected a duration such as '3600s', got {ttl!r}"
                            ) from exc


def _cache_json(cache: dict[str, Any]) -> dict[str, Any]:
    def stamp(seconds: float) -> str:
        return datetime.fromtimestamp(seconds, UTC).isoformat().replace("+00:00", "Z")

    return {"name": f"cachedContents/{cache['id']}", "model": f"models/{cache['model']}",
            "displayName": cache.get("display_name") or "", "createTime": stamp(cache["created_s"]),
            "updateTime": stamp(cache["updated_s"]), "expireTime": stamp(cache["expire_s"]),
            "usageMetadata": {"totalTokenCount": cache["tokens"]}}


def create_cache(ctx: Ctx, params: dict[str, str]) -> WireResponse:
    body = ctx.request.json()
    model = str(_field(body, "model") or "").rpartition("/")[2]
    if not model:
        raise EmulatedError(400, "model: required")
    counted = {key: value for key, value in body.items()
               if key not in ("model", "ttl", "expireTime", "displayName", "display_name")}
    tokens = input_tokens("gemini", ctx.request.path, counted)
    cache_id = ctx.state.ids.new("", 12)
    cache = {"id": cache_id, "model": model, "tokens": tokens, "created_s": ctx.now_s,
             "updated_s": ctx.now_s, "expire_s": ctx.now_s + _ttl_s(body),
             "display_name": _field(body, "displayName")}
    _caches(ctx.state)[cache_id] = cache
    return json_response("gemini", ctx.request_id, _cache_json(cache))


def _cache(ctx: Ctx, cache_id: str) -> dict[str, Any]:
    cache = _caches(ctx.state).get(cache_id)
    if cache is None:
        raise EmulatedError(404, f"CachedContent not found: cachedContents/{cache_id}")
    return cache


def get_cache(ctx: Ctx, params: dict[str, str]) -> WireResponse:
    return json_response("gemini", ctx.request_id, _cache_json(_cache(ctx, params["id"])))


def update_cache(ctx: Ctx, params: dict[str, str]) -> WireResponse:
    cache = _cache(ctx, params["id"])
    cache["expire_s"] = ctx.now_s + _ttl_s(ctx.request.json())
    cache["updated_s"] = ctx.now_s
    return json_response("gemini", ctx.request_id, _cache_json(cache))


def delete_cache(ctx: Ctx, params: dict[str, str]) -> WireResponse:
    _cache(ctx, params["id"])
    del _caches(ctx.state)[params["id"]]
    return json_response("gemini", ctx.request_id, {})


def upload_file(ctx: Ctx, params: dict[str, str]) -> WireResponse:
    """The resumable upload protocol: ``start`` answers the upload URL, the last chunk
    (``upload, finalize``) the stored file."""
    command = ctx.request.headers.get("x-goog-upload-command", "")
    files: dict[str, dict[str, Any]] = ctx.state.extensions.setdefault("gemini_files", {})
    if "start" in command:
        file_id = ctx.state.ids.new("", 12)
        declared = _field(ctx.request.json(), "file") or {}
        files[file_id] = {"name": f"files/{file_id}", "state": "ACTIVE",
                          "mimeType": _field(declared, "mimeType") or "text/plain",
                          "uri": f"{ctx.request.origin}/v1beta/files/{file_id}",
                          "sizeBytes": "0"}
        response = json_response("gemini", ctx.request_id, {})
        response.headers["x-goog-upload-url"] = (f"{ctx.request.origin}{ctx.request.path}"
                                                 f"?upload_id={file_id}")
        response.headers["x-goog-upload-status"] = "active"
        return response
    stored = files.get(ctx.request.query.get("upload_id", ""))
    if stored is None:
        raise EmulatedError(404, "Upload not found (spendguard emulator)")
    stored["sizeBytes"] = str(int(stored["sizeBytes"]) + len(ctx.request.body))
    response = json_response("gemini", ctx.request_id, {"file": stored})
    response.headers["x-goog-upload-status"] = "final" if "finalize" in command else "active"
    return response


_CACHE_PATH = r"/v1(?:beta1?)?/cachedContents"
GEMINI_ROUTES: list[tuple[str, str, Any]] = [
    ("POST", _MODEL_PATH + ":generateContent", generate_content),
    ("POST", _MODEL_PATH + ":streamGenerateContent", stream_generate_content),
    ("POST", _MODEL_PATH + ":countTokens", count_tokens),
    ("POST", _MODEL_PATH + ":(?:embedContent|batchEmbedContents)", embed),
    ("POST", r"/upload/v1(?:beta1?)?/files", upload_file),
    ("POST", _CACHE_PATH, create_cache),
    ("GET", _CACHE_PATH + "/{id}", get_cache),
    ("PATCH", _CACHE_PATH + "/{id}", update_cache),
    ("DELETE", _CACHE_PATH + "/{id}", delete_cache),
]
"""(method, path pattern, handler) for :func:`spendguard.testing.routes.route`."""
