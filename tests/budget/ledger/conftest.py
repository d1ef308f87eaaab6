"""Ledger tests that start, kill and restart Redis servers of their own drop connections to
servers that are gone: collected right after each such test, quietly, instead of warned about
(as an unclosed socket) in whichever later test the garbage collector happens to run in."""

from __future__ import annotations

import gc
import warnings
from collections.abc import Iterator

import pytest

_THROWAWAY_SERVERS = ("redis_reset", "redis_failover", "redis_durable", "redis_restart",
                      "redis_faults", "redis_topologies", "redis_drain")


@pytest.fixture(autouse=True)
def collect_dropped_connections(request: pytest.FixtureRequest) -> Iterator[None]:
    yield
    if any(name in request.module.__name__ for name in _THROWAWAY_SERVERS):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", ResourceWarning)
            gc.collect()
