"""The Redis ledger (``redis://``, Cluster, Sentinel, TLS): budgets shared across machines.

Each rule — reserve (check every limit, hold the worst case), settle, release, correct,
recover an abandoned reservation — is one Lua script that Redis runs atomically, so processes
anywhere can never together overspend a limit. The rules are those of
:mod:`spendguard._budget.ledger.engine`, and the same contract tests run against both.

When Redis cannot be reached within the URL's ``timeout``, a reservation is refused with
:class:`LedgerUnavailable` (fail closed), unless the URL opts into ``fail_open`` with a
per-process ``local_cap_usd`` (see :mod:`~spendguard._budget.ledger.redis.fallback`). A settle or
release that cannot reach Redis is kept in this process and sent with the next operation
that can: until then the call's worst case stays held in Redis, and if the process dies first
the reservation expires and is charged at its worst case — never undercounted.
"""

from __future__ import annotations

import logging
import os
import socket
import threading
from collections import deque
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import replace
from datetime import datetime
from decimal import Decimal
from functools import lru_cache, partial
from typing import TypeVar

from spendguard._budget.ledger.base import (
    CallInfo,
    Crossing,
    ScopeClaim,
    Settlement,
    SpendRecord,
    Totals,
)
from spendguard._budget.ledger.engine import CallRow
from spendguard._budget.ledger.limits import merge_claims, refusal, sum_totals
from spendguard._budget.ledger.redis.codec import (
    changes_json,
    claims_from_json,
    claims_json,
    crossings,
    exact,
    micros,
    open_record_json,
    record_from_json,
    record_json,
    scaled,
    scaled_claims,
    settlement_json,
    tidy,
)
from spendguard._budget.ledger.redis.fallback import LocalFallback
from spendguard._budget.ledger.redis.options import RedisOptions, parse_redis_url
from spendguard._budget.ledger.redis.reads import (
    read_records,
    read_totals,
    read_totals_sum,
    total_field,
    verify_events,
)
from spendguard._budget.ledger.redis.session import RedisSession
from spendguard._core.errors import LedgerError, LedgerNotFound, LedgerUnavailable
from spendguard._core.money import ZERO, format_usd

__all__ = ["LOST_RESERVATION_NOTE", "RedisLedger", "open_redis"]

log = logging.getLogger("spendguard.ledger")

_HOST = socket.gethostname()
LOST_RESERVATION_NOTE = "reservation lost by Redis; recorded at settle"
_RECOVER_BATCH = "100"  # abandoned reservations charged per reservation: bounds its latency
_T = TypeVar("_T")


