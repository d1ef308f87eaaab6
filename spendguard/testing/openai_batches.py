"""OpenAI Batches: create, retrieve, list and cancel, with status driven by the clock.

Every line is answered when the batch is created (same generation code as the live endpoints,
so usage is counted and cached the same way); the clock decides how much of that is visible.
Status runs validating -> in_progress -> finalizing -> completed over ``batch_completion_s``;
past the 24-hour window it is ``expired`` with the unfinished lines in the error file. Usage in
the result bodies is tokens: the batch discount is a price matter, applied by spendguard's cost.
"""

from __future__ import annotations

import json
import random
from dataclasses import dataclass, field
from typing import Any

from spendguard.testing.batch_timeline import Timeline
from spendguard.testing.files import get_file, put_file
from spendguard.testing.openai_api import chat_completion_body, embeddings_body
from spendguard.testing.openai_responses import response_body
from spendguard.testing.state import Ctx, State
from spendguard.testing.wire import EmulatedError, WireResponse, json_response

__all__ = ["cancel_batch", "create_batch", "list_batches", "retrieve_batch"]

_ANSWER = {"/v1/chat/completions": chat_completion_body, "/v1/responses": response_body,
           "/v1/embeddings": embeddings_body}
_UNRUN = {"expired": ("batch_expired", "This request could not be executed before the "
                                       "completion window expired."),
          "cancelled": ("batch_cancelled", "This request was not executed because the batch "
                                           "was cancelled.")}


@dataclass(slots=True)
class _Line:
    custom_id: str
    status_code: int
    body: dict[str, Any]


@dataclass(slots=True)
class OpenAIBatch:
    id: str
    request: dict[str, Any]
    timeline: Timeline
    lines: list[_Line]
    errors: list[dict[str, Any]]
    cancel_s: float | None = None
    files: dict[str, str | None] = field(default_factory=dict)

    def status(self, now_s: float, cancel_delay_s: float) -> tuple[str, float]:
        """The status at ``now_s``, and the moment the requests stopped being worked on."""
        timeline = self.timeline
        if self.errors:
            return ("validating", now_s) if now_s < timeline.started_s else (
                "failed", timeline.started_s)
        if self.cancel_s is not None:
            state = "cancelled" if now_s >= self.cancel_s + cancel_delay_s else "cancelling"
            return state, self.cancel_s
        if timeline.expires and now_s >= timeline.expires_s:
            return "expired", timeline.expires_s
        for state, start in (("completed", timeline.done_s),
                             ("finalizing", timeline.finalizing_s),
                             ("in_progress", timeline.started_s)):
            if now_s >= start:
                return state, now_s
        return "validating", now_s


def _validate(lines: list[bytes], endpoint: str) -> tuple[list[dict[str, Any]], list[Any]]:
    errors: list[dict[str, Any]] = []
    parsed, seen = [], set()
    for number, raw in enumerate(lines, start=1):
        try:
            line = json.loads(raw)
        except ValueError:
            line = None
        problem = None
        if not isinstance(line, dict):
            problem = ("invalid_json_line", "This line is not parseable as valid JSON.")
        elif not isinstance(line.get("custom_id"), str) or not isinstance(line.get("body"), dict):
            problem = ("missing_required_parameter", "Each line needs a custom_id and a body.")
        elif line.get("method") != "POST" or line.get("url") != endpoint:
            problem = ("invalid_url", f"The URL provided for this request does not match the "
                                      f"batch endpoint {endpoint}.")
        elif line["custom_id"] in seen:
            problem = ("duplicate_custom_id", "The custom_id for this request is a duplicate "
                                              "of another request.")
        if problem:
            errors.append({"code": problem[0], "line": number, "message": problem[1],
                           "param": None})
        else:
            seen.add(line["custom_id"])
            parsed.append(line)
    if not lines:
        errors.append({"code": "empty_file", "line": None, "message": "The batch input file "
                       "is empty.", "param": None})
    return errors, parsed


