"""Platform paths in the emulator: Azure OpenAI deployments, Claude on Bedrock and Vertex AI.

Each answers as the platform's wire does, reusing the OpenAI and Anthropic handlers with the
model taken from the path: Azure ``/openai/deployments/{name}/chat/completions`` (the
deployment name is reported as the model), Bedrock ``/model/{id}/invoke`` (JSON) and
``/model/{id}/invoke-with-response-stream`` (AWS event-stream frames, sent one at a time), and
Vertex ``…/publishers/anthropic/models/{model}:rawPredict`` / ``:streamRawPredict`` (SSE).
"""

from __future__ import annotations

import dataclasses
import json
import re
from collections.abc import Callable
from typing import Any
from urllib.parse import unquote

from spendguard._costing.eventstream import EVENT_STREAM_TYPE
from spendguard.testing import anthropic_api, openai_api
from spendguard.testing.eventstream import bedrock_chunk_frame
from spendguard.testing.state import Ctx
from spendguard.testing.wire import WireResponse, json_response, sse_response

__all__ = ["PLATFORM_ROUTES"]

Handler = Callable[[Ctx, dict[str, str]], WireResponse]


def _with_body(ctx: Ctx, **fields: Any) -> tuple[Ctx, dict[str, Any]]:
    body = {**ctx.request.json(), **fields}
    request = dataclasses.replace(ctx.request, body=json.dumps(body).encode())
    return dataclasses.replace(ctx, request=request), body


def azure_chat(ctx: Ctx, params: dict[str, str]) -> WireResponse:
    routed, _ = _with_body(ctx, model=unquote(params["name"]))
    return openai_api.chat_completions(routed, {})


def _claude(ctx: Ctx, model: str, *, stream: bool) -> tuple[dict[str, Any], bool]:
    body = {**ctx.request.json(), "model": unquote(model)}
    stream = stream or bool(body.pop("stream", False))
    return anthropic_api.message_body(ctx.state, body, ctx.now_s), stream


def bedrock_invoke(ctx: Ctx, params: dict[str, str]) -> WireResponse:
    stream = params["kind"] == "invoke-with-response-stream"
    message, _ = _claude(ctx, params["model"], stream=stream)
    if not stream:
        return json_response("anthropic", ctx.request_id, message)
    frames = []
    for frame in anthropic_api.message_frames(message):
        data = next(line for line in frame.decode().splitlines() if line.startswith("data: "))
        frames.append(bedrock_chunk_frame(json.loads(data.removeprefix("data: "))))
    response = sse_response("anthropic", ctx.request_id, frames)
    response.headers["content-type"] = EVENT_STREAM_TYPE
    response.headers.pop("cache-control", None)
    return response


def vertex_predict(ctx: Ctx, params: dict[str, str]) -> WireResponse:
    message, stream = _claude(ctx, params["model"], stream=params["kind"] == "streamRawPredict")
    if stream:
        return sse_response("anthropic", ctx.request_id, anthropic_api.message_frames(message))
    return json_response("anthropic", ctx.request_id, message)


PLATFORM_ROUTES: list[tuple[str, re.Pattern[str], Handler]] = [
    ("POST", re.compile(r"/v1/openai/deployments/(?P<name>[^/]+)/chat/completions"),
     azure_chat),
    ("POST", re.compile(r"/v1/model/(?P<model>[^/]+)/(?P<kind>invoke|invoke-with-response-"
                        r"stream)"), bedrock_invoke),
    ("POST", re.compile(r"/v1/projects/[^/]+/locations/[^/]+/publishers/anthropic/models/"
                        r"(?P<model>[^/:]+):(?P<kind>rawPredict|streamRawPredict)"),
     vertex_predict),
]