class RedisLedger:
    """A ledger in Redis, shared by every process that names the same server, db and prefix."""

    def __init__(self, url: str) -> None:
        self.options: RedisOptions = parse_redis_url(url)
        self.url = self.options.url  # the password masked: safe in messages
        self._session = RedisSession(self.options)
        self._fallback = (LocalFallback(self.options.local_cap_usd, self.url)
                          if self.options.local_cap_usd is not None and self.options.fail_open
                          else None)
        # Settles and releases that could not reach Redis, sent before the next operation.
        self._owed: deque[tuple[str, Callable[[], object]]] = deque()
        self._owed_lock = threading.Lock()
        self._settling_up = threading.Lock()
        self._last_totals: dict[str, Totals] = {}
        # What this process reserved and has not closed (its claims and record as stored), so
        # a settle can still be recorded if Redis loses the reservation (flushed, or
        # restarted without its data) meanwhile.
        self._reserved: dict[str, tuple[tuple[ScopeClaim, ...], str]] = {}

    # -- writes ---------------------------------------------------------------------------

    def reserve(self, claims: Sequence[ScopeClaim], amount_usd: Decimal, call: CallInfo, *,
                time: datetime, expires_at: datetime, tags: Mapping[str, str]) -> str:
        merged, merged_json = _prepared(tuple(claims))
        worst, worst_text = scaled(amount_usd, rounding="up", field="amount_usd")
        if self._fallback is not None and self._session.resting():
            return self._fallback.reserve(merged, worst, call, time=time, expires_at=expires_at,
                                          tags=tags)
        call_id = _new_id()
        record = open_record_json(call_id, merged, worst, call, time, tags)
        args = (call_id, str(micros(time)), str(micros(expires_at)), worst_text, merged_json,
                record, str(os.getpid()), _HOST, str(expires_at), _RECOVER_BATCH)
        try:
            reply = self._with_redis(partial(self._session.run, "reserve", args))
        except LedgerError as exc:
            if self._fallback is None or not isinstance(exc, LedgerUnavailable):
                raise
            if not self._fallback.has_unreplayed():  # once per outage, not once per call
                log.warning("spendguard: %s; reserving in this process up to local_cap_usd "
                            "(fail-open) until it is back", exc)
            return self._fallback.reserve(merged, worst, call, time=time, expires_at=expires_at,
                                          tags=tags)
        if reply[0] == "refused":
            current = [Totals(tidy(reply[i]), tidy(reply[i + 1]), int(reply[i + 2]))
                       for i in range(1, len(reply), 3)]
            refused = refusal(merged, current, worst)
            if refused is None:  # pragma: no cover - Lua and Python apply the same rule
                raise LedgerError(f"Redis ledger {self.url} refused a call that fits")
            raise refused
        self._reserved[call_id] = (merged, record)
        return call_id

    def settle(self, reservation_id: str, settlement: Settlement) -> list[Crossing]:
        actual, actual_text = scaled(settlement.actual_usd, rounding="up", field="actual_usd")
        if actual is not settlement.actual_usd:  # finer than the scale: charged rounded up
            settlement = replace(settlement, actual_usd=actual)
        if self._fallback is not None and self._fallback.owns(reservation_id):
            self._fallback.settle(reservation_id, settlement)
            self._settle_up_quietly()
            return []
        nonce = _new_id()  # makes a resent settle a no-op, and names any correction
        operation = partial(self._settle, reservation_id, settlement, actual_text, nonce)
        return self._or_owe(operation, f"settlement of call {reservation_id}", [])

    def release(self, reservation_id: str, *, reason: str, time: datetime) -> bool:
        if self._fallback is not None and self._fallback.owns(reservation_id):
            released = self._fallback.release(reservation_id, reason=reason, time=time)
            self._settle_up_quietly()
            return released
        operation = partial(self._release, reservation_id, reason, time, _new_id())
        return self._or_owe(operation, f"release of call {reservation_id}", True)

    def adjust(self, claims: Sequence[ScopeClaim], amount_usd: Decimal, *, time: datetime,
               note: str, tags: Mapping[str, str] | None = None, provider: str = "",
               model: str = "") -> str:
        merged = scaled_claims(merge_claims(claims))
        amount, _ = scaled(amount_usd, rounding="up", field="amount_usd")
        record = SpendRecord(
            id=_new_id(), time=time, scopes=tuple(c.scope for c in merged),
            tags=dict(tags or {}), provider=provider, model=model, endpoint="", tokens={},
            estimated_usd=ZERO, actual_usd=amount, usage_estimated=False, table_version="",
            latency_s=None, request_id=None, attempt=0, status="adjustment", note=note,
            period_keys=tuple(c.period_key for c in merged),
            limits_usd=tuple(c.limit_usd for c in merged))
        self._with_redis(partial(self._insert_adjustment, record, merged, report=False))
        return record.id

    def claim_alert(self, scope: str, period_key: str, threshold: str, time: datetime) -> bool:
        """Record that ``threshold``'s alert for ``scope`` in ``period_key`` is being sent;
        False if some process already did (a field of the ``crossings`` hash)."""
        field = f"alert:{threshold}:{period_key} {scope} 0"
        key = f"{self._session.prefix}crossings"
        return bool(self._with_redis(partial(self._session.read, lambda client: client.hsetnx(
            key, field, str(micros(time))))))

    def recover_expired(self, now: datetime) -> list[str]:
        recovered = [] if self._fallback is None else self._fallback.recover_expired(now)
        while True:
            ids = self._with_redis(partial(self._session.run, "recover",
                                           [str(micros(now)), "1000"]))
            recovered.extend(ids)
            if len(ids) < 1000:
                return recovered

    # -- reads ------------------------------------------------------------------------------

    def totals(self, scope: str, period_key: str) -> Totals:
        """Spent and reserved USD, including this process's fail-open calls not yet replayed.

        In fail-open mode while Redis is unreachable: the totals last read from Redis plus
        this process's local calls (other processes' spending since is unknown).
        """
        field = total_field(scope, period_key)
        try:
            if self._fallback is not None and self._session.resting():
                raise LedgerUnavailable(f"Redis ledger {self.url} is resting", url=self.url)
            shared = self._with_redis(partial(read_totals, self._session, scope, period_key))
            self._last_totals[field] = shared
        except LedgerUnavailable:
            if self._fallback is None:
                raise
            shared = self._last_totals.get(field, Totals())
        if self._fallback is None:
            return shared
        local = self._fallback.unreplayed_totals(scope, period_key)
        with exact():
            return Totals(shared.spent_usd + local.spent_usd,
                          shared.reserved_usd + local.reserved_usd, shared.calls + local.calls)

    def totals_sum(self, scope: str, period_keys: Sequence[str]) -> Totals:
        """One scope's totals over several period keys, in one round trip to Redis."""
        if self._fallback is not None:  # keep the fail-open accounting of totals()
            return sum_totals(self.totals(scope, key) for key in period_keys)
        return self._with_redis(partial(read_totals_sum, self._session, scope, period_keys))

    def records(self, *, since: datetime | None = None, until: datetime | None = None,
                scope: str | None = None, tag: str | None = None,
                model: str | None = None) -> Iterator[SpendRecord]:
        return self._with_redis(partial(read_records, self._session, since=since, until=until,
                                        scope=scope, tag=tag, model=model))

    def verify(self, *, progress: Callable[[int], object] | None = None) -> list[str]:
        return self._with_redis(partial(verify_events, self._session, progress=progress))

    def require_existing(self) -> None:
        """``LedgerError`` naming the URL when nothing was ever written under this prefix
        (a report or export of a mistyped prefix); reads only."""
        # A probe of its own: this ledger's connections stamp an empty prefix with an
        # identity as they connect, which a read must not do.
        probe = RedisSession(self.options, check_identity=False, reading=True)
        try:
            exists = probe.has_ledger()
        finally:
            probe.close()
        if not exists:
            raise LedgerNotFound(f"no ledger at {self.url} (prefix {self.options.key_prefix!r}): "
                              f"nothing has been recorded there; check --ledger or "
                              f"SPENDGUARD_LEDGER")

    def close(self) -> None:
        """Send what is owed to Redis if it can be reached, then close the connections."""
        self._settle_up_quietly()
        if self._owed:
            log.warning("spendguard: %d settlement(s) could not reach %s before close; their "
                        "reservations will expire and be charged at their worst case",
                        len(self._owed), self.url)
        self._session.identity.save()
        self._session.close()

    def __repr__(self) -> str:
        return f"RedisLedger({self.url!r})"

    # -- the rules' replies ----------------------------------------------------------------

    def _settle(self, reservation_id: str, settlement: Settlement, actual_text: str,
                nonce: str) -> list[Crossing]:
        reply = self._session.run("settle", (reservation_id, actual_text,
                                             settlement_json(settlement),
                                             str(micros(settlement.time)), nonce))
        reserved = self._reserved.pop(reservation_id, None)
        if reply[0] == "missing":
            self._record_lost(reservation_id, reserved, settlement)
            return []
        if reply[0] == "recovered":
            return self._correct(reply, settlement, nonce, "late settle after recovery")
        self._check_open(reply, reservation_id)
        if len(reply) > 1:  # the settle's event: the ledger's sequence this process has seen
            self._session.identity.saw(reply[1])
        return crossings(reply[2], reply[3:]) if len(reply) > 2 else []

    def _release(self, reservation_id: str, reason: str, time: datetime, nonce: str) -> bool:
        reply = self._session.run("release", [reservation_id, reason, str(micros(time)), nonce])
        self._reserved.pop(reservation_id, None)
        if reply[0] == "missing":  # nothing was billed, so nothing is lost with it
            log.warning("spendguard: Redis ledger %s no longer has reservation %s (flushed or "
                        "restarted without its data); its release has nothing to do",
                        self.url, reservation_id)
            return False
        if reply[0] == "recovered":
            nothing = Settlement(time, ZERO, {}, False, "", 0.0, None, "released")
            self._correct(reply, nothing, nonce, f"late release after recovery: {reason}")
            return True
        if reply[0] == "closed":
            return False
        self._check_open(reply, reservation_id)
        return True

    def _record_lost(self, reservation_id: str,
                     reserved: tuple[tuple[ScopeClaim, ...], str] | None,
                     settlement: Settlement) -> None:
        """Redis lost a reservation while its call was in flight: the provider billed the call
        all the same, so record it as a finished call, flagged in its note, instead of
        failing the caller after the fact."""
        if reserved is None:  # never reserved by this process: a caller's mistake
            raise LedgerError(f"no reservation {reservation_id} in ledger {self.url}")
        claims, opened_json = reserved
        opened = record_from_json(opened_json)
        record = replace(
            opened, tokens=dict(settlement.tokens), actual_usd=settlement.actual_usd,
            usage_estimated=settlement.usage_estimated, table_version=settlement.table_version,
            latency_s=settlement.latency_s, request_id=settlement.request_id or opened.request_id,
            status=settlement.status, note=LOST_RESERVATION_NOTE)
        self._session.run("import", _import_args(CallRow(record, claims, "settled")))
        log.warning("spendguard: Redis ledger %s lost reservation %s while its call was in "
                    "flight (flushed, or restarted without its data); the call (%s) is "
                    "recorded as settled, flagged in its note", self.url, reservation_id,
                    format_usd(settlement.actual_usd))

    def _check_open(self, reply: list[str], reservation_id: str) -> None:
        if reply[0] == "missing":
            raise LedgerError(f"no reservation {reservation_id} in ledger {self.url}")
        if reply[0] == "closed":
            raise LedgerError(f"reservation {reservation_id} is already {reply[1]}; a call is "
                              f"settled or released exactly once")

    def _correct(self, reply: list[str], settlement: Settlement, correction_id: str,
                 note: str) -> list[Crossing]:
        """The owner outlived its reservation's expiry: keep the recovered charge, correct it."""
        _, worst_text, claims_text, rec_text = reply
        original = record_from_json(rec_text)
        with exact():
            correction_usd = settlement.actual_usd - tidy(worst_text)
        record = replace(
            original, id=correction_id, time=settlement.time, tokens=dict(settlement.tokens),
            estimated_usd=ZERO, actual_usd=correction_usd,
            usage_estimated=settlement.usage_estimated,
            table_version=settlement.table_version, latency_s=settlement.latency_s,
            request_id=settlement.request_id or original.request_id, status="adjustment",
            note=f"{note} of call {original.id} ({settlement.status})")
        return self._insert_adjustment(record, claims_from_json(claims_text), report=True)

    def _insert_adjustment(self, record: SpendRecord, claims: Sequence[ScopeClaim], *,
                           report: bool) -> list[Crossing]:
        _, amount_text = scaled(record.actual_usd, rounding="up", field="amount_usd")
        reply = self._session.run("adjust", [
            record.id, str(micros(record.time)), amount_text, claims_json(claims),
            record_json(record), record.note or "", "1" if report else "0"])
        return crossings(claims_json(claims), reply[1:]) if len(reply) > 1 else []

    # -- reaching Redis, and settling up once it is back ----------------------------------

    def _with_redis(self, operation: Callable[[], _T]) -> _T:
        self._settle_up()
        return operation()

    def _or_owe(self, operation: Callable[[], _T], what: str, meanwhile: _T) -> _T:
        """Run ``operation`` in Redis, or keep it for later if Redis cannot be reached."""
        if not self._session.resting():
            try:
                return self._with_redis(operation)
            except LedgerError as exc:
                if not isinstance(exc, LedgerUnavailable):
                    raise
                log.warning("spendguard: %s; %s kept in this process until it is back", exc,
                            what)
        with self._owed_lock:
            self._owed.append((what, operation))
        return meanwhile

    def _settle_up(self) -> None:
        """Send owed settlements and replay fail-open calls; raises if Redis is unreachable."""
        if not self._owed and (self._fallback is None or not self._fallback.has_unreplayed()):
            return
        if not self._settling_up.acquire(blocking=False):
            return  # another thread is at it; this operation need not wait
        try:
            while self._owed:
                what, operation = self._owed[0]
                try:
                    operation()
                except LedgerError as exc:
                    if isinstance(exc, LedgerUnavailable):
                        raise
                    log.warning("spendguard: %s could not be applied: %s", what, exc)
                with self._owed_lock:
                    self._owed.popleft()
            if self._fallback is not None:
                for row in self._fallback.to_replay():
                    self._session.run("import", _import_args(row))
                    self._fallback.replayed(row.record.id)
        finally:
            self._settling_up.release()

    def _settle_up_quietly(self) -> None:
        if self._session.resting():
            return
        try:
            self._settle_up()
        except LedgerError as exc:
            log.debug("spendguard: cannot settle up with %s yet: %s", self.url, exc)


