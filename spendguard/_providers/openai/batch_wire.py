"""OpenAI's Batch API through the official SDK: a JSONL file uploaded, then a batch over it.

Result lines come from two files (output and errors), in any order, matched by ``custom_id``.
A request the batch did not run before the 24-hour window closed, or before a cancel, is in
the error file with code ``batch_expired`` / ``batch_cancelled``; a batch that failed
validation has no files, only ``errors``.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

import openai
from openai.types import CreateEmbeddingResponse
from openai.types.chat import ChatCompletion
from openai.types.responses import Response

from spendguard._core.errors import ConfigError, SpendguardError
from spendguard._costing.endpoints import Endpoint
from spendguard._costing.usage import Usage, usage_from
from spendguard._providers.openai import endpoints
from spendguard._strategies.batch.requests import request_body
from spendguard._strategies.batch.wire import LineOutcome, Snapshot, Submitted

__all__ = ["BATCH_API", "RESPONSE_TYPES", "OpenAIBatches", "jsonl_line"]

RESPONSE_TYPES: dict[Endpoint, type[Any]] = {
    endpoints.CHAT: ChatCompletion,
    endpoints.RESPONSES: Response,
    endpoints.EMBEDDINGS: CreateEmbeddingResponse,
}
_ENDED = frozenset({"completed", "expired", "cancelled", "failed"})
_UNRUN = {"batch_expired": "expired", "batch_cancelled": "cancelled"}
_FIND_PAGE = 100


def jsonl_line(custom_id: str, path: str, body: Mapping[str, Any]) -> bytes:
    """One line of a batch input file, newline included."""
    line = {"custom_id": custom_id, "method": "POST", "url": path, "body": body}
    return json.dumps(line, separators=(",", ":"), ensure_ascii=False).encode() + b"\n"


def _snapshot(batch: Any) -> Snapshot:
    counts = batch.request_counts
    completed, failed, total = ((counts.completed, counts.failed, counts.total)
                                if counts is not None else (0, 0, 0))
    errors = tuple(f"line {e.line}: {e.message}" if e.line else str(e.message)
                   for e in (batch.errors.data or [] if batch.errors else []))
    return Snapshot(batch.id, batch.status, batch.status in _ENDED,
                    {"total": total, "done": completed + failed, "failed": failed},
                    batch.output_file_id, batch.error_file_id, errors)


def _response_type(path: str) -> type[Any]:
    """The SDK type of a batch url's responses; refused for a url OpenAI batches do not run."""
    endpoint = Endpoint.from_batch_url(path)
    if endpoint not in RESPONSE_TYPES or endpoint.batch_url != path:
        urls = sorted(str(member.batch_url) for member in RESPONSE_TYPES)
        raise ConfigError(f"endpoint: OpenAI batches run {urls}, not {path!r}")
    return RESPONSE_TYPES[endpoint]


def _sdk_path(path: str) -> str:
    # The client's base URL already ends in /v1.
    return path.removeprefix("/v1")


def _usage(line: Mapping[str, Any], path: str) -> Usage | None:
    try:
        return usage_from("openai", dict(line), endpoint=path)
    except SpendguardError:
        return None  # billed, but unreadable: the caller charges the worst case


def _lines(text: str) -> list[dict[str, Any]]:
    return [json.loads(line) for line in text.splitlines() if line.strip()]


