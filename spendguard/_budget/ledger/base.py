"""The ledger interface and the records it keeps.

A ledger is an append-only log of events about calls — ``reserve`` (the worst case is held),
``settle`` (the actual cost replaces it), ``release`` (nothing was billed), ``recover`` (an
abandoned reservation is charged at its worst case) and ``adjust`` (a correction) — plus totals
per (scope, period key) derived from those events in the same transaction. ``verify()``
recomputes the totals from the events, so any drift is detectable.

The interface is kept small so that another backend (Redis, later) can implement it with
server-side atomics. Money is ``Decimal`` USD throughout.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from decimal import Decimal
from typing import Protocol, runtime_checkable

from spendguard._core.money import ZERO

__all__ = [
    "DEFAULT_RESERVATION_TTL_S",
    "CallFacts",
    "CallInfo",
    "Crossing",
    "Ledger",
    "ScopeClaim",
    "Settlement",
    "SpendRecord",
    "Totals",
]

DEFAULT_RESERVATION_TTL_S = 15 * 60.0
"""How long a reservation holds (seconds) before a sweep may recover it as stale."""


@dataclass(frozen=True, slots=True)
class CallFacts:
    """What a request said, as the caller wrote it, for observers such as telemetry.

    Built only while someone listens to call events; never stored in a ledger, never holds
    prompt text or a key. ``provider_name`` is the OpenTelemetry GenAI conventions' name of
    the service the request went to (``aws.bedrock``, ``azure.ai.openai``, ``deepseek``, ...);
    ``request_model`` the model (or Azure deployment, or Bedrock model id) the caller asked for.
    """

    provider_name: str
    request_model: str
    server_address: str | None = None
    server_port: int | None = None
    max_tokens: int | None = None
    temperature: float | None = None


@dataclass(frozen=True, slots=True)
class CallInfo:
    """What the transport knows about a call before it is sent. Never holds an API key."""

    provider: str
    model: str
    endpoint: str
    attempt: int = 1
    request_id: str | None = None
    prompt_hash: str | None = None
    # Filled by the guard only when the client was built with store_prompts=True.
    prompt_text: str | None = None
    estimated_input_tokens: int | None = None
    estimated_output_tokens: int | None = None
    input_exact: bool | None = None
    # The request's end-user id (for per-user budget templates); never stored as such.
    end_user: str | None = None
    # For call events only (telemetry), built while someone listens; never stored.
    facts: CallFacts | None = None


@dataclass(frozen=True, slots=True)
class ScopeClaim:
    """One scope a call is charged to, in one period, with its limit and warning level (USD)."""

    scope: str
    period_key: str
    limit_usd: Decimal | None = None
    warn_usd: Decimal | None = None
    max_calls: int | None = None
    """The most calls the scope may count in the period (None: no cap)."""


@dataclass(frozen=True, slots=True)
class Totals:
    """A scope's money in one period: settled spend and worst cases held by calls in flight.

    ``calls`` counts the calls reserved in the period and not released: in flight, settled or
    recovered (what a ``max_calls`` cap is checked against).
    """

    spent_usd: Decimal = ZERO
    reserved_usd: Decimal = ZERO
    calls: int = 0

    @property
    def committed_usd(self) -> Decimal:
        """Spent plus reserved: what a new reservation is checked against (USD)."""
        return self.spent_usd + self.reserved_usd


@dataclass(frozen=True, slots=True)
class Settlement:
    """What a call really cost, known when it ends."""

    time: datetime
    actual_usd: Decimal
    tokens: Mapping[str, int]
    usage_estimated: bool
    table_version: str
    latency_s: float
    request_id: str | None = None
    status: str = "ok"
    note: str | None = None  # why a call was charged as it was, when not simply from usage


@dataclass(frozen=True, slots=True)
class Crossing:
    """A scope's spend reached its warning level; reported once per scope, period and level."""

    scope: str
    period_key: str
    spent_usd: Decimal
    limit_usd: Decimal
    warn_usd: Decimal


