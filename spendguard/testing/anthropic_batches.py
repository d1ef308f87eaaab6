"""Anthropic Message Batches: create, retrieve, list, cancel, delete and results (JSONL).

As with OpenAI batches, every request is answered at creation (through the same Messages code,
with ``usage.service_tier = "batch"``) and the clock reveals the outcome: ``in_progress`` for
``batch_completion_s``, then ``ended`` with ``succeeded`` / ``errored`` results, ``expired``
ones past 24 hours, ``canceled`` ones after a cancel. Per the API, the counts other than
``processing`` stay 0 until the whole batch has ended.
"""

from __future__ import annotations

import json
import random
import re
from dataclasses import dataclass
from typing import Any

from spendguard.testing.anthropic_api import message_body
from spendguard.testing.batch_timeline import Timeline, rfc3339
from spendguard.testing.state import Ctx, State
from spendguard.testing.wire import EmulatedError, WireResponse, json_response

__all__ = [
    "batch_results",
    "cancel_batch",
    "create_batch",
    "delete_batch",
    "list_batches",
    "retrieve_batch",
]

_CUSTOM_ID = re.compile(r"^[a-zA-Z0-9_-]{1,64}$")


@dataclass(slots=True)
class AnthropicBatch:
    id: str
    timeline: Timeline
    results: list[dict[str, Any]]
    """One ``{"custom_id", "result"}`` per request, in request order, as if all succeeded or
    errored; expiry and cancellation are applied when the results are read."""
    cancel_s: float | None = None

    def ended_s(self, cancel_delay_s: float) -> float:
        """When processing ends (epoch seconds)."""
        timeline = self.timeline
        end = min(timeline.done_s, timeline.expires_s) if timeline.expires else timeline.done_s
        if self.cancel_s is not None:
            end = min(end, self.cancel_s + cancel_delay_s)
        return end

    def outcomes(self, cancel_delay_s: float) -> list[dict[str, Any]]:
        """Every request's final result line."""
        end = self.ended_s(cancel_delay_s)
        cut = self.timeline.finished_by(self.cancel_s if self.cancel_s is not None
                                        and self.cancel_s <= end else end)
        fate = "canceled" if self.cancel_s is not None and self.cancel_s <= end else "expired"
        return [line if index < cut else {"custom_id": line["custom_id"],
                                          "result": {"type": fate}}
                for index, line in enumerate(self.results)]


def _answer(state: State, request: dict[str, Any], now_s: float) -> dict[str, Any]:
    custom_id, params = request["custom_id"], request.get("params")
    rate = state.config.batch_error_rate
    try:
        if not isinstance(params, dict):
            raise EmulatedError(400, "params: Field required")
        if params.get("stream"):
            raise EmulatedError(400, "params.stream: streaming is not supported in batches")
        if rate and random.Random(f"{state.config.seed}:{custom_id}").random() < rate:
            raise EmulatedError(500, "Internal server error (spendguard emulator "
                                     "batch_error_rate).")
        message = message_body(state, params, now_s, batch=True)
        return {"custom_id": custom_id, "result": {"type": "succeeded", "message": message}}
    except EmulatedError as error:
        body = error.anthropic_body(state.ids.new("req_emu_"))
        return {"custom_id": custom_id, "result": {"type": "errored", "error": body}}


def create_batch(ctx: Ctx, params: dict[str, str]) -> WireResponse:
    limits, state = ctx.config.batch_limits, ctx.state
    if len(ctx.request.body) > limits.anthropic_max_bytes:
        raise EmulatedError(413, f"Request exceeds the maximum size of "
                                 f"{limits.anthropic_max_bytes:,} bytes for a Message Batch "
                                 "(256 MB).")
    requests = ctx.request.json().get("requests")
    if not isinstance(requests, list) or not requests:
        raise EmulatedError(400, "requests: Field required (at least one request)")
    if len(requests) > limits.anthropic_max_requests:
        raise EmulatedError(400, f"requests: a Message Batch can contain at most "
                                 f"{limits.anthropic_max_requests:,} requests; got "
                                 f"{len(requests):,}.")
    seen: set[str] = set()
    for index, request in enumerate(requests):
        custom_id = request.get("custom_id") if isinstance(request, dict) else None
        if not isinstance(custom_id, str) or not _CUSTOM_ID.match(custom_id):
            raise EmulatedError(400, f"requests.{index}.custom_id: must match "
                                     "^[a-zA-Z0-9_-]{1,64}$")
        if custom_id in seen:
            raise EmulatedError(400, f"requests: custom_id '{custom_id}' is used more than "
                                     "once; each request needs a unique custom_id.")
        seen.add(custom_id)
    batch = AnthropicBatch(state.ids.new("msgbatch_emu_"),
                           Timeline(ctx.now_s, ctx.config.batch_completion_s, len(requests),
                                    edge_fraction=0.0),
                           [_answer(state, request, ctx.now_s) for request in requests])
    state.anthropic_batches[batch.id] = batch
    return json_response("anthropic", ctx.request_id, _batch_json(ctx, batch))


