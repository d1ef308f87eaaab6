"""The ledger-backend fixtures: one test definition, run on memory, SQLite, Redis (+ cluster) and
PostgreSQL.

A test that takes ``ledger`` (an open ledger) or ``ledger_backend`` (to open fresh ones, or to
get their URLs) runs once per backend: memory, a SQLite file in the test's ``tmp_path``, the
local Redis server and a local 3-primary Redis Cluster (started once per session), each Redis
one under a key prefix of the test's own, deleted when the test ends, and the local PostgreSQL
server, each ledger in a schema of its own, dropped when the test ends. Without a Redis or
PostgreSQL server, or without ``redis-server`` / ``redis-cli`` for the cluster, those runs are
skipped, saying why. ``tests/conftest.py`` makes these fixtures visible to every test module.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from spendguard._budget.ledger import Ledger, open_ledger
from tests.postgres_helpers import drop_schema, fresh_schema, postgres_url, requires_postgres
from tests.redis_cluster_helpers import (
    cluster_url,
    drop_cluster_prefix,
    requires_redis_cluster_tools,
)
from tests.redis_helpers import SHARED_PORT, drop_prefix, ledger_url, requires_redis

BACKENDS = ["memory", "sqlite",
            pytest.param("redis", marks=[pytest.mark.redis, requires_redis]),
            pytest.param("redis-cluster", marks=[pytest.mark.redis, requires_redis,
                                                 requires_redis_cluster_tools]),
            pytest.param("postgres", marks=[pytest.mark.postgres, requires_postgres])]


class LedgerBackend:
    """Fresh ledgers of one backend for one test; everything it opened is closed and removed."""

    def __init__(self, name: str, tmp_path: Path, cluster_ports: list[int]) -> None:
        self.name = name
        self._tmp_path = tmp_path
        self._cluster_ports = cluster_ports
        self._prefixes: list[str] = []
        self._schemas: list[str] = []
        self._opened: list[Ledger] = []

    def url(self, **options: str) -> str:
        """The URL of a new, empty ledger of this backend (``options`` go into a Redis URL).

        A memory URL is named, so every opening of it in this process shares one ledger.
        """
        fresh = uuid.uuid4().hex[:12]
        if self.name == "memory":
            return f"memory://{fresh}"
        if self.name == "sqlite":
            return f"sqlite:///{self._tmp_path / f'ledger-{fresh}.db'}"
        if self.name == "postgres":
            schema = fresh_schema()
            self._schemas.append(schema)
            return postgres_url(schema)
        prefix = f"sgtest:{fresh}:"
        self._prefixes.append(prefix)
        if self.name == "redis-cluster":
            return cluster_url(self._cluster_ports, prefix, **options)
        return ledger_url(prefix, SHARED_PORT, **options)

    def open(self) -> Ledger:
        """A new, empty ledger of this backend, closed when the test ends."""
        opened = open_ledger("memory://" if self.name == "memory" else self.url())
        self._opened.append(opened)
        return opened

    def close(self) -> None:
        """Close what was opened; delete the Redis keys under this test's prefixes and drop its
        PostgreSQL schemas."""
        for opened in self._opened:
            opened.close()
        drop_schema(*self._schemas)
        for prefix in self._prefixes:
            if self.name == "redis-cluster":
                drop_cluster_prefix(self._cluster_ports, prefix)
            else:
                drop_prefix(prefix)


@pytest.fixture(params=BACKENDS)
def ledger_backend(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[LedgerBackend]:
    """Each backend in turn; the test opens as many fresh ledgers of it as it needs."""
    cluster_ports: list[int] = (request.getfixturevalue("redis_cluster")
                                if request.param == "redis-cluster" else [])
    backend = LedgerBackend(request.param, tmp_path, cluster_ports)
    yield backend
    backend.close()


@pytest.fixture
def ledger(ledger_backend: LedgerBackend) -> Ledger:
    """An open, empty ledger of each backend in turn."""
    return ledger_backend.open()
