"""Helpers for the Redis ledger tests: the shared server, throwaway servers, worker processes.

Tests use the Redis server on 127.0.0.1:6379 (CI starts one) under a prefix of their own,
deleted afterwards; without a server they are skipped, saying how to start one. A test that
kills Redis never touches that server: it starts its own on a free port.

Run as a script, this file is a worker process sharing a Redis ledger with the tests:
``spend URL SCOPE LIMIT WORST ACTUAL CALLS THREADS [MAX_CALLS [PERIOD]]`` prints ``ready``,
waits for a line on stdin, then makes CALLS calls in each of THREADS threads (reserve WORST,
check that the scope never holds more than LIMIT nor counts more than MAX_CALLS calls, settle
ACTUAL) and prints a JSON summary.
"""

from __future__ import annotations

import json
import os
import selectors
import shutil
import socket
import subprocess
import sys
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from decimal import Decimal
from pathlib import Path

import pytest

from spendguard._budget.ledger.redis import RedisLedger

REPO_ROOT = Path(__file__).resolve().parent.parent
SHARED_HOST, SHARED_PORT = "127.0.0.1", 6379


def _reachable(host: str, port: int) -> bool:
    try:
        with socket.create_connection((host, port), timeout=0.5):
            return True
    except OSError:
        return False


requires_redis = pytest.mark.skipif(
    not _reachable(SHARED_HOST, SHARED_PORT),
    reason="no Redis server on 127.0.0.1:6379; start one with `redis-server --daemonize yes "
           "--bind 127.0.0.1 --port 6379 --save '' --appendonly no` (CI starts one)")
requires_redis_server_binary = pytest.mark.skipif(
    shutil.which("redis-server") is None,
    reason="redis-server is not installed; these tests start and kill a Redis of their own "
           "(apt-get install redis-server)")


def drop_prefix(prefix: str, port: int = SHARED_PORT, *, keep_identity: bool = False) -> None:
    """Delete every key under ``prefix`` (a test's own namespace); with ``keep_identity``,
    all but its ``meta`` hash, as a failover to a replica that missed the latest calls."""
    import redis

    client = redis.Redis(host=SHARED_HOST, port=port, socket_timeout=5)
    try:
        keys = [key for key in client.scan_iter(match=f"{prefix}*", count=1000)
                if not (keep_identity and key == f"{prefix}meta".encode())]
        if keys:
            client.delete(*keys)
    finally:
        client.close()


def ledger_url(prefix: str, port: int = SHARED_PORT, **options: str) -> str:
    query = "&".join(f"{key}={value}" for key, value in {"prefix": prefix, **options}.items())
    return f"redis://{SHARED_HOST}:{port}/0?{query}"


# Fixtures, named apart from their functions so a test module can import them (pytest finds
# them there) and still name the fixture as a parameter.
@pytest.fixture(name="redis_prefix")
def fixture_redis_prefix() -> Iterator[str]:
    """A key prefix of this test's own on the shared server, deleted afterwards."""
    prefix = f"sgtest:{uuid.uuid4().hex[:12]}:"
    yield prefix
    drop_prefix(prefix)


@pytest.fixture(name="redis_url")
def fixture_redis_url(redis_prefix: str) -> str:
    """A Redis ledger URL under this test's own prefix on the shared server."""
    return ledger_url(redis_prefix, timeout="2")


@pytest.fixture(name="open_redis")
def fixture_open_redis() -> Iterator[Callable[[str], RedisLedger]]:
    """Opens Redis ledgers that are closed, sockets and all, when the test ends."""
    ledgers: list[RedisLedger] = []

    def open_one(url: str) -> RedisLedger:
        ledgers.append(RedisLedger(url))
        return ledgers[-1]

    yield open_one
    for ledger in ledgers:
        ledger.close()


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind((SHARED_HOST, 0))
        port: int = probe.getsockname()[1]
        return port


