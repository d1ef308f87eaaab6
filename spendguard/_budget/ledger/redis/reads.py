"""Reading a Redis ledger: totals, records oldest first, and verifying totals against events.

Reads need no script: a record is immutable once its call has closed, and a (scope, period)
total is one hash field. ``verify()`` takes the totals and the end of the event stream in one
MULTI, so it compares them at a single point in time while other processes keep writing.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator, Sequence
from dataclasses import replace
from datetime import datetime
from decimal import Decimal
from functools import partial
from typing import Any

from spendguard._budget.ledger.base import SpendRecord, Totals
from spendguard._budget.ledger.engine import event_changes
from spendguard._budget.ledger.filters import parse_tag, record_matches
from spendguard._budget.ledger.limits import sum_totals
from spendguard._budget.ledger.redis.codec import (
    changes_from_json,
    exact,
    micros,
    record_from_json,
    tidy,
)
from spendguard._budget.ledger.redis.session import RedisSession
from spendguard._core.money import ZERO

__all__ = ["read_records", "read_totals", "read_totals_sum", "total_field", "verify_events"]

_PAGE = 500  # records read at a time
_EVENTS_PAGE = 1000  # events replayed at a time by verify()
_CLOSING = ("settle", "release", "recover", "adjust")


def total_field(scope: str, period_key: str) -> str:
    """The ``totals`` hash field of a scope in a period (period keys have no spaces)."""
    return f"{period_key} {scope}"


def parse_totals(text: str | None) -> Totals:
    """``"<spent> <reserved> <calls>"`` as Totals; a missing field (or count) is zero."""
    if text is None:
        return Totals()
    spent, reserved, *calls = text.split(" ")
    return Totals(tidy(spent), tidy(reserved), int(calls[0]) if calls else 0)


def read_totals(session: RedisSession, scope: str, period_key: str) -> Totals:
    key, field = f"{session.prefix}totals", total_field(scope, period_key)
    text: Any = session.read(lambda client: client.hget(key, field))
    if text is None:
        session.check_not_flushed()  # nothing spent yet, or nothing left: never a silent $0
    return parse_totals(text)


def read_totals_sum(session: RedisSession, scope: str, period_keys: Sequence[str]) -> Totals:
    key, fields = f"{session.prefix}totals", [total_field(scope, k) for k in period_keys]
    texts: Any = session.read(lambda client: client.hmget(key, fields))
    if all(text is None for text in texts):
        session.check_not_flushed()
    with exact():
        return sum_totals(parse_totals(text) for text in texts)


def read_records(session: RedisSession, *, since: datetime | None, until: datetime | None,
                 scope: str | None, tag: str | None, model: str | None) -> Iterator[SpendRecord]:
    """Closed calls and corrections with ``since <= time < until``, oldest first (ties by id)."""
    if tag is not None:
        parse_tag(tag)  # a bad tag is an error now, not at the first record
    return _pages(session, since, until, scope, tag, model)


def _pages(session: RedisSession, since: datetime | None, until: datetime | None,
           scope: str | None, tag: str | None, model: str | None) -> Iterator[SpendRecord]:
    key = f"{session.prefix}records"
    low = "-inf" if since is None else str(micros(since))
    high = "+inf" if until is None else f"({micros(until)}"
    skip = 0  # members already read at score `low` (several records may share a microsecond)
    while True:
        page: Any = session.read(partial(_by_score, key, low, high, skip))
        if not page:
            return
        rows: Any = session.read(partial(_fetch, session.prefix, page))
        for fields in rows:
            if fields[0] is None:
                continue
            record = decode_record(*fields)
            if record_matches(record, since=since, until=until, scope=scope, tag=tag,
                              model=model):
                yield record
        if len(page) < _PAGE:
            return
        last = str(int(page[-1][1]))
        tail = sum(1 for _, score in page if str(int(score)) == last)
        skip = skip + tail if last == low else tail
        low = last


def _by_score(key: str, low: str, high: str, skip: int, client: Any) -> Any:
    return client.zrangebyscore(key, low, high, start=skip, num=_PAGE, withscores=True)


def _fetch(prefix: str, page: list[tuple[str, float]], client: Any) -> Any:
    pipe = client.pipeline(transaction=False)
    for call_id, _ in page:
        pipe.hmget(f"{prefix}call:{call_id}", "state", "rec", "done", "note")
    return pipe.execute()


def decode_record(state: str, rec: str, done: str | None, note: str | None) -> SpendRecord:
    """A closed call's record from its hash fields."""
    record = record_from_json(rec, **(changes_from_json(done) if done else {}))
    if state == "released":
        return replace(record, status="released", note=note, actual_usd=ZERO)
    if state == "recovered":
        return replace(record, status="recovered", note=note, usage_estimated=True,
                        actual_usd=record.estimated_usd)
    return record


