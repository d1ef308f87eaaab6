"""Anthropic's Message Batches through the official SDK: one POST carries every request.

Results are read once ``processing_status`` is ``ended``: one line per request, ``succeeded`` /
``errored`` / ``canceled`` / ``expired``, in any order, matched by ``custom_id``. The API keeps
no metadata on a batch, so a submission lost in a crash cannot be found again (:meth:`find`).
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

import anthropic
from anthropic.types import Message

from spendguard._core.errors import ConfigError, SpendguardError
from spendguard._costing.usage import Usage, usage_from
from spendguard._providers.anthropic import endpoints
from spendguard._strategies.batch.requests import request_body
from spendguard._strategies.batch.wire import LineOutcome, Snapshot, Submitted

__all__ = ["BATCH_API", "AnthropicBatches"]

# The SDK serialises the body itself: measure with the widest spelling (ASCII escapes, spaced
# separators), so the real body is never larger than counted.
_BODY_OVERHEAD = len(b'{"requests": []}')
_SEPARATOR = len(b", ")
_STATUS = {"succeeded": "succeeded", "errored": "errored", "expired": "expired",
           "canceled": "cancelled"}


def _snapshot(batch: Any) -> Snapshot:
    counts = batch.request_counts
    failed = counts.errored + counts.canceled + counts.expired
    total = counts.processing + counts.succeeded + failed
    return Snapshot(batch.id, batch.processing_status, batch.processing_status == "ended",
                    {"total": total, "done": total - counts.processing, "failed": failed})


def _requests(requests: Sequence[tuple[str, Mapping[str, Any]]],
              path: str) -> list[dict[str, Any]]:
    if path != endpoints.MESSAGES.batch_url:
        raise ConfigError(f"endpoint: Anthropic batches run {endpoints.MESSAGES.batch_url}, "
                          f"not {path!r}")
    return [{"custom_id": custom_id, "params": dict(body)} for custom_id, body in requests]


class AnthropicBatches:
    """Anthropic Message Batches, sync and async."""

    provider = endpoints.PROVIDER
    per_model = False
    window_s = 24 * 3600.0
    # "256 MB" read as decimal megabytes, the smaller reading.
    published_limits: tuple[int, int, int | None] = (100_000, 256_000_000, None)

    def request_body(self, client: Any, params: Mapping[str, Any], where: str
                     ) -> dict[str, Any]:
        return request_body(params, where)

    def line_bytes(self, custom_id: str, path: str, body: Mapping[str, Any]) -> int:
        entry = {"custom_id": custom_id, "params": body}
        return len(json.dumps(entry, ensure_ascii=True).encode()) + _SEPARATOR

    def overhead_bytes(self) -> int:
        return _BODY_OVERHEAD

    def outcome(self, line: Mapping[str, Any], path: str) -> LineOutcome:
        custom_id = str(line.get("custom_id"))
        result = line.get("result") or {}
        status = _STATUS.get(str(result.get("type")), "errored")
        if status == "succeeded" and isinstance(result.get("message"), dict):
            message = result["message"]
            try:
                usage: Usage | None = usage_from("anthropic", dict(line))
            except SpendguardError:
                usage = None  # billed, but unreadable: the caller charges the worst case
            return LineOutcome(custom_id, status, message, None, usage, message.get("id"))
        error = result.get("error") if isinstance(result.get("error"), dict) else None
        if status == "succeeded":  # a success without a message is not a success
            status, error = "errored", {"message": "succeeded result without a message"}
        return LineOutcome(custom_id, status, error=error or {"type": result.get("type")})

    def response_object(self, path: str, body: Mapping[str, Any]) -> Any:
        return Message.construct(**body)

    def transient(self, exc: BaseException) -> bool:
        return isinstance(exc, anthropic.APIConnectionError | anthropic.InternalServerError
                          | anthropic.RateLimitError)

    # -- sync ----------------------------------------------------------------------------

    def submit(self, client: Any, job_id: str, path: str,
               requests: Sequence[tuple[str, Mapping[str, Any]]],
               headers: Mapping[str, str]) -> Submitted:
        entries = _requests(requests, path)
        batch = client.messages.batches.create(requests=entries, extra_headers=dict(headers))
        return Submitted(_snapshot(batch))

    def retrieve(self, client: Any, batch_id: str) -> Snapshot:
        return _snapshot(client.messages.batches.retrieve(batch_id))

    def cancel(self, client: Any, batch_id: str) -> Snapshot:
        return _snapshot(client.messages.batches.cancel(batch_id))

    def results(self, client: Any, snapshot: Snapshot) -> list[dict[str, Any]]:
        return [line.to_dict(mode="json")
                for line in client.messages.batches.results(snapshot.batch_id)]

    def find(self, client: Any, job_id: str) -> str | None:
        return None

    def call(self, client: Any, path: str, body: Mapping[str, Any]) -> Any:
        return client.post(path, body=dict(body), cast_to=Message)

    # -- async ---------------------------------------------------------------------------

    async def asubmit(self, client: Any, job_id: str, path: str,
                      requests: Sequence[tuple[str, Mapping[str, Any]]],
                      headers: Mapping[str, str]) -> Submitted:
        entries = _requests(requests, path)
        batch = await client.messages.batches.create(requests=entries,
                                                     extra_headers=dict(headers))
        return Submitted(_snapshot(batch))

    async def aretrieve(self, client: Any, batch_id: str) -> Snapshot:
        return _snapshot(await client.messages.batches.retrieve(batch_id))

    async def acancel(self, client: Any, batch_id: str) -> Snapshot:
        return _snapshot(await client.messages.batches.cancel(batch_id))

    async def aresults(self, client: Any, snapshot: Snapshot) -> list[dict[str, Any]]:
        decoder = await client.messages.batches.results(snapshot.batch_id)
        return [line.to_dict(mode="json") async for line in decoder]

    async def afind(self, client: Any, job_id: str) -> str | None:
        return None

    async def acall(self, client: Any, path: str, body: Mapping[str, Any]) -> Any:
        return await client.post(path, body=dict(body), cast_to=Message)


BATCH_API = AnthropicBatches
"""The class :func:`spendguard._strategies.batch.wire.api_for` finds this wire by."""
