"""What a provider's batch API looks like to the rest of spendguard._strategies.batch.

One adapter per provider (:mod:`.openai_wire`, :mod:`.anthropic_wire`, :mod:`.gemini_wire`)
implements :class:`BatchAPI`: pure functions that build payloads and read statuses and result
lines, plus thin sync and async calls through the official SDK client. :func:`api_for` finds
it in one table keyed by provider. Everything else — reserving, persisting, polling, falling
back — is provider-blind.
"""

from __future__ import annotations

import importlib.util
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from spendguard._core.errors import ConfigError
from spendguard._costing.calls import Provider
from spendguard._costing.usage import Usage

__all__ = ["OUTCOMES", "BatchAPI", "LineOutcome", "Snapshot", "Submitted", "api_for"]

OUTCOMES = ("succeeded", "errored", "expired", "cancelled")


@dataclass(frozen=True, slots=True)
class Snapshot:
    """A provider batch as last seen: its status word, whether it ended, its counts."""

    batch_id: str
    status: str
    ended: bool
    counts: Mapping[str, int] = field(default_factory=dict)
    output_file_id: str | None = None
    error_file_id: str | None = None
    errors: tuple[str, ...] = ()
    """Why the whole batch failed (OpenAI validation errors), when it did."""
    unanswered: str = "errored"
    """The outcome of a request the ended batch returned no result for: ``errored``, or
    ``cancelled`` / ``expired`` where the provider leaves unrun requests out (Gemini)."""

    def describe(self) -> str:
        """``in_progress, 120/500 done, 3 failed`` for progress lines."""
        done, total, failed = (self.counts.get(k, 0) for k in ("done", "total", "failed"))
        tail = f", {failed} failed" if failed else ""
        return f"{self.status}, {done}/{total} done{tail}"


@dataclass(frozen=True, slots=True)
class Submitted:
    """What a successful submission returns."""

    snapshot: Snapshot
    input_file_id: str | None = None


@dataclass(frozen=True, slots=True)
class LineOutcome:
    """One request's result read from a batch's result lines."""

    custom_id: str
    status: str
    """``succeeded``, ``errored``, ``expired`` or ``cancelled``."""
    body: Mapping[str, Any] | None = None
    """The response body, as the ordinary call would have received it."""
    error: Mapping[str, Any] | None = None
    usage: Usage | None = None
    request_id: str | None = None


class BatchAPI(Protocol):
    """One provider's batch endpoints, as spendguard uses them."""

    provider: Provider
    per_model: bool
    """Whether one batch runs one model only (OpenAI, Gemini): requests are grouped by it."""
    window_s: float
    """How long the provider may take before unfinished requests expire (seconds)."""
    published_limits: tuple[int, int, int | None]
    """The most requests, bytes and embedding inputs (None: uncapped) one batch may hold, as
    the provider publishes them: what :class:`~.limits.BatchLimits` gives a provider it has
    no fields for."""

    def request_body(self, client: Any, params: Mapping[str, Any], where: str
                     ) -> dict[str, Any]:
        """The JSON body the ordinary call sends for one request's ``create()`` arguments."""
        ...

    def line_bytes(self, custom_id: str, path: str, body: Mapping[str, Any]) -> int:
        """Bytes one request adds to a batch (an upper bound where the SDK serialises)."""
        ...

    def overhead_bytes(self) -> int:
        """Bytes a batch adds once, whatever it holds."""
        ...

    def outcome(self, line: Mapping[str, Any], path: str) -> LineOutcome:
        """One result line read."""
        ...

    def response_object(self, path: str, body: Mapping[str, Any]) -> Any:
        """The SDK object the ordinary call returns, built from a response body."""
        ...

    def submit(self, client: Any, job_id: str, path: str,
               requests: Sequence[tuple[str, Mapping[str, Any]]],
               headers: Mapping[str, str]) -> Submitted: ...
    def retrieve(self, client: Any, batch_id: str) -> Snapshot: ...
    def cancel(self, client: Any, batch_id: str) -> Snapshot: ...
    def results(self, client: Any, snapshot: Snapshot) -> list[dict[str, Any]]: ...
    def find(self, client: Any, job_id: str) -> str | None:
        """The provider batch a crashed submission of ``job_id`` created, if it can tell."""
        ...
    def call(self, client: Any, path: str, body: Mapping[str, Any]) -> Any:
        """The ordinary (non-batch) call, through the client's own guard."""
        ...

    async def asubmit(self, client: Any, job_id: str, path: str,
                      requests: Sequence[tuple[str, Mapping[str, Any]]],
                      headers: Mapping[str, str]) -> Submitted: ...
    async def aretrieve(self, client: Any, batch_id: str) -> Snapshot: ...
    async def acancel(self, client: Any, batch_id: str) -> Snapshot: ...
    async def aresults(self, client: Any, snapshot: Snapshot) -> list[dict[str, Any]]: ...
    async def afind(self, client: Any, job_id: str) -> str | None: ...
    async def acall(self, client: Any, path: str, body: Mapping[str, Any]) -> Any: ...

    def transient(self, exc: BaseException) -> bool:
        """Whether a failed poll is worth trying again later (connection, 5xx, 429)."""
        ...


def api_for(provider: Provider) -> BatchAPI:
    """The batch wire of one provider (imports its SDK): the ``BATCH_API`` class of its
    package's ``batch_wire`` module (``_providers/<provider>/batch_wire.py``)."""
    name = f"spendguard._providers.{Provider(provider).value}.batch_wire"
    if importlib.util.find_spec(name) is None:
        raise ConfigError(f"provider: spendguard has no batch wire for {provider.value!r}; "
                          f"batch() takes an openai, anthropic or google-genai client")
    api: BatchAPI = importlib.import_module(name).BATCH_API()
    return api
