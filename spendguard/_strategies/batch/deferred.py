"""``client.deferred``: the ordinary call, marked as able to wait for the batch API.

``client.deferred.chat.completions.create(...)`` (``.responses``, ``.embeddings``; or
``client.deferred.messages.create(...)`` on Anthropic) takes the ordinary arguments and returns
a :class:`Deferred` at once. Requests queue on the client until one of them is waited on
(``.result()``, ``await``) or :meth:`DeferredClient.flush` is called; then everything queued is
submitted together through :func:`spendguard.batch`. ``client.deferred(deadline=...,
fallback=True)`` gives a view with options, sharing the same queue.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Generator, Mapping
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any, Protocol, Self

from spendguard._core.errors import ConfigError
from spendguard._costing.endpoints import Endpoint
from spendguard._strategies.batch.limits import BatchLimits
from spendguard._strategies.batch.polling import Polling
from spendguard._strategies.batch.requests import BatchRequest
from spendguard._strategies.batch.results import BatchResult
from spendguard._strategies.batch.run import BatchRun, LedgerArg
from spendguard._strategies.batch.submit import DEFAULT_FALLBACK_LEAD_S, abatch, batch
from spendguard._strategies.replies import provider_of

__all__ = ["Deferred", "DeferredAnthropic", "DeferredClient", "DeferredOpenAI",
           "anthropic_deferred", "openai_deferred"]

_QUEUE_ATTRIBUTE = "_spendguard_deferred_queue"


@dataclass(frozen=True, slots=True)
class _Options:
    deadline: datetime | timedelta | float | None = None
    fallback: bool = False
    fallback_lead_s: float = DEFAULT_FALLBACK_LEAD_S
    ledger: LedgerArg = None
    limits: BatchLimits | None = None
    polling: Polling | None = None
    keep_bodies: bool | None = None


class Deferred:
    """A request waiting for the batch API: ``.result()`` in sync code, ``await`` in async.

    The result is the object the ordinary call returns (``ChatCompletion``, ``Message``...);
    a request that got none raises :class:`~spendguard.BatchRequestFailed`.
    """

    def __init__(self, queue: _Queue, request: BatchRequest, options: _Options) -> None:
        self._queue = queue
        self.request = request
        self.options = options
        self._run: BatchRun | None = None
        self._task: asyncio.Task[BatchRun] | None = None
        self._error: BaseException | None = None
        self._position = 0

    @property
    def custom_id(self) -> str | None:
        """Its id in the batch, once submitted."""
        return None if self._run is None else self._run.custom_ids()[self._position]

    @property
    def job_id(self) -> str | None:
        """The batch job it went into, once submitted."""
        custom_id = self.custom_id
        return None if self._run is None or custom_id is None else \
            self._run.core_of(custom_id).job.id

    def _attach(self, run: BatchRun | None, position: int, error: BaseException | None) -> None:
        self._run, self._position, self._error = run, position, error

    def _submitted(self) -> BatchRun:
        if self._run is None and self._error is None:
            self._queue.flush()
        if self._error is not None:
            raise self._error
        assert self._run is not None
        return self._run

    def outcome(self, timeout: float | None = None) -> BatchResult:
        """Its :class:`~spendguard.BatchResult` (route, cost...), waiting up to ``timeout`` s."""
        if self._queue.is_async:
            raise ConfigError("this request was deferred on an async client: `await` it")
        run = self._submitted()
        custom_id = run.custom_ids()[self._position]
        if not run.wait(timeout, cores=[run.core_of(custom_id)]):
            raise run._late()
        (found,) = run.collect([custom_id])
        return found

    def result(self, timeout: float | None = None) -> Any:
        """The response, waiting up to ``timeout`` seconds (``TimeoutError`` past it)."""
        return self.outcome(timeout).unwrap()

    async def aoutcome(self, timeout: float | None = None) -> BatchResult:
        """The async twin of :meth:`outcome`."""
        if not self._queue.is_async:
            return await asyncio.to_thread(self.outcome, timeout)
        if self._run is None and self._task is None and self._error is None:
            await self._queue.aflush()
        if self._task is not None:
            self._run = await self._task
        run = self._submitted()
        custom_id = run.custom_ids()[self._position]
        if not await run.await_(timeout, cores=[run.core_of(custom_id)]):
            raise run._late()
        (found,) = run.collect([custom_id])
        return found

    async def aresult(self, timeout: float | None = None) -> Any:
        """The async twin of :meth:`result`."""
        return (await self.aoutcome(timeout)).unwrap()

    def __await__(self) -> Generator[Any, None, Any]:
        return self.aresult().__await__()

    def __repr__(self) -> str:
        state = "queued" if self._run is None and self._task is None else "submitted"
        return f"<Deferred {self.custom_id or '(unsent)'} {state}>"


class _Queue:
    """Requests deferred on one client, not yet submitted."""

    def __init__(self, client: Any, is_async: bool) -> None:
        self.client = client
        self.is_async = is_async
        self.waiting: list[Deferred] = []
        self.lock = threading.Lock()

    def put(self, deferred: Deferred) -> Deferred:
        with self.lock:
            self.waiting.append(deferred)
        return deferred

    def _take(self) -> dict[_Options, list[Deferred]]:
        with self.lock:
            taken, self.waiting = self.waiting, []
        groups: dict[_Options, list[Deferred]] = {}
        for deferred in taken:
            groups.setdefault(deferred.options, []).append(deferred)
        return groups

    def flush(self) -> list[BatchRun]:
        runs, failed = [], None
        for options, group in self._take().items():
            try:
                run = batch([d.request for d in group], client=self.client, **_kwargs(options))
            except Exception as exc:  # every request of the group shares the refusal
                failed = failed or exc
                _attach_all(group, None, exc)
                continue
            _attach_all(group, run, None)
            runs.append(run)
        if failed is not None:
            raise failed
        return runs

    async def aflush(self) -> list[BatchRun]:
        tasks = []
        # Taken and given their task before the first await: a handle awaited meanwhile
        # waits on that task instead of submitting its request a second time.
        for options, group in self._take().items():
            task = asyncio.ensure_future(abatch([d.request for d in group], client=self.client,
                                                **_kwargs(options)))
            for position, deferred in enumerate(group):
                deferred._task, deferred._position = task, position
            tasks.append((task, group))
        runs, failed = [], None
        for task, group in tasks:
            try:
                run = await task
            except Exception as exc:
                failed = failed or exc
                _attach_all(group, None, exc)
                continue
            _attach_all(group, run, None)
            runs.append(run)
        if failed is not None:
            raise failed
        return runs


def _attach_all(group: list[Deferred], run: BatchRun | None, error: Exception | None) -> None:
    """Give every handle of a submitted group its run (and position), or the shared error."""
    for position, deferred in enumerate(group):
        deferred._attach(run, position if run is not None else 0, error)


def _kwargs(options: _Options) -> dict[str, Any]:
    return {"deadline": options.deadline, "fallback": options.fallback,
            "fallback_lead_s": options.fallback_lead_s, "ledger": options.ledger,
            "limits": options.limits, "polling": options.polling,
            "keep_bodies": options.keep_bodies}


class _Create:
    def __init__(self, owner: DeferredClient, endpoint: Endpoint) -> None:
        self._owner = owner
        self._endpoint = endpoint

    def create(self, **params: Any) -> Deferred:
        """The ordinary ``create()`` arguments; returns a :class:`Deferred` at once."""
        return self._owner._defer(self._endpoint, params)


class _Level:
    """A level of the SDK's attribute path (``client.deferred.chat``)."""


