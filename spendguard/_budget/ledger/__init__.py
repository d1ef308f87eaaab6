"""Ledgers, chosen by URL: ``sqlite:///path`` (the default), ``memory://`` (tests), ``redis://``
(also ``redis+cluster://``, ``redis+sentinel://``, and ``rediss…`` for TLS), and
``postgresql://user@host:5432/db`` (``postgres://`` too).

``open_ledger()`` with no URL uses ``$SPENDGUARD_LEDGER``, else a SQLite file in spendguard's
data directory (``$SPENDGUARD_HOME``, else the platform's user data dir). One instance is kept
per URL per process, so every budget naming the same URL shares its connections and totals.
"""

from __future__ import annotations

import importlib
import os
import threading
import weakref
from collections import OrderedDict
from pathlib import Path

from spendguard._budget.ledger.base import (
    CallInfo,
    Crossing,
    Ledger,
    ScopeClaim,
    Settlement,
    SpendRecord,
    Totals,
)
from spendguard._budget.ledger.paths import default_ledger_path, default_ledger_url, home_dir
from spendguard._core.errors import ConfigError

__all__ = [
    "CallInfo",
    "Crossing",
    "Ledger",
    "ScopeClaim",
    "Settlement",
    "SpendRecord",
    "Totals",
    "default_ledger_path",
    "default_ledger_url",
    "home_dir",
    "open_ledger",
    "resolve_ledger_url",
]

# scheme -> "module:factory"; a factory takes the resolved URL. A new backend adds one line.
_BACKENDS: dict[str, str] = {
    "sqlite": "spendguard._budget.ledger.sqlite:open_sqlite",
    "memory": "spendguard._budget.ledger.memory:MemoryLedger",
    **{scheme: "spendguard._budget.ledger.redis:open_redis" for scheme in (
        "redis", "rediss", "redis+cluster", "rediss+cluster", "redis+sentinel",
        "rediss+sentinel")},
    "postgresql": "spendguard._budget.ledger.postgres:open_postgres",
    "postgres": "spendguard._budget.ledger.postgres:open_postgres",
}
_REDIS_SCHEMES = frozenset(scheme for scheme, target in _BACKENDS.items()
                           if target.startswith("spendguard._budget.ledger.redis:"))
_RECENT_MAX = 8

_lock = threading.Lock()
# Every ledger still in use stays findable (one instance per URL) ...
_live: weakref.WeakValueDictionary[tuple[int, str], Ledger] = weakref.WeakValueDictionary()
# ... and the last few stay open even when unused, so the default ledger is not reopened per call.
_recent: OrderedDict[tuple[int, str], Ledger] = OrderedDict()
# A named memory ledger is its only copy of the data: it lives as long as the process.
_named_memory: dict[str, Ledger] = {}


def resolve_ledger_url(url: str | os.PathLike[str] | None = None) -> str:
    """The canonical form of a ledger URL (absolute SQLite path); None means the default."""
    if url is None:
        url = default_ledger_url()
    if isinstance(url, os.PathLike):
        return f"sqlite:///{Path(url).expanduser().resolve()}"
    if not isinstance(url, str):
        raise ConfigError(f"ledger: expected a URL string, a path or a Ledger, got "
                          f"{type(url).__name__}")
    scheme, sep, rest = url.partition("://")
    if not sep or scheme not in _BACKENDS:
        raise ConfigError(
            f"ledger: {url!r} is not a ledger URL; use 'sqlite:///path/to/ledger.db' "
            f"(sqlite:////abs/path for an absolute path), 'memory://', 'memory://name', or "
            f"for Redis 'redis://host:6379/0', 'redis+cluster://host:7000,host:7001' or "
            f"'redis+sentinel://host:26379/service_name/0' ('rediss' for TLS), or for "
            f"PostgreSQL 'postgresql://user@host:5432/db' (?schema=name for a schema of its own)"
        )
    if scheme == "sqlite":
        if not rest.startswith("/") or rest == "/":
            raise ConfigError(f"ledger: {url!r} names no file; write 'sqlite:///ledger.db' or "
                              f"'sqlite:////abs/path/ledger.db'")
        # As in SQLAlchemy: what follows the third slash is the path, relative unless it
        # starts with another slash.
        return f"sqlite:///{Path(rest[1:]).expanduser().resolve()}"
    return url


def open_ledger(url: str | os.PathLike[str] | None = None, *, read_only: bool = False) -> Ledger:
    """The ledger at ``url``, opened (and migrated) once per process; None means the default.

    ``memory://`` is a new private ledger on every call; ``memory://name`` is shared by name.
    ``read_only`` is for reports and exports: a SQLite file (or a PostgreSQL ledger's schema)
    must exist and is read without writing to it (so a read-only file or folder works), unless
    this process has it open; a Redis prefix must hold a ledger (``LedgerError`` naming the URL
    otherwise, nothing written).
    """
    resolved = _resolve_default() if url is None else resolve_ledger_url(url)
    if read_only and resolved.startswith(("sqlite:///", "postgresql://", "postgres://")):
        with _lock:
            writable = _live.get((os.getpid(), resolved))
        if writable is not None:
            return writable
        if resolved.startswith("sqlite:///"):
            from spendguard._budget.ledger.sqlite import open_sqlite  # noqa: PLC0415 - as _create does

            return open_sqlite(resolved, read_only=True)
        from spendguard._budget.ledger.postgres import open_postgres  # noqa: PLC0415

        return open_postgres(resolved, read_only=True)
    if read_only and resolved.partition("://")[0] in _REDIS_SCHEMES:
        redis_ledger = open_ledger(resolved)
        redis_ledger.require_existing()  # type: ignore[attr-defined]
        return redis_ledger
    if resolved == "memory://":
        return _create(resolved)
    if resolved.startswith("memory://"):
        with _lock:
            if resolved not in _named_memory:
                _named_memory[resolved] = _create(resolved)
            return _named_memory[resolved]
    key = (os.getpid(), resolved)  # a forked child must not reuse its parent's connections
    with _lock:
        ledger = _live.get(key)
        if ledger is None:
            ledger = _create(resolved)
            _live[key] = ledger
        _recent[key] = ledger
        _recent.move_to_end(key)
        while len(_recent) > _RECENT_MAX:
            _recent.popitem(last=False)
    return ledger


_default_urls: dict[tuple[str | None, str | None], str] = {}


def _resolve_default() -> str:
    """The default URL, resolved once per value of the environment (it is read every call)."""
    key = (os.environ.get("SPENDGUARD_LEDGER"), os.environ.get("SPENDGUARD_HOME"))
    resolved = _default_urls.get(key)
    if resolved is None:
        resolved = _default_urls[key] = resolve_ledger_url(None)
    return resolved


def _create(url: str) -> Ledger:
    scheme = url.partition("://")[0]
    module_name, _, factory = _BACKENDS[scheme].partition(":")
    ledger: Ledger = getattr(importlib.import_module(module_name), factory)(url)
    return ledger
