"""Replaying a ledger's event log against its stored totals, in memory that does not grow with
the log (what ``verify()`` does on the shared engine's ledgers).

The log is read in order, a page at a time, and each page's calls are looked up together
(:class:`CallBooks`: only what the totals need of a call). A call is kept from its
reservation to its close and forgotten then, so memory holds the expected totals per
(scope, period key), the calls in flight at that point of the log and one page: O(scopes ×
periods + calls open at once + page), never O(calls). A closed call whose close is not in the
log is found by counting (closed calls met against closed calls stored), and only when the
counts differ are they looked for one by one.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass
from decimal import Decimal
from itertools import islice
from typing import Protocol

from spendguard._budget.ledger.base import Totals

__all__ = ["OPEN_STATE", "PAGE_SIZE", "CallBooks", "Replay", "ReplayStore", "replay"]

OPEN_STATE = "open"
PAGE_SIZE = 1000
"""Events read, and calls looked up, at a time."""


@dataclass(frozen=True, slots=True)
class CallBooks:
    """What replaying a call's events needs of it: the (scope, period key) of each claim, its
    worst case (USD, what a reservation held) and its state now."""

    claims: tuple[tuple[str, str], ...]
    worst_usd: Decimal
    state: str


class LoggedEvent(Protocol):
    @property
    def call_id(self) -> str: ...
    @property
    def kind(self) -> str: ...
    @property
    def amount_usd(self) -> Decimal: ...


class ReplayStore(Protocol):
    """The reads a replay makes, inside one snapshot of the storage."""

    def all_events(self) -> Iterator[LoggedEvent]:
        """The log, in the order it was written (lazily: never all of it at once)."""
        ...

    def call_books(self, call_ids: Iterable[str]) -> Mapping[str, CallBooks]:
        """The calls of these ids that exist (one read for a page of ids)."""
        ...

    def all_totals(self) -> Iterator[tuple[str, str, Totals]]: ...

    def closed_call_count(self) -> int:
        """How many calls are closed (settled, released, recovered or corrections)."""
        ...

    def closed_calls_without_close(self) -> Iterator[tuple[str, str]]:
        """(id, state) of closed calls with no closing event in the log (none when sound)."""
        ...


class Replay:
    """The accumulators of one replay: fed events in log order with their calls' books."""

    def __init__(self, changes: Callable[[str, Decimal, Decimal, str],
                                         Iterable[tuple[str, Decimal, Decimal, int]]]) -> None:
        self._changes = changes
        self.expected: dict[tuple[str, str], tuple[Decimal, Decimal, int]] = {}
        self.in_flight: dict[str, CallBooks] = {}  # reserved, close not met yet
        self.closed_met = 0
        self.events = 0
        self.problems: list[str] = []

    def missing(self, call_ids: Iterable[str]) -> set[str]:
        """The ids of a page whose books must be read (the ones in flight are known)."""
        return {call_id for call_id in call_ids if call_id not in self.in_flight}

    def add(self, call_id: str, kind: str, amount_usd: Decimal,
            read: Mapping[str, CallBooks]) -> str | None:
        """Count one event; returns why replaying must stop (an event of no call), if so."""
        self.events += 1
        books = self.in_flight.get(call_id) or read.get(call_id)
        if books is None:
            return f"event {kind} refers to unknown call {call_id}"
        if kind == "reserve":
            self.in_flight[call_id] = books
        else:
            self.in_flight.pop(call_id, None)
            if books.state == OPEN_STATE:
                self.problems.append(f"call {call_id} is open but its events say {kind}")
            else:
                self.closed_met += 1
        expected = self.expected
        for scope, claim_key in books.claims:
            for period_key, spent, held, counted in self._changes(kind, amount_usd,
                                                                  books.worst_usd, claim_key):
                old = expected.get((scope, period_key))
                expected[(scope, period_key)] = (
                    (spent, held, counted) if old is None
                    else (old[0] + spent, old[1] + held, old[2] + counted))
        return None

    def compare(self, stored_totals: Iterable[tuple[str, str, Totals]]) -> list[str]:
        """The totals that disagree with the events replayed, and stored totals with none."""
        stored = {(scope, key): totals for scope, key, totals in stored_totals}
        problems = []
        for (scope, key), (spent, held, counted) in self.expected.items():
            want = Totals(spent, held, counted)
            if stored.get((scope, key), Totals()) != want:
                problems.append(f"totals of {scope!r} in {key}: stored "
                                f"{stored.get((scope, key))}, events give {want}")
        problems += [f"totals of {scope!r} in {key} have no events"
                     for (scope, key), totals in stored.items()
                     if (scope, key) not in self.expected and totals != Totals()]
        return problems


def _pages(events: Iterator[LoggedEvent]) -> Iterator[list[LoggedEvent]]:
    while page := list(islice(events, PAGE_SIZE)):
        yield page


def replay(store: ReplayStore,
           changes: Callable[[str, Decimal, Decimal, str],
                             Iterable[tuple[str, Decimal, Decimal, int]]],
           progress: Callable[[int], object] | None = None) -> list[str]:
    """Replay ``store``'s log with ``changes`` (the engine's ``event_changes``) and compare
    with its totals; the discrepancies found (empty when sound). ``progress`` is told the
    events replayed so far after each page."""
    state = Replay(changes)
    for page in _pages(store.all_events()):
        read = store.call_books(state.missing(event.call_id for event in page))
        for event in page:
            stop = state.add(event.call_id, event.kind, event.amount_usd, read)
            if stop is not None:
                return [stop]
        if progress is not None:
            progress(state.events)
    problems = state.compare(store.all_totals())
    problems += state.problems
    if store.closed_call_count() != state.closed_met:
        problems += [f"call {call_id} is {call_state} but its events say open"
                     for call_id, call_state in store.closed_calls_without_close()]
    return problems
