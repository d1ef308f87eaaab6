"""Gemini Batch Mode: create (inline requests), get, list, cancel and delete.

As with the other providers' batches, every request is answered at creation (through the same
``generateContent`` code) and the clock reveals the outcome: ``BATCH_STATE_PENDING``, then
``BATCH_STATE_RUNNING`` while the requests finish one after another over
``batch_completion_s``, then ``BATCH_STATE_SUCCEEDED`` with one inline response per request
(``response`` with its ``usageMetadata``, or ``error``), in request order, each with its
request's ``metadata``. A cancel ends the batch (``BATCH_STATE_CANCELLED``) after
``batch_cancel_s``; past the 48-hour window it is ``BATCH_STATE_EXPIRED``. Either way only the
requests finished by then have a response. The shapes are the REST reference's
(ai.google.dev/api/batch-mode): create and get answer an operation named ``batches/{id}``
whose ``metadata`` is the batch, ``batchStats`` counts are int64 strings.
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from typing import Any

from spendguard.testing.batch_timeline import Timeline, rfc3339
from spendguard.testing.gemini_api import generate_content_body
from spendguard.testing.state import Ctx
from spendguard.testing.wire import EmulatedError, WireResponse, json_response

__all__ = ["GEMINI_BATCH_ROUTES", "WINDOW_S"]

WINDOW_S = 48 * 3600.0
"""A batch not done within 48 hours expires (ai.google.dev/gemini-api/docs/batch-mode)."""
_BATCHES = "gemini_batches"
_TYPE = "type.googleapis.com/google.ai.generativelanguage.v1beta.GenerateContentBatch"
_OUTPUT_TYPE = ("type.googleapis.com/google.ai.generativelanguage.v1beta."
                "GenerateContentBatchOutput")
_VERSION = r"/v1(?:beta1?)?"


@dataclass(slots=True)
class GeminiBatch:
    id: str
    model: str
    display_name: str
    timeline: Timeline
    answers: list[dict[str, Any]]
    """One inline response per request, in request order, as if the batch ran to its end."""
    cancel_s: float | None = None

    def ended_s(self, cancel_delay_s: float) -> float:
        end = (min(self.timeline.done_s, self.timeline.expires_s) if self.timeline.expires
               else self.timeline.done_s)
        if self.cancel_s is not None:
            end = min(end, self.cancel_s + cancel_delay_s)
        return end

    def state(self, now_s: float, cancel_delay_s: float) -> str:
        ended = now_s >= self.ended_s(cancel_delay_s)
        if not ended:
            return "RUNNING" if now_s >= self.timeline.started_s else "PENDING"
        if self.cancel_s is not None and self.cancel_s <= self.ended_s(cancel_delay_s):
            return "CANCELLED"
        return "EXPIRED" if self.timeline.expires else "SUCCEEDED"

    def answered(self, now_s: float, cancel_delay_s: float) -> list[dict[str, Any]]:
        """The responses of the requests finished at ``now_s`` (all of them, once done)."""
        moment = min(now_s, self.ended_s(cancel_delay_s))
        return self.answers[:self.timeline.finished_by(moment)]


def _batches(ctx: Ctx) -> dict[str, GeminiBatch]:
    batches: dict[str, GeminiBatch] = ctx.state.extensions.setdefault(_BATCHES, {})
    return batches


def _answer(ctx: Ctx, model: str, entry: Any, index: int) -> dict[str, Any]:
    metadata = entry.get("metadata") if isinstance(entry, dict) else None
    request = entry.get("request") if isinstance(entry, dict) else None
    answer: dict[str, Any] = {} if metadata is None else {"metadata": metadata}
    rate = ctx.config.batch_error_rate
    try:
        if not isinstance(request, dict):
            raise EmulatedError(400, f"inputConfig.requests.requests[{index}].request: "
                                     "required")
        if rate and random.Random(f"{ctx.config.seed}:gemini:{index}:{metadata}"
                                  ).random() < rate:
            raise EmulatedError(500, "Internal error (spendguard emulator batch_error_rate).")
        body = {key: value for key, value in request.items() if key != "model"}
        answer["response"] = generate_content_body(ctx, model, body,
                                                   f"/v1beta/models/{model}:generateContent")
    except EmulatedError as error:
        answer["error"] = {"code": error.status, "message": error.message}
    return answer


def _operation(ctx: Ctx, batch: GeminiBatch) -> dict[str, Any]:
    delay = ctx.config.batch_cancel_s
    state = batch.state(ctx.now_s, delay)
    answered = batch.answered(ctx.now_s, delay)
    failed = sum(1 for answer in answered if "error" in answer)
    total = len(batch.answers)
    name = f"batches/{batch.id}"
    meta: dict[str, Any] = {
        "@type": _TYPE, "name": name, "model": f"models/{batch.model}",
        "displayName": batch.display_name, "state": f"BATCH_STATE_{state}",
        "createTime": rfc3339(batch.timeline.created_s), "updateTime": rfc3339(ctx.now_s),
        "batchStats": {"requestCount": str(total),
                       "successfulRequestCount": str(len(answered) - failed),
                       "failedRequestCount": str(failed),
                       "pendingRequestCount": str(total - len(answered))}}
    operation: dict[str, Any] = {"name": name, "metadata": meta}
    if state not in ("PENDING", "RUNNING"):
        output = {"inlinedResponses": {"inlinedResponses": answered}}
        meta["endTime"] = rfc3339(batch.ended_s(delay))
        meta["output"] = output
        operation.update(done=True, response={"@type": _OUTPUT_TYPE, **output})
    return operation


def create_batch(ctx: Ctx, params: dict[str, str]) -> WireResponse:
    limits = ctx.config.batch_limits
    if len(ctx.request.body) > limits.gemini_max_bytes:
        raise EmulatedError(400, f"Request payload size exceeds the limit: "
                                 f"{limits.gemini_max_bytes:,} bytes.")
    found = ctx.request.json().get("batch")
    batch: dict[str, Any] = found if isinstance(found, dict) else {}
    config = batch.get("inputConfig")
    holder = config.get("requests") if isinstance(config, dict) else None
    requests = holder.get("requests") if isinstance(holder, dict) else None
    if not isinstance(requests, list) or not requests:
        raise EmulatedError(400, "batch.inputConfig.requests.requests: at least one request "
                                 "is required (the emulator takes inline requests only)")
    if len(requests) > limits.gemini_max_requests:
        raise EmulatedError(400, f"batch.inputConfig.requests: at most "
                                 f"{limits.gemini_max_requests:,} requests; got "
                                 f"{len(requests):,}.")
    model = params["model"]
    batch_id = ctx.state.ids.new("", 16)
    created = GeminiBatch(batch_id, model, str(batch.get("displayName") or ""),
                          Timeline(ctx.now_s, ctx.config.batch_completion_s, len(requests),
                                   edge_fraction=0.0, window_s=WINDOW_S),
                          [_answer(ctx, model, entry, i) for i, entry in enumerate(requests)])
    _batches(ctx)[batch_id] = created
    return json_response("gemini", ctx.request_id, _operation(ctx, created))


def _get(ctx: Ctx, batch_id: str) -> GeminiBatch:
    batch = _batches(ctx).get(batch_id)
    if batch is None:
        raise EmulatedError(404, f"Batch batches/{batch_id} not found.")
    return batch


def get_batch(ctx: Ctx, params: dict[str, str]) -> WireResponse:
    return json_response("gemini", ctx.request_id, _operation(ctx, _get(ctx, params["id"])))


def list_batches(ctx: Ctx, params: dict[str, str]) -> WireResponse:
    size = int(ctx.request.query.get("pageSize", "50"))
    batches = sorted(_batches(ctx).values(), key=lambda b: b.timeline.created_s, reverse=True)
    return json_response("gemini", ctx.request_id,
                         {"operations": [_operation(ctx, b) for b in batches[:size]]})


def cancel_batch(ctx: Ctx, params: dict[str, str]) -> WireResponse:
    batch = _get(ctx, params["id"])
    if batch.cancel_s is None and ctx.now_s < batch.ended_s(ctx.config.batch_cancel_s):
        batch.cancel_s = ctx.now_s
    return json_response("gemini", ctx.request_id, {})


def delete_batch(ctx: Ctx, params: dict[str, str]) -> WireResponse:
    _get(ctx, params["id"])
    del _batches(ctx)[params["id"]]
    return json_response("gemini", ctx.request_id, {})


GEMINI_BATCH_ROUTES: list[tuple[str, str, Any]] = [
    ("POST", _VERSION + r"/models/(?P<model>[^/:]+):batchGenerateContent", create_batch),
    ("GET", _VERSION + "/batches", list_batches),
    ("GET", _VERSION + "/batches/{id}", get_batch),
    ("POST", _VERSION + "/batches/{id}:cancel", cancel_batch),
    ("DELETE", _VERSION + "/batches/{id}", delete_batch),
]
"""(method, path pattern, handler) for :func:`spendguard.testing.routes.route`."""