class _Chat(Protocol):
    completions: _Create


class DeferredClient:
    """Calls of one client that may wait for the batch API; see :mod:`.deferred`."""

    def __init__(self, queue: _Queue, options: _Options) -> None:
        self._queue = queue
        self._options = options
        # The SDK's attribute paths (chat.completions.create...) of each batchable endpoint
        # of the client's provider, as the endpoints name them.
        for endpoint in Endpoint.of(provider_of(queue.client)):
            *levels, method = endpoint.sdk_method
            if not endpoint.batchable or method != "create":
                continue
            owner: Any = self
            for name in levels[:-1]:
                if not hasattr(owner, name):
                    setattr(owner, name, _Level())
                owner = getattr(owner, name)
            setattr(owner, levels[-1], _Create(self, endpoint))

    def __call__(self, *, deadline: datetime | timedelta | float | None = None,
                 fallback: bool = False, fallback_lead_s: float = DEFAULT_FALLBACK_LEAD_S,
                 ledger: LedgerArg = None, limits: BatchLimits | None = None,
                 polling: Polling | None = None, keep_bodies: bool | None = None) -> Self:
        """A view with options (as :func:`spendguard.batch` takes them), same queue."""
        options = _Options(deadline, fallback, fallback_lead_s, ledger, limits, polling,
                           keep_bodies)
        return type(self)(self._queue, options)

    def _defer(self, endpoint: str, params: Mapping[str, Any]) -> Deferred:
        return self._queue.put(Deferred(self._queue, BatchRequest(dict(params), endpoint),
                                        self._options))

    @property
    def pending(self) -> int:
        """Requests queued, not yet submitted."""
        return len(self._queue.waiting)

    def flush(self) -> list[BatchRun]:
        """Submit everything queued now (one run per set of options)."""
        if self._queue.is_async:
            raise ConfigError("an async client flushes with `await client.deferred.aflush()`")
        return self._queue.flush()

    async def aflush(self) -> list[BatchRun]:
        """The async twin of :meth:`flush`."""
        if not self._queue.is_async:
            raise ConfigError("a sync client flushes with client.deferred.flush()")
        return await self._queue.aflush()


class DeferredOpenAI(DeferredClient):
    """``client.deferred`` of an OpenAI client: ``.chat.completions``, ``.responses``,
    ``.embeddings``."""

    chat: _Chat
    responses: _Create
    embeddings: _Create


class DeferredAnthropic(DeferredClient):
    """``client.deferred`` of an Anthropic client: ``.messages``."""

    messages: _Create


def _queue(client: Any, is_async: bool) -> _Queue:
    """The client's queue; it lives as long as the client."""
    queue = getattr(client, _QUEUE_ATTRIBUTE, None)
    if queue is None:
        queue = _Queue(client, is_async)
        setattr(client, _QUEUE_ATTRIBUTE, queue)
    assert isinstance(queue, _Queue)
    return queue


def openai_deferred(client: Any, *, is_async: bool) -> DeferredOpenAI:
    """``client.deferred`` of a guarded OpenAI client."""
    return DeferredOpenAI(_queue(client, is_async), _Options())


def anthropic_deferred(client: Any, *, is_async: bool) -> DeferredAnthropic:
    """``client.deferred`` of a guarded Anthropic client."""
    return DeferredAnthropic(_queue(client, is_async), _Options())