def _answer(state: State, endpoint: str, line: dict[str, Any],
            now_s: float) -> _Line:
    rate = state.config.batch_error_rate
    draw = random.Random(f"{state.config.seed}:{line['custom_id']}").random()
    try:
        if rate and draw < rate:
            raise EmulatedError(500, "The server had an error processing your request "
                                     "(spendguard emulator batch_error_rate).")
        return _Line(line["custom_id"], 200, _ANSWER[endpoint](state, line["body"], now_s))
    except EmulatedError as error:
        return _Line(line["custom_id"], error.status, error.openai_body())


def create_batch(ctx: Ctx, params: dict[str, str]) -> WireResponse:
    body, state, limits = ctx.request.json(), ctx.state, ctx.config.batch_limits
    endpoint = body.get("endpoint")
    if endpoint not in _ANSWER:
        raise EmulatedError(400, f"The emulator runs batches for {sorted(_ANSWER)}; got "
                                 f"endpoint={endpoint!r}.", param="endpoint")
    if body.get("completion_window") != "24h":
        raise EmulatedError(400, "completion_window must be '24h'.", param="completion_window")
    source = get_file(state, str(body.get("input_file_id")))
    if len(source.data) > limits.openai_max_file_bytes:
        raise EmulatedError(400, f"The input file is {len(source.data):,} bytes; a batch input "
                                 f"file can be at most {limits.openai_max_file_bytes:,} bytes "
                                 "(200 MB).", param="input_file_id")
    raw_lines = [line for line in source.data.splitlines() if line.strip()]
    if len(raw_lines) > limits.openai_max_requests:
        raise EmulatedError(400, f"The input file contains {len(raw_lines):,} requests; a batch "
                                 f"can contain at most {limits.openai_max_requests:,}.",
                            param="input_file_id")
    errors, lines = _validate(raw_lines, endpoint)
    if endpoint == "/v1/embeddings":
        inputs = sum(len(x) if isinstance(x := line["body"].get("input"), list)
                     and x and not isinstance(x[0], int) else 1 for line in lines)
        if inputs > limits.openai_max_embedding_inputs:
            raise EmulatedError(400, f"The batch has {inputs:,} embedding inputs; at most "
                                     f"{limits.openai_max_embedding_inputs:,} are allowed.",
                                param="input_file_id")
    batch_id = state.ids.new("batch_emu_")
    answered = [] if errors else [_answer(state, endpoint, line, ctx.now_s)
                                  for line in lines]
    models = {line["body"].get("model") for line in lines}
    batch = OpenAIBatch(batch_id, {
        "endpoint": endpoint, "input_file_id": source.id, "completion_window": "24h",
        "metadata": body.get("metadata"), "model": models.pop() if len(models) == 1 else None,
    }, Timeline(ctx.now_s, ctx.config.batch_completion_s, len(lines)), answered, errors)
    state.openai_batches[batch_id] = batch
    return json_response("openai", ctx.request_id, _batch_json(state, batch, ctx.now_s))


def _usage(lines: list[_Line]) -> dict[str, Any]:
    totals = {"input": 0, "cached": 0, "output": 0, "reasoning": 0}
    for line in lines:
        usage = line.body.get("usage") if line.status_code == 200 else None
        if not usage:
            continue
        totals["input"] += usage.get("prompt_tokens", usage.get("input_tokens", 0))
        totals["output"] += usage.get("completion_tokens", usage.get("output_tokens", 0))
        details = usage.get("prompt_tokens_details") or usage.get("input_tokens_details") or {}
        totals["cached"] += details.get("cached_tokens", 0)
        out_details = usage.get("completion_tokens_details") or usage.get(
            "output_tokens_details") or {}
        totals["reasoning"] += out_details.get("reasoning_tokens", 0)
    return {"input_tokens": totals["input"], "output_tokens": totals["output"],
            "total_tokens": totals["input"] + totals["output"],
            "input_tokens_details": {"cached_tokens": totals["cached"]},
            "output_tokens_details": {"reasoning_tokens": totals["reasoning"]}}