class OpenAIBatches:
    """OpenAI Files + Batches, sync and async."""

    provider = endpoints.PROVIDER
    per_model = True
    window_s = 24 * 3600.0
    # "200 MB" read as decimal megabytes, the smaller reading.
    published_limits: tuple[int, int, int | None] = (50_000, 200_000_000, 50_000)

    def request_body(self, client: Any, params: Mapping[str, Any], where: str
                     ) -> dict[str, Any]:
        return request_body(params, where)

    def line_bytes(self, custom_id: str, path: str, body: Mapping[str, Any]) -> int:
        return len(jsonl_line(custom_id, path, body))

    def overhead_bytes(self) -> int:
        return 0

    def outcome(self, line: Mapping[str, Any], path: str) -> LineOutcome:
        custom_id = str(line.get("custom_id"))
        response = line.get("response") or {}
        error = line.get("error")
        if response.get("status_code") == 200 and isinstance(response.get("body"), dict):
            return LineOutcome(custom_id, "succeeded", response["body"], None,
                               _usage(line, path), response.get("request_id"))
        if isinstance(error, dict) and error.get("code") in _UNRUN:
            return LineOutcome(custom_id, _UNRUN[error["code"]], error=error)
        body = response.get("body") if isinstance(response.get("body"), dict) else None
        detail = error if isinstance(error, dict) else (body or {}).get("error") or {
            "message": f"HTTP {response.get('status_code')}"}
        return LineOutcome(custom_id, "errored", error={"status_code": response.get(
            "status_code"), **detail}, request_id=response.get("request_id"))

    def response_object(self, path: str, body: Mapping[str, Any]) -> Any:
        return _response_type(path).construct(**body)

    def transient(self, exc: BaseException) -> bool:
        return isinstance(exc, openai.APIConnectionError | openai.InternalServerError
                          | openai.RateLimitError)

    @staticmethod
    def _file(job_id: str, requests: Sequence[tuple[str, Mapping[str, Any]]],
              path: str) -> tuple[str, bytes, str]:
        _response_type(path)
        data = b"".join(jsonl_line(custom_id, path, body) for custom_id, body in requests)
        return f"{job_id}.jsonl", data, "application/jsonl"

    # -- sync ----------------------------------------------------------------------------

    def submit(self, client: Any, job_id: str, path: str,
               requests: Sequence[tuple[str, Mapping[str, Any]]],
               headers: Mapping[str, str]) -> Submitted:
        upload = self._file(job_id, requests, path)
        uploaded = client.files.create(file=upload, purpose="batch")
        batch = client.batches.create(input_file_id=uploaded.id, endpoint=path,
                                      completion_window="24h",
                                      metadata={"spendguard_job": job_id},
                                      extra_headers=dict(headers))
        return Submitted(_snapshot(batch), uploaded.id)

    def retrieve(self, client: Any, batch_id: str) -> Snapshot:
        return _snapshot(client.batches.retrieve(batch_id))

    def cancel(self, client: Any, batch_id: str) -> Snapshot:
        return _snapshot(client.batches.cancel(batch_id))

    def results(self, client: Any, snapshot: Snapshot) -> list[dict[str, Any]]:
        return [line for file_id in (snapshot.output_file_id, snapshot.error_file_id)
                if file_id for line in _lines(client.files.content(file_id).text)]

    def find(self, client: Any, job_id: str) -> str | None:
        page = client.batches.list(limit=_FIND_PAGE)
        return next((b.id for b in page.data
                     if (b.metadata or {}).get("spendguard_job") == job_id), None)

    def call(self, client: Any, path: str, body: Mapping[str, Any]) -> Any:
        return client.post(_sdk_path(path), body=dict(body), cast_to=_response_type(path))

    # -- async ---------------------------------------------------------------------------

    async def asubmit(self, client: Any, job_id: str, path: str,
                      requests: Sequence[tuple[str, Mapping[str, Any]]],
                      headers: Mapping[str, str]) -> Submitted:
        upload = self._file(job_id, requests, path)
        uploaded = await client.files.create(file=upload, purpose="batch")
        batch = await client.batches.create(input_file_id=uploaded.id, endpoint=path,
                                            completion_window="24h",
                                            metadata={"spendguard_job": job_id},
                                            extra_headers=dict(headers))
        return Submitted(_snapshot(batch), uploaded.id)

    async def aretrieve(self, client: Any, batch_id: str) -> Snapshot:
        return _snapshot(await client.batches.retrieve(batch_id))

    async def acancel(self, client: Any, batch_id: str) -> Snapshot:
        return _snapshot(await client.batches.cancel(batch_id))

    async def aresults(self, client: Any, snapshot: Snapshot) -> list[dict[str, Any]]:
        lines: list[dict[str, Any]] = []
        for file_id in (snapshot.output_file_id, snapshot.error_file_id):
            if file_id:
                lines += _lines((await client.files.content(file_id)).text)
        return lines

    async def afind(self, client: Any, job_id: str) -> str | None:
        page = await client.batches.list(limit=_FIND_PAGE)
        return next((b.id for b in page.data
                     if (b.metadata or {}).get("spendguard_job") == job_id), None)

    async def acall(self, client: Any, path: str, body: Mapping[str, Any]) -> Any:
        return await client.post(_sdk_path(path), body=dict(body),
                                 cast_to=_response_type(path))


BATCH_API = OpenAIBatches
"""The class :func:`spendguard._strategies.batch.wire.api_for` finds this wire by."""