def open_redis(url: str) -> RedisLedger:
    """The ledger for a ``redis://``, ``redis+cluster://`` or ``redis+sentinel://`` URL
    (``rediss…`` for TLS); no connection is made yet."""
    return RedisLedger(url)


# -- what the scripts read and write ---------------------------------------------------------

@lru_cache(maxsize=256)
def _prepared(claims: tuple[ScopeClaim, ...]) -> tuple[tuple[ScopeClaim, ...], str]:
    """A call's claims merged, on the 15-place scale, and as the scripts read them.

    A budget names the same claims call after call, so this work is done once per period.
    """
    merged = scaled_claims(merge_claims(claims))
    return merged, claims_json(merged)


def _new_id() -> str:
    """A fresh call or settle id: 128 random bits as 32 hex digits, as ``uuid4().hex`` but
    without building a UUID."""
    return os.urandom(16).hex()


def _import_args(row: CallRow) -> list[str]:
    """IMPORT's arguments for a call made and ended while Redis was unreachable."""
    record = row.record
    state = row.state if row.state in ("settled", "released", "recovered", "adjustment") \
        else "settled"
    done = changes_json(actual_usd=record.actual_usd, tokens=dict(record.tokens),
                        usage_estimated=record.usage_estimated,
                        table_version=record.table_version, latency_s=record.latency_s,
                        request_id=record.request_id, status=record.status, note=record.note)
    return [record.id, state, str(micros(record.time)),
            scaled(record.estimated_usd, rounding="up", field="estimated_usd")[1],
            scaled(record.actual_usd, rounding="up", field="actual_usd")[1],
            claims_json(row.claims), record_json(record), done, record.note or "",
            str(micros(record.time))]