def _write_files(state: State, batch: OpenAIBatch, status: str, ran: int,
                 now_s: float) -> None:
    """Write the output and error files once, when the batch reaches its end."""
    if batch.files:
        return
    output: list[dict[str, Any]] = []
    failures: list[dict[str, Any]] = []
    for index, line in enumerate(batch.lines):
        record: dict[str, Any] = {"id": state.ids.new("batch_req_emu_"),
                                  "custom_id": line.custom_id, "error": None}
        if index >= ran:
            code, message = _UNRUN[status]
            failures.append({**record, "response": None,
                             "error": {"code": code, "message": message}})
            continue
        record["response"] = {"status_code": line.status_code,
                              "request_id": state.ids.new("req_emu_"), "body": line.body}
        (output if line.status_code == 200 else failures).append(record)
    for kind, records in (("output", output), ("error", failures)):
        data = b"".join(json.dumps(r).encode() + b"\n" for r in records)
        batch.files[kind] = put_file(state, filename=f"{batch.id}_{kind}.jsonl",
                                     purpose="batch_output", data=data,
                                     now_s=now_s).id if records else None


def _batch_json(state: State, batch: OpenAIBatch, now_s: float) -> dict[str, Any]:
    timeline = batch.timeline
    status, stopped_s = batch.status(now_s, state.config.batch_cancel_s)
    ran = timeline.finished_by(stopped_s)
    terminal = status in ("completed", "expired", "cancelled")
    if terminal:
        _write_files(state, batch, status, ran, now_s)
    failed = sum(1 for line in batch.lines[:ran] if line.status_code != 200)
    if terminal:
        failed += len(batch.lines) - ran
    times: dict[str, float | None] = {
        "in_progress_at": timeline.started_s if now_s >= timeline.started_s
        and not batch.errors else None,
        "finalizing_at": timeline.finalizing_s if status in ("finalizing", "completed") else None,
        "completed_at": timeline.done_s if status == "completed" else None,
        "failed_at": timeline.started_s if status == "failed" else None,
        "expired_at": timeline.expires_s if status == "expired" else None,
        "cancelling_at": batch.cancel_s,
        "cancelled_at": batch.cancel_s + state.config.batch_cancel_s
        if status == "cancelled" and batch.cancel_s is not None else None,
    }
    return {"id": batch.id, "object": "batch", **batch.request, "status": status,
            "created_at": int(timeline.created_s), "expires_at": int(timeline.expires_s),
            **{name: None if t is None else int(t) for name, t in times.items()},
            "output_file_id": batch.files.get("output"), "error_file_id": batch.files.get("error"),
            "errors": {"object": "list", "data": batch.errors} if batch.errors else None,
            "request_counts": {"total": len(batch.lines), "completed": ran - sum(
                1 for line in batch.lines[:ran] if line.status_code != 200), "failed": failed},
            "usage": _usage(batch.lines[:ran]) if terminal else None}


def _get(ctx: Ctx, batch_id: str) -> OpenAIBatch:
    batch = ctx.state.openai_batches.get(batch_id)
    if batch is None:
        raise EmulatedError(404, f"No batch found with id '{batch_id}'.")
    assert isinstance(batch, OpenAIBatch)
    return batch


def retrieve_batch(ctx: Ctx, params: dict[str, str]) -> WireResponse:
    return json_response("openai", ctx.request_id,
                         _batch_json(ctx.state, _get(ctx, params["id"]), ctx.now_s))


def cancel_batch(ctx: Ctx, params: dict[str, str]) -> WireResponse:
    batch = _get(ctx, params["id"])
    status, _ = batch.status(ctx.now_s, ctx.config.batch_cancel_s)
    if status not in ("validating", "in_progress", "finalizing"):
        raise EmulatedError(400, f"Cannot cancel a batch with status '{status}'.")
    batch.cancel_s = ctx.now_s
    return json_response("openai", ctx.request_id, _batch_json(ctx.state, batch, ctx.now_s))


def list_batches(ctx: Ctx, params: dict[str, str]) -> WireResponse:
    batches = sorted(ctx.state.openai_batches.values(),
                     key=lambda b: b.timeline.created_s, reverse=True)
    after = ctx.request.query.get("after")
    if after is not None:
        ids = [b.id for b in batches]
        batches = batches[ids.index(after) + 1:] if after in ids else []
    limit = int(ctx.request.query.get("limit", "20"))
    page = [_batch_json(ctx.state, b, ctx.now_s) for b in batches[:limit]]
    return json_response("openai", ctx.request_id, {
        "object": "list", "data": page, "has_more": len(batches) > limit,
        "first_id": page[0]["id"] if page else None, "last_id": page[-1]["id"] if page else None})