class ThrowawayRedis:
    """A Redis server of this test's own, on a free port, that the test may kill and restart."""

    def __init__(self, directory: Path, *, persistent: bool = False) -> None:
        self.port = free_port()
        self.directory = directory
        self.persistent = persistent
        self.process: subprocess.Popen[bytes] | None = None

    def start(self) -> None:
        storage = (["--appendonly", "yes", "--appendfsync", "always"] if self.persistent
                   else ["--appendonly", "no"])
        self.process = subprocess.Popen(
            ["redis-server", "--port", str(self.port), "--bind", SHARED_HOST, "--save", "",
             *storage, "--dir", str(self.directory)],
            stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
        self._wait_for(b"Ready to accept connections")

    def kill(self) -> None:
        """SIGKILL: no goodbye to the clients, as when a machine dies."""
        assert self.process is not None and self.process.stdout is not None
        self.process.kill()
        self.process.wait(timeout=10)
        self.process.stdout.close()
        self.process = None

    def _wait_for(self, text: bytes, within_s: float = 10.0) -> None:
        # Read the server's log until it says it is ready: an event, not a guessed delay.
        # Raw reads of the pipe: a buffered reader could hold the line select() waits for.
        assert self.process is not None and self.process.stdout is not None
        pipe = self.process.stdout.fileno()
        deadline = time.monotonic() + within_s
        seen = b""
        with selectors.DefaultSelector() as selector:
            selector.register(pipe, selectors.EVENT_READ)
            while text not in seen and time.monotonic() < deadline:
                if not selector.select(timeout=deadline - time.monotonic()):
                    break
                chunk = os.read(pipe, 65536)
                if not chunk:
                    break
                seen += chunk
        if text not in seen:
            raise AssertionError(f"redis-server on port {self.port} did not start:\n"
                                 f"{seen.decode(errors='replace')}")


@pytest.fixture(name="server")
def fixture_server(tmp_path: Path) -> Iterator[ThrowawayRedis]:
    """A started :class:`ThrowawayRedis` (no persistence), killed when the test ends."""
    own = ThrowawayRedis(tmp_path)
    own.start()
    yield own
    if own.process is not None:
        own.kill()


def redis_worker(*args: str) -> subprocess.Popen[str]:
    """Start this file as a worker process with ``args`` in a fresh interpreter."""
    env = {**os.environ, "PYTHONPATH": str(REPO_ROOT)}
    return subprocess.Popen([sys.executable, __file__, *args], env=env, text=True,
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE)


def _spend(url: str, scope: str, limit: str, worst: str, actual: str, calls: str,
           threads: str, max_calls: str = "-", period: str | None = None) -> None:
    from spendguard._budget.budget import Budget, CallInfo
    from spendguard._budget.reservations import reserve_call
    from spendguard._core.errors import BudgetExceeded

    info = CallInfo(provider="openai", model="gpt-test", endpoint="chat")
    cap = None if max_calls == "-" else int(max_calls)
    budget = Budget(limit, scope=scope, ledger=url, warn_at=None, max_calls=cap, period=period)
    counts = {"granted": 0, "refused": 0, "violations": 0}
    lock = threading.Lock()

    def run() -> None:
        for _ in range(int(calls)):
            try:
                reservation = reserve_call(budget, Decimal(worst), call=info)
            except BudgetExceeded:
                with lock:
                    counts["refused"] += 1
                continue
            totals = budget.totals()
            over = totals.committed_usd > budget.limit_usd or (
                cap is not None and totals.calls > cap)
            reservation.settle(actual_usd=Decimal(actual), tokens={"output": 1},
                               usage_estimated=False, table_version="t", latency_s=0.0)
            with lock:
                counts["granted"] += 1
                counts["violations"] += over

    print("ready", flush=True)
    sys.stdin.readline()
    pool = [threading.Thread(target=run) for _ in range(int(threads))]
    for thread in pool:
        thread.start()
    for thread in pool:
        thread.join()
    print(json.dumps(counts), flush=True)


if __name__ == "__main__":
    mode, *arguments = sys.argv[1:]
    if mode != "spend":
        raise SystemExit(f"unknown mode {mode!r}")
    _spend(*arguments)
