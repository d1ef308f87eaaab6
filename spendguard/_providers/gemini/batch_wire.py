"""Gemini Batch Mode through google-genai's client: inline requests, one model per batch.

The facts, from ai.google.dev/gemini-api/docs/batch-mode and the REST reference
(ai.google.dev/api/batch-mode): a batch is created by ``POST models/{model}:batchGenerateContent``
with ``batch.inputConfig.requests.requests``, a list of inline ``{"request":
GenerateContentRequest, "metadata": {...}}`` (up to 20 MB in all), and is billed at 50% of the
interactive price. It answers a long-running operation named ``batches/{id}`` whose
``metadata`` is the batch: ``state`` (``BATCH_STATE_PENDING``, ``_RUNNING``, ``_SUCCEEDED``,
``_FAILED``, ``_CANCELLED``, ``_EXPIRED``), ``batchStats`` (int64 counts, as strings) and, once
done, ``output.inlinedResponses.inlinedResponses``: one ``{"response": GenerateContentResponse
(with usageMetadata)}`` or ``{"error": Status}`` per request, with the request's ``metadata``.
spendguard puts the custom id in that metadata (``{"key": custom_id}``) and the job id in the
batch's ``displayName``, so a submission lost in a crash is found again (``GET batches``).
A batch that does not finish within 48 hours expires; requests it did not answer, and those a
cancel stopped, come back without a result and are released (or rescued, with a fallback).

The Gemini Developer API only: Vertex AI's batch prediction reads its input from Cloud Storage
or BigQuery, which spendguard does not submit. Requests are the ``generate_content``
arguments (``model``, ``contents``, ``config``), turned into the REST body the ordinary call
sends by the SDK's own converter (:mod:`spendguard._providers.gemini.guard_rest`).
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

import httpx2
from google.genai import errors

from spendguard._core.errors import ConfigError, SpendguardError
from spendguard._costing.usage import Usage, usage_from
from spendguard._providers.gemini import endpoints
from spendguard._providers.gemini.guard_rest import (
    arest_request,
    generate_request,
    is_vertex,
    response_object,
    rest_request,
)
from spendguard._strategies.batch.wire import LineOutcome, Snapshot, Submitted

__all__ = ["BATCH_API", "GeminiBatches", "inline_request"]

_ENDED = frozenset({"succeeded", "failed", "cancelled", "expired"})
_UNANSWERED = {"cancelled": "cancelled", "expired": "expired"}
# google.rpc.Code: CANCELLED = 1, DEADLINE_EXCEEDED = 4 (a request the batch did not run).
_UNRUN_CODES = {1: "cancelled", 4: "expired"}
# The envelope around the requests: displayName (a job id), the model, the nesting. Measured
# generously: the SDK serialises the body itself.
_ENVELOPE = len(b'{"batch": {"displayName": "", "model": "models/", "inputConfig": '
                b'{"requests": {"requests": []}}}}')
_FIND_PAGE = 100


def _resource(model: str) -> str:
    return model if model.startswith(("models/", "tunedModels/")) else f"models/{model}"


def inline_request(custom_id: str, body: Mapping[str, Any]) -> dict[str, Any]:
    """One inline request of a batch: the REST body (``model`` as a resource name) and the
    custom id in its metadata."""
    request = {**body, "model": _resource(str(body.get("model", "")))}
    return {"request": request, "metadata": {"key": custom_id}}


def _state(value: object) -> str:
    word = str(value or "BATCH_STATE_UNSPECIFIED")
    return word.removeprefix("BATCH_STATE_").removeprefix("JOB_STATE_").lower()


def _count(stats: Mapping[str, Any], name: str) -> int:
    try:
        return int(stats.get(name) or 0)
    except (TypeError, ValueError):
        return 0


def _batch(operation: Mapping[str, Any]) -> Mapping[str, Any]:
    """The batch of an operation (``metadata``), or the batch itself (``GET`` may answer
    either)."""
    meta = operation.get("metadata")
    return meta if isinstance(meta, Mapping) else operation


def _snapshot(operation: Mapping[str, Any]) -> Snapshot:
    batch = _batch(operation)
    name = str(operation.get("name") or batch.get("name") or "")
    status = _state(batch.get("state"))
    found = batch.get("batchStats")
    stats: Mapping[str, Any] = found if isinstance(found, Mapping) else {}
    succeeded = _count(stats, "successfulRequestCount")
    failed = _count(stats, "failedRequestCount")
    error = operation.get("error")
    errors_seen = (str(error.get("message") or error),) if isinstance(error, Mapping) else ()
    return Snapshot(name, status, status in _ENDED or operation.get("done") is True,
                    {"total": _count(stats, "requestCount"), "done": succeeded + failed,
                     "failed": failed}, errors=errors_seen,
                    unanswered=_UNANSWERED.get(status, "errored"))


def _responses(operation: Mapping[str, Any]) -> list[dict[str, Any]]:
    """The inline responses of a finished batch (the operation's ``metadata.output``, or its
    ``response``)."""
    for holder in (_batch(operation).get("output"), operation.get("response")):
        if isinstance(holder, Mapping):
            inlined = holder.get("inlinedResponses")
            found = inlined.get("inlinedResponses") if isinstance(inlined, Mapping) else None
            if isinstance(found, list):
                return [dict(line) for line in found if isinstance(line, Mapping)]
    return []


def _found(page: Mapping[str, Any], job_id: str) -> str | None:
    for operation in page.get("operations") or page.get("batches") or []:
        if isinstance(operation, Mapping) and _batch(operation).get("displayName") == job_id:
            return str(operation.get("name") or _batch(operation).get("name"))
    return None


def _submission(requests: Sequence[tuple[str, Mapping[str, Any]]], job_id: str
                ) -> tuple[str, dict[str, Any]]:
    models = {str(body.get("model")) for _, body in requests}
    if len(models) != 1:  # split() groups by model: one model per batch is the API's rule
        raise ConfigError(f"a Gemini batch runs one model; got {sorted(models)}")
    model = _resource(models.pop())
    return f"{model}:batchGenerateContent", {"batch": {
        "displayName": job_id, "model": model,
        "inputConfig": {"requests": {"requests": [inline_request(custom_id, body)
                                                  for custom_id, body in requests]}}}}


def _generate(body: Mapping[str, Any]) -> tuple[str, dict[str, Any]]:
    """The path and body of the ordinary call for a kept request body."""
    sent = {key: value for key, value in body.items() if key != "model"}
    return f"{_resource(str(body.get('model')))}:generateContent", sent


class GeminiBatches:
    """Gemini Batch Mode (Developer API), sync and async."""

    provider = endpoints.PROVIDER
    per_model = True
    window_s = 48 * 3600.0
    # Inline requests are "under 20MB" in all; Google caps no count: 10,000 is spendguard's
    # (a batch's inline results all come back in one batches.get reply).
    published_limits: tuple[int, int, int | None] = (10_000, 20_000_000, None)

    def request_body(self, client: Any, params: Mapping[str, Any], where: str
                     ) -> dict[str, Any]:
        if is_vertex(client):
            raise ConfigError("client: spendguard.batch() runs Gemini batches on the Gemini "
                              "Developer API; Vertex AI batch prediction reads from Cloud "
                              "Storage or BigQuery. Use a genai.Client with an API key")
        if params.get("stream"):
            raise ConfigError(f"{where}: stream=True cannot be deferred; batch results arrive "
                              f"whole. Drop stream=True")
        return generate_request(client, params, where)

    def line_bytes(self, custom_id: str, path: str, body: Mapping[str, Any]) -> int:
        entry = json.dumps(inline_request(custom_id, body), ensure_ascii=True)
        return len(entry.encode()) + len(b", ")

    def overhead_bytes(self) -> int:
        return _ENVELOPE + 2 * 64 + 128  # a job id and a model name, generously

    def outcome(self, line: Mapping[str, Any], path: str) -> LineOutcome:
        meta = line.get("metadata")
        custom_id = str(meta.get("key") if isinstance(meta, Mapping) else None)
        response = line.get("response")
        if isinstance(response, Mapping):
            try:
                usage: Usage | None = usage_from("gemini", dict(response))
            except SpendguardError:
                usage = None  # billed, but unreadable: the caller charges the worst case
            request_id = response.get("responseId")
            return LineOutcome(custom_id, "succeeded", dict(response), None, usage,
                               str(request_id) if request_id else None)
        found = line.get("error")
        error: dict[str, Any] = dict(found) if isinstance(found, Mapping) else {}
        code = error.get("code")
        status = _UNRUN_CODES.get(code, "errored") if isinstance(code, int) else "errored"
        return LineOutcome(custom_id, status,
                           error=error or {"message": "no response and no error"})

    def response_object(self, path: str, body: Mapping[str, Any]) -> Any:
        return response_object(body)

    def transient(self, exc: BaseException) -> bool:
        if isinstance(exc, errors.ServerError | httpx2.TransportError):
            return True
        return isinstance(exc, errors.ClientError) and exc.code == 429

    # -- sync ----------------------------------------------------------------------------

    def submit(self, client: Any, job_id: str, path: str,
               requests: Sequence[tuple[str, Mapping[str, Any]]],
               headers: Mapping[str, str]) -> Submitted:
        where, body = _submission(requests, job_id)
        return Submitted(_snapshot(rest_request(client, "post", where, body, headers)))

    def retrieve(self, client: Any, batch_id: str) -> Snapshot:
        return _snapshot(rest_request(client, "get", batch_id))

    def cancel(self, client: Any, batch_id: str) -> Snapshot:
        rest_request(client, "post", f"{batch_id}:cancel")
        return self.retrieve(client, batch_id)

    def results(self, client: Any, snapshot: Snapshot) -> list[dict[str, Any]]:
        return _responses(rest_request(client, "get", snapshot.batch_id))

    def find(self, client: Any, job_id: str) -> str | None:
        return _found(rest_request(client, "get", f"batches?pageSize={_FIND_PAGE}"), job_id)

    def call(self, client: Any, path: str, body: Mapping[str, Any]) -> Any:
        where, sent = _generate(body)
        return response_object(rest_request(client, "post", where, sent))

    # -- async ---------------------------------------------------------------------------

    async def asubmit(self, client: Any, job_id: str, path: str,
                      requests: Sequence[tuple[str, Mapping[str, Any]]],
                      headers: Mapping[str, str]) -> Submitted:
        where, body = _submission(requests, job_id)
        return Submitted(_snapshot(await arest_request(client, "post", where, body, headers)))

    async def aretrieve(self, client: Any, batch_id: str) -> Snapshot:
        return _snapshot(await arest_request(client, "get", batch_id))

    async def acancel(self, client: Any, batch_id: str) -> Snapshot:
        await arest_request(client, "post", f"{batch_id}:cancel")
        return await self.aretrieve(client, batch_id)

    async def aresults(self, client: Any, snapshot: Snapshot) -> list[dict[str, Any]]:
        return _responses(await arest_request(client, "get", snapshot.batch_id))

    async def afind(self, client: Any, job_id: str) -> str | None:
        return _found(await arest_request(client, "get", f"batches?pageSize={_FIND_PAGE}"),
                      job_id)

    async def acall(self, client: Any, path: str, body: Mapping[str, Any]) -> Any:
        where, sent = _generate(body)
        return response_object(await arest_request(client, "post", where, sent))


BATCH_API = GeminiBatches
