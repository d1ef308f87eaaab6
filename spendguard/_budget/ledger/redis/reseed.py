"""Rebuild a Redis ledger that lost its data, from a durable copy: ``spendguard ledger reseed``.

A Redis ledger that comes back empty or older than its processes saw is refused (see
:mod:`~spendguard._budget.ledger.redis.identity`) until someone restores it. When Redis's own
backup is gone or stale, ``reseed`` writes the finished calls of a durable copy — a SQLite
ledger or backup, or the PostgreSQL table that ``spendguard ledger drain`` fills — back into
Redis: each record as a closed call with its events and totals, skipped if its id is there
already (so a reseed can be re-run, and merges with calls made since). It then stamps the
ledger with a new generation marked ``reseeded``: processes that refused the reset ledger accept
it at their next connection and carry on from the restored totals. ``empty=True`` stamps
without copying anything, for starting from $0 on purpose.

Calls that were in flight when the data was lost are not in any copy: their processes keep
their settles and send them once the ledger is reseeded (recorded as calls whose reservation
was lost). Calls finished after the copy's last drain are lost with Redis's data: drain often.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from datetime import UTC, datetime

from spendguard._budget.ledger.base import ScopeClaim, SpendRecord
from spendguard._budget.ledger.engine import CallRow
from spendguard._budget.ledger.redis import _import_args
from spendguard._budget.ledger.redis.identity import new_generation
from spendguard._budget.ledger.redis.options import parse_redis_url
from spendguard._budget.ledger.redis.session import RedisSession
from spendguard._core.errors import ConfigError
from spendguard._core.terminal import masked_url

__all__ = ["ReseedResult", "reseed"]

_STATES = {"released": "released", "recovered": "recovered", "adjustment": "adjustment"}


@dataclass(frozen=True, slots=True)
class ReseedResult:
    """What a reseed did: records read from the copy, how many were new, the new generation."""

    read: int
    written: int
    generation: str


def reseed(ledger_url: str, source_url: str | os.PathLike[str] | None = None, *,
           empty: bool = False) -> ReseedResult:
    """Write the finished calls of ``source_url`` into the Redis ledger ``ledger_url`` and
    stamp it reseeded; with ``empty=True`` (and no source), only stamp it. See the module."""
    if (source_url is None) == (not empty):
        raise ConfigError("reseed: give a durable copy to rebuild from (--from "
                          "sqlite:///backup.db or the postgresql:// URL drained into), or "
                          "--empty to start from $0 on purpose — one of the two")
    options = parse_redis_url(ledger_url)
    session = RedisSession(options, check_identity=False)
    try:
        prefix = session.prefix
        generation = new_generation()
        origin = "empty" if source_url is None else f"from {masked_url(os.fspath(source_url))}"
        stamp = f"{datetime.now(UTC).isoformat(timespec='seconds')} {origin}"
        session.check_writable()  # a new ledger stamped, an old one migrated, a newer refused
        # Stamped first: the scripts refuse to write into a ledger without a generation.
        session.read(lambda client: client.hset(f"{prefix}meta", mapping={
            "generation": generation, "reseeded": stamp}))
        read = written = 0
        if source_url is not None:
            before = session.read(lambda client: client.zcard(f"{prefix}records"))
            for record in _records(os.fspath(source_url)):
                read += 1
                session.run("import", _import_args(_row(record)))
            written = session.read(lambda client: client.zcard(f"{prefix}records")) - before
        session.identity.forget()  # this machine's marker: the next connection records anew
        return ReseedResult(read, int(written), generation)
    finally:
        session.close()


def _records(url: str) -> Iterator[SpendRecord]:
    """The records of a durable copy: a drained PostgreSQL table, or any ledger URL."""
    from spendguard._budget.ledger.drain_postgres import (  # noqa: PLC0415
        PostgresArchive,
        is_postgres_url,
    )

    if is_postgres_url(url):
        archive = PostgresArchive(url)
        try:
            yield from archive.records()
        finally:
            archive.close()
        return
    from spendguard._budget.ledger import open_ledger  # noqa: PLC0415 - avoids a cycle

    source: Iterable[SpendRecord] = open_ledger(url, read_only=True).records()
    yield from source


def _row(record: SpendRecord) -> CallRow:
    """A finished record as the closed call IMPORT writes back."""
    limits = list(record.limits_usd) + [None] * (len(record.scopes) - len(record.limits_usd))
    claims = tuple(ScopeClaim(scope, key, limit)
                   for scope, key, limit in zip(record.scopes, record.period_keys, limits,
                                                strict=True))
    return CallRow(record, claims, _STATES.get(record.status, "settled"))