@dataclass(frozen=True, slots=True)
class SpendRecord:
    """One finished call (or correction) as the ledger keeps it, for exports and reports.

    ``status`` is ``"ok"`` or what went wrong (``"error"``, ``"stream_broken"``,
    ``"stream_abandoned"``, ``"usage_unreadable"``, ...); ``"released"`` for an attempt that was
    not billed; ``"recovered"`` for a reservation whose process vanished, charged at its worst
    case; ``"adjustment"`` for a correction (its ``actual_usd`` may be negative). There is no
    field for credentials: API keys never reach the ledger. ``scopes``, ``period_keys`` and
    ``limits_usd`` are parallel: the call's budgets, the period each was charged in, and each
    one's limit then (None: unlimited).
    """

    id: str
    time: datetime
    scopes: tuple[str, ...]
    tags: Mapping[str, str]
    provider: str
    model: str
    endpoint: str
    tokens: Mapping[str, int]
    estimated_usd: Decimal
    actual_usd: Decimal
    usage_estimated: bool
    table_version: str
    latency_s: float | None
    request_id: str | None
    attempt: int
    status: str
    prompt_hash: str | None = None
    prompt_text: str | None = None
    estimated_input_tokens: int | None = None
    estimated_output_tokens: int | None = None
    input_exact: bool | None = None
    note: str | None = None
    period_keys: tuple[str, ...] = field(default=())
    limits_usd: tuple[Decimal | None, ...] = field(default=())


@runtime_checkable
class Ledger(Protocol):
    """Where reservations and spend are kept; one instance per URL per process."""

    url: str

    def reserve(self, claims: Sequence[ScopeClaim], amount_usd: Decimal, call: CallInfo, *,
                time: datetime, expires_at: datetime,
                tags: Mapping[str, str]) -> str:
        """Hold ``amount_usd`` in every claim at once, or raise ``BudgetExceeded`` (none held)."""
        ...

    def settle(self, reservation_id: str, settlement: Settlement) -> list[Crossing]:
        """Replace a reservation by its actual cost; returns warning levels newly reached."""
        ...

    def release(self, reservation_id: str, *, reason: str, time: datetime) -> bool:
        """Drop a reservation that was not billed; False if it was already closed."""
        ...

    def adjust(self, claims: Sequence[ScopeClaim], amount_usd: Decimal, *, time: datetime,
               note: str, tags: Mapping[str, str] | None = None, provider: str = "",
               model: str = "") -> str:
        """Record a correction of ``amount_usd`` (may be negative) against the claims' scopes.

        ``provider`` and ``model`` say whose charge it corrects, when it corrects one (a
        reconciliation with a provider's report): reports and filters then count it there.
        """
        ...

    def totals(self, scope: str, period_key: str) -> Totals:
        """Spent and reserved USD for one scope in one period."""
        ...

    def totals_sum(self, scope: str, period_keys: Sequence[str]) -> Totals:
        """One scope's totals over several period keys added up (a rolling window's steps)."""
        ...

    def records(self, *, since: datetime | None = None, until: datetime | None = None,
                scope: str | None = None, tag: str | None = None,
                model: str | None = None) -> Iterator[SpendRecord]:
        """Finished calls and corrections, oldest first; ``tag`` is ``"key"`` or ``"key=value"``."""
        ...

    def recover_expired(self, now: datetime) -> list[str]:
        """Charge reservations expired at ``now`` at their worst case; returns their ids."""
        ...

    def verify(self, *, progress: Callable[[int], object] | None = None) -> list[str]:
        """Recompute totals from the events; returns the discrepancies (empty when sound).

        Reads the events a page at a time: memory does not grow with the ledger. ``progress``
        is told the number of events replayed so far, after each page."""
        ...

    def close(self) -> None:
        """Release this process's handles (connections); the data stays."""
        ...
