"""The ledgers the benchmarks compare (memory, SQLite, Redis), and why one may be missing.

Redis is measured at ``redis://127.0.0.1:6379/15?prefix=bench-<run>:``, a prefix of this run's
own: two runs at once (or a test suite's smoke run beside a measurement) never delete each
other's ledger, which spendguard would rightly refuse as reset. When the Redis backend is not
in this checkout yet, or no server answers, its rows say so ("n/a ...") and the code path
stays, so the figures appear as soon as both are there.
"""

from __future__ import annotations

import contextlib
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from spendguard._budget.ledger import open_ledger
from spendguard._core.errors import ConfigError, LedgerError

__all__ = ["REDIS_URL", "LedgerChoice", "available_ledgers", "drop_bench_keys"]

_PREFIX = f"bench-{uuid.uuid4().hex[:12]}:"
REDIS_URL = f"redis://127.0.0.1:6379/15?prefix={_PREFIX}"
KINDS = ("memory", "sqlite", "redis")


@dataclass(frozen=True, slots=True)
class LedgerChoice:
    """A ledger to measure: its URL, or why it cannot be (``url`` None, ``missing`` set)."""

    kind: str
    url: str | None
    missing: str | None = None


def _redis() -> LedgerChoice:
    try:
        ledger = open_ledger(REDIS_URL)
    except ConfigError:
        return LedgerChoice("redis", None, "n/a (not built)")
    except (LedgerError, OSError) as exc:
        return LedgerChoice("redis", None, f"n/a (no Redis server: {type(exc).__name__})")
    try:
        ledger.totals("bench:probe", "all")
    except Exception as exc:  # whatever the backend raises for a server that is not there
        return LedgerChoice("redis", None, f"n/a (no Redis server: {type(exc).__name__})")
    return LedgerChoice("redis", REDIS_URL)


def available_ledgers(folder: Path, kinds: tuple[str, ...] = KINDS) -> list[LedgerChoice]:
    """One choice per kind; SQLite in a fresh file under ``folder``."""
    choices = []
    for kind in kinds:
        if kind == "memory":
            choices.append(LedgerChoice(kind, "memory://"))
        elif kind == "sqlite":
            choices.append(LedgerChoice(kind, f"sqlite:///{folder / 'bench-ledger.db'}"))
        else:
            choices.append(_redis())
    return choices


def drop_bench_keys() -> None:
    """Delete what this run wrote under its prefix in Redis db 15 (best effort)."""
    with contextlib.suppress(Exception):
        import redis

        client = redis.Redis(host="127.0.0.1", port=6379, db=15, socket_timeout=2)
        keys: Iterator[bytes] = client.scan_iter(match=f"{_PREFIX}*", count=1000)
        batch = list(keys)
        if batch:
            client.delete(*batch)
