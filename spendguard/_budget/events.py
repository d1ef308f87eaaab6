"""One stream of call events out of the choke point, for anything that wants to watch spend.

The budget layer publishes one :class:`CallEvent` at each step of a guarded call —
``reserved`` (estimated and held, about to be sent), ``refused`` (nothing sent),
``would_refuse`` (observe mode: enforce mode would have refused it; sent anyway),
``settled`` / ``released`` (how the attempt ended) and ``warned`` (a budget reached its warning
level). Telemetry (:mod:`spendguard._adoption.telemetry`) and ``spendguard run``'s summary are
subscribers; a new consumer subscribes instead of adding a branch to the choke point.

Publishing is a no-op while nobody listens: the event is not even built. A subscriber that
raises never breaks the call it watches (it is logged once and the call goes on).
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from decimal import Decimal
from enum import StrEnum
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from spendguard._budget.budget import Budget
    from spendguard._budget.ledger.base import CallFacts

__all__ = ["CallEvent", "Stage", "Subscriber", "listening", "publish", "subscribe",
           "unsubscribe"]

log = logging.getLogger("spendguard.events")


class Stage(StrEnum):
    """Where in its life a call is when an event is published."""

    RESERVED = "reserved"
    REFUSED = "refused"
    WOULD_REFUSE = "would_refuse"
    SETTLED = "settled"
    RELEASED = "released"
    WARNED = "warned"


@dataclass(frozen=True, slots=True)
class CallEvent:
    """One step of one guarded call attempt. Never holds an API key or prompt text.

    ``call_id`` ties the steps of one attempt together (the ledger's reservation id; None for
    a refusal, which holds nothing). ``worst_usd`` is the worst case reserved (or refused),
    ``actual_usd`` what the attempt cost (settled only). ``scopes`` are the budgets charged;
    ``budgets`` the objects themselves, for subscribers that want what is left (a ledger
    read, done only by those who ask). ``message`` says why a call was refused or warned.
    """

    stage: Stage
    provider: str = ""
    model: str = ""
    endpoint: str = ""
    call_id: str | None = None
    attempt: int = 1
    scopes: tuple[str, ...] = ()
    worst_usd: Decimal | None = None
    actual_usd: Decimal | None = None
    tokens: Mapping[str, int] = field(default_factory=dict)
    usage_estimated: bool = False
    status: str | None = None
    table_version: str | None = None
    response_model: str | None = None
    request_id: str | None = None
    estimated_input_tokens: int | None = None
    message: str | None = None
    scope: str | None = None
    """The one scope a ``refused``, ``would_refuse`` or ``warned`` event is about."""
    facts: CallFacts | None = None
    """What the request said as the caller wrote it (telemetry's names), when known."""
    response_id: str | None = None
    finish_reasons: tuple[str, ...] = ()
    budgets: tuple[Budget, ...] = field(default=(), repr=False, compare=False)


Subscriber = Callable[[CallEvent], object]

_lock = threading.Lock()
# A tuple replaced as a whole, so publishing reads it without a lock.
_subscribers: tuple[Subscriber, ...] = ()
_broken: set[int] = set()


def subscribe(subscriber: Subscriber) -> Subscriber:
    """Call ``subscriber(event)`` for every event from now on (once, however often added)."""
    global _subscribers  # noqa: PLW0603 - the registry is process-wide by design
    with _lock:
        if subscriber not in _subscribers:
            _subscribers = (*_subscribers, subscriber)
    return subscriber


def unsubscribe(subscriber: Subscriber) -> None:
    """Stop sending events to ``subscriber`` (nothing happens if it was not subscribed)."""
    global _subscribers  # noqa: PLW0603
    with _lock:
        _subscribers = tuple(s for s in _subscribers if s != subscriber)


def listening() -> bool:
    """Whether any subscriber is registered."""
    return _subscribers != ()  # a tuple; a comparison, not a call (asked several times a call)


def publish(stage: Stage, **fields: Any) -> None:
    """Build a :class:`CallEvent` and hand it to every subscriber; free when nobody listens."""
    subscribers = _subscribers
    if not subscribers:
        return
    try:
        event = CallEvent(stage, **fields)
    except Exception:  # a malformed event is our bug; it must not become the caller's
        log.warning("spendguard could not build a %s event", stage, exc_info=True)
        return
    for subscriber in subscribers:
        try:
            subscriber(event)
        except Exception:
            if id(subscriber) not in _broken:
                _broken.add(id(subscriber))
                log.warning("spendguard event subscriber %r failed; the call goes on "
                            "(logged once per subscriber)", subscriber, exc_info=True)