def _batch_json(ctx: Ctx, batch: AnthropicBatch) -> dict[str, Any]:
    delay = ctx.config.batch_cancel_s
    ended_s = batch.ended_s(delay)
    ended = ctx.now_s >= ended_s
    counts = {"processing": len(batch.results), "succeeded": 0, "errored": 0, "canceled": 0,
              "expired": 0}
    if ended:
        counts["processing"] = 0
        for line in batch.outcomes(delay):
            counts[line["result"]["type"]] += 1
    status = "ended" if ended else ("canceling" if batch.cancel_s is not None
                                    else "in_progress")
    return {"id": batch.id, "type": "message_batch", "processing_status": status,
            "request_counts": counts, "created_at": rfc3339(batch.timeline.created_s),
            "expires_at": rfc3339(batch.timeline.expires_s),
            "ended_at": rfc3339(ended_s) if ended else None,
            "cancel_initiated_at": rfc3339(batch.cancel_s), "archived_at": None,
            "results_url": f"{ctx.request.origin}/v1/messages/batches/{batch.id}/results"
            if ended else None}


def _get(ctx: Ctx, batch_id: str) -> AnthropicBatch:
    batch = ctx.state.anthropic_batches.get(batch_id)
    if not isinstance(batch, AnthropicBatch):
        raise EmulatedError(404, f"Message Batch '{batch_id}' not found.")
    return batch


def retrieve_batch(ctx: Ctx, params: dict[str, str]) -> WireResponse:
    return json_response("anthropic", ctx.request_id, _batch_json(ctx, _get(ctx, params["id"])))


def cancel_batch(ctx: Ctx, params: dict[str, str]) -> WireResponse:
    batch = _get(ctx, params["id"])
    if batch.cancel_s is None and ctx.now_s < batch.ended_s(ctx.config.batch_cancel_s):
        batch.cancel_s = ctx.now_s
    return json_response("anthropic", ctx.request_id, _batch_json(ctx, batch))


def delete_batch(ctx: Ctx, params: dict[str, str]) -> WireResponse:
    batch = _get(ctx, params["id"])
    if ctx.now_s < batch.ended_s(ctx.config.batch_cancel_s):
        raise EmulatedError(400, f"Message Batch '{batch.id}' is still processing; cancel it "
                                 "and wait until it has ended before deleting it.")
    del ctx.state.anthropic_batches[batch.id]
    return json_response("anthropic", ctx.request_id,
                         {"id": batch.id, "type": "message_batch_deleted"})


def batch_results(ctx: Ctx, params: dict[str, str]) -> WireResponse:
    batch = _get(ctx, params["id"])
    if ctx.now_s < batch.ended_s(ctx.config.batch_cancel_s):
        raise EmulatedError(400, f"Message Batch '{batch.id}' has not ended yet; results are "
                                 "available once processing_status is 'ended'.")
    data = b"".join(json.dumps(line).encode() + b"\n"
                    for line in batch.outcomes(ctx.config.batch_cancel_s))
    return json_response("anthropic", ctx.request_id, data, content_type="application/binary")


def list_batches(ctx: Ctx, params: dict[str, str]) -> WireResponse:
    query = ctx.request.query
    batches = sorted((b for b in ctx.state.anthropic_batches.values()
                      if isinstance(b, AnthropicBatch)),
                     key=lambda b: b.timeline.created_s, reverse=True)
    ids = [b.id for b in batches]
    if query.get("after_id") in ids:
        batches = batches[ids.index(query["after_id"]) + 1:]
    elif query.get("before_id") in ids:
        batches = batches[:ids.index(query["before_id"])]
    limit = int(query.get("limit", "20"))
    page = [_batch_json(ctx, b) for b in batches[:limit]]
    return json_response("anthropic", ctx.request_id, {
        "data": page, "has_more": len(batches) > limit,
        "first_id": page[0]["id"] if page else None, "last_id": page[-1]["id"] if page else None})
