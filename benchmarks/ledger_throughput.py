"""Ledger throughput: reservations per second (reserve + settle) on memory, SQLite and Redis.

Usage::

    .venv/bin/python benchmarks/ledger_throughput.py [--calls 2000] [--processes 1 8]
        [--redis redis://127.0.0.1:6379/0] [--backends memory sqlite redis]

Every process opens the ledger itself, waits at a barrier so all start together, then makes
``--calls`` reservations on one shared scope (a limit far above what they spend, so none is
refused), settling each at once — the ledger's whole work for one guarded call. The figure is
the calls of all processes divided by the wall time from the barrier to the last finish; the
per-call time is its inverse, next to SQLite's. A memory ledger is private to each process
(nothing is shared), so its 8-process row is 8 independent ledgers. Redis keys go under a
fresh prefix, deleted afterwards.
"""

from __future__ import annotations

import argparse
import multiprocessing
import tempfile
import time
import uuid
from datetime import UTC, datetime, timedelta
from decimal import Decimal
from pathlib import Path
from typing import Any

from spendguard.ledger import CallInfo, ScopeClaim, Settlement, open_ledger

CALL = CallInfo(provider="openai", model="gpt-4o-mini", endpoint="chat", attempt=1,
                estimated_input_tokens=1200, estimated_output_tokens=500, input_exact=True)
CLAIMS = [ScopeClaim("bench", "all", Decimal("1000000000"), Decimal("800000000"))]
WORST, ACTUAL = Decimal("0.000480"), Decimal("0.000213")


def _worker(url: str, calls: int, barrier: Any) -> None:
    ledger = open_ledger(url)
    ledger.totals("bench", "all")  # connect and migrate before the clock starts
    barrier.wait()
    for _ in range(calls):
        now = datetime.now(UTC)
        reservation_id = ledger.reserve(CLAIMS, WORST, CALL, time=now,
                                        expires_at=now + timedelta(minutes=15), tags={})
        ledger.settle(reservation_id, Settlement(now, ACTUAL, {"input": 1200, "output": 210},
                                                 False, "bench", 0.0))
    ledger.close()


def measure(url: str, processes: int, calls: int) -> float:
    """Reservations (reserve + settle) per second of ``processes`` processes on ``url``."""
    context = multiprocessing.get_context("spawn")
    barrier = context.Barrier(processes + 1)
    workers = [context.Process(target=_worker, args=(url, calls, barrier))
               for _ in range(processes)]
    for worker in workers:
        worker.start()
    barrier.wait()
    started = time.perf_counter()
    for worker in workers:
        worker.join()
        if worker.exitcode != 0:
            raise SystemExit(f"a worker on {url} failed (exit code {worker.exitcode})")
    return processes * calls / (time.perf_counter() - started)


def _drop(redis_url: str, prefix: str) -> None:
    import redis

    client = redis.Redis.from_url(redis_url)
    keys = list(client.scan_iter(match=f"{prefix}*", count=1000))
    if keys:
        client.delete(*keys)
    client.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--calls", type=int, default=2000, help="calls per process")
    parser.add_argument("--processes", type=int, nargs="+", default=[1, 8])
    parser.add_argument("--redis", default="redis://127.0.0.1:6379/0")
    parser.add_argument("--backends", nargs="+", default=["memory", "sqlite", "redis"])
    options = parser.parse_args()
    rows: list[tuple[str, int, float]] = []
    with tempfile.TemporaryDirectory() as directory:
        for backend in options.backends:
            for processes in options.processes:
                prefix = f"sgbench:{uuid.uuid4().hex[:8]}:"
                url = {"memory": "memory://bench",
                       "sqlite": f"sqlite:///{Path(directory) / f'{uuid.uuid4().hex}.db'}",
                       "redis": f"{options.redis}?prefix={prefix}"}[backend]
                try:
                    rows.append((backend, processes, measure(url, processes, options.calls)))
                finally:
                    if backend == "redis":
                        _drop(options.redis, prefix)
    sqlite = {processes: rate for backend, processes, rate in rows if backend == "sqlite"}
    print(f"{'backend':<8} {'processes':>9} {'reservations/s':>15} {'µs per call':>12} "
          f"{'vs SQLite':>10}")
    for backend, processes, rate in rows:
        versus = f"{sqlite[processes] / rate:.2f}x" if processes in sqlite else "-"
        print(f"{backend:<8} {processes:>9} {rate:>15,.0f} {1e6 / rate:>12,.1f} {versus:>10}")
    print(f"({options.calls} calls per process; each call = reserve + settle; 'vs SQLite' is "
          f"time per call relative to SQLite with as many processes; memory is per-process)")


if __name__ == "__main__":
    main()