def verify_events(session: RedisSession, *,
                  progress: Callable[[int], object] | None = None) -> list[str]:
    """Replay the event stream and compare with the stored totals; the discrepancies found.

    Memory holds the totals, the calls in flight at that point of the stream and one page,
    not every call: a call is forgotten once its close is replayed. ``progress`` is told the
    events replayed so far after each page."""
    prefix = session.prefix

    def snapshot(client: Any) -> Any:
        pipe = client.pipeline(transaction=True)
        pipe.hgetall(f"{prefix}totals")
        pipe.xrevrange(f"{prefix}events", count=1)
        return pipe.execute()

    with exact():
        stored, last = session.read(snapshot)
        return _replay(session, stored, last, progress)


def _replay(session: RedisSession, stored_text: dict[str, str], last: Any,
            progress: Callable[[int], object] | None) -> list[str]:
    prefix = session.prefix
    stored = {field: parse_totals(text) for field, text in stored_text.items()}
    expected: dict[str, tuple[Decimal, Decimal, int]] = {}
    calls: dict[str, tuple[list[Any], Decimal, str]] = {}  # in flight at this point
    problems: list[str] = []
    start, replayed = "-", 0
    while last:
        batch: Any = session.read(partial(_events, f"{prefix}events", start, last[0][0],
                                          _EVENTS_PAGE))
        if not batch:
            break
        read = dict(calls)
        _load_calls(session, read, {fields["call"] for _, fields in batch})
        for _, event in batch:
            call = calls.get(event["call"]) or read.get(event["call"])
            if call is None:
                return [f"event {event['kind']} refers to unknown call {event['call']}"]
            claims, worst, state = call
            amount = tidy(event["usd"])
            if event["kind"] in _CLOSING:
                calls.pop(event["call"], None)
                if state == "open":
                    problems.append(f"call {event['call']} is open but its events say closed")
            else:
                calls[event["call"]] = call
            for scope, claim_key, *_ in claims:
                for period_key, spent, held, counted in event_changes(event["kind"], amount,
                                                                      worst, claim_key):
                    old = expected.get(total_field(scope, period_key), (ZERO, ZERO, 0))
                    expected[total_field(scope, period_key)] = (old[0] + spent, old[1] + held,
                                                                old[2] + counted)
        replayed += len(batch)
        if progress is not None:
            progress(replayed)
        if len(batch) < _EVENTS_PAGE:
            break
        start = f"({batch[-1][0]}"
    totals_problems = []
    for field, (spent, held, counted) in expected.items():
        want, found = Totals(spent, held, counted), stored.get(field, Totals())
        if want != found:
            period_key, _, scope = field.partition(" ")
            totals_problems.append(f"totals of {scope!r} in {period_key}: stored {found}, "
                                   f"events give {want}")
    totals_problems += [f"totals of {field.partition(' ')[2]!r} in {field.partition(' ')[0]} "
                        f"have no events" for field, totals in stored.items()
                        if field not in expected and totals != Totals()]
    problems = totals_problems + problems
    later: Any = session.read(partial(_events, f"{prefix}events", f"({last[0][0]}", "+",
                                      None)) if last else []
    closed_later = {fields["call"] for _, fields in later if fields["kind"] in _CLOSING}
    # The calls left are the ones whose close was not replayed: they must still be open.
    problems += [f"call {call_id} is {state} but its events say open"
                 for call_id, (_, _, state) in calls.items()
                 if state != "open" and call_id not in closed_later]
    return problems


def _events(key: str, first: str, last: str, count: int | None, client: Any) -> Any:
    return client.xrange(key, min=first, max=last, count=count)


def _load_calls(session: RedisSession, calls: dict[str, tuple[list[Any], Decimal, str]],
                wanted: set[str]) -> None:
    missing = sorted(wanted - set(calls))
    if not missing:
        return

    def fetch(client: Any) -> Any:
        pipe = client.pipeline(transaction=False)
        for call_id in missing:
            pipe.hmget(f"{session.prefix}call:{call_id}", "claims", "worst", "state")
        return pipe.execute()

    for call_id, (claims, worst, state) in zip(missing, session.read(fetch), strict=True):
        if claims is not None:
            calls[call_id] = (json.loads(claims), tidy(worst), state)
