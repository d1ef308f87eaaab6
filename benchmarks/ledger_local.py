"""Ledger throughput: reserve + settle pairs per second, 1 and 8 processes (or threads).

Usage::

    .venv/bin/python benchmarks/ledger_local.py [--seconds 3] [--quick]

Each worker opens the ledger by URL and, for a fixed time after a common start, reserves a
worst case against one shared budget scope and settles it, through the ``Ledger`` interface the
guard uses. SQLite and Redis are shared across processes; the memory ledger lives in one
process, so it runs 8 threads instead. ``run_all.py`` runs the Redis helper's
``benchmarks/ledger_throughput.py`` instead when that script exists; this one stays as the
SQLite/memory fallback.
"""

from __future__ import annotations

import argparse
import multiprocessing
import statistics
import tempfile
import threading
import time
import uuid
from concurrent.futures import ProcessPoolExecutor
from datetime import UTC, datetime, timedelta
from decimal import Decimal
from pathlib import Path
from typing import Any

from harness import add_quick, fmt_us, markdown_table, percentile
from ledgers import available_ledgers, drop_bench_keys

from spendguard.ledger import CallInfo, ScopeClaim, Settlement, open_ledger

LIMIT_USD = Decimal("1000000")
WORST_USD = Decimal("0.0125")
ACTUAL_USD = Decimal("0.0042")
CALL = CallInfo(provider="openai", model="gpt-4o-mini", endpoint="chat.completions",
                estimated_input_tokens=520, estimated_output_tokens=256, input_exact=True)


def pairs(url: str, scope: str, seconds: float, start: Any) -> list[float]:
    """Reserve + settle for ``seconds`` after ``start``; the duration of each pair (s)."""
    ledger = open_ledger(url)
    claims = [ScopeClaim(scope, "all", LIMIT_USD)]
    ledger.totals(scope, "all")  # connect (and migrate) before the clock starts
    start.wait()
    durations: list[float] = []
    deadline = time.perf_counter() + seconds
    while (begun := time.perf_counter()) < deadline:
        now = datetime.now(UTC)
        reservation = ledger.reserve(claims, WORST_USD, CALL, time=now,
                                     expires_at=now + timedelta(minutes=15), tags={})
        ledger.settle(reservation, Settlement(now, ACTUAL_USD, {"input": 520, "output": 100},
                                              False, "bench", 0.001))
        durations.append(time.perf_counter() - begun)
    return durations


def in_processes(url: str, workers: int, seconds: float) -> list[list[float]]:
    context = multiprocessing.get_context("spawn")
    scope = f"bench-{uuid.uuid4().hex[:8]}"
    with context.Manager() as manager:
        start = manager.Barrier(workers)
        with ProcessPoolExecutor(workers, mp_context=context) as pool:
            futures = [pool.submit(pairs, url, scope, seconds, start) for _ in range(workers)]
            return [future.result() for future in futures]


def in_threads(url: str, workers: int, seconds: float) -> list[list[float]]:
    scope = f"bench-{uuid.uuid4().hex[:8]}"
    start = threading.Barrier(workers)
    results: list[list[float]] = [[] for _ in range(workers)]

    def one(index: int) -> None:
        results[index] = pairs(url, scope, seconds, start)

    threads = [threading.Thread(target=one, args=(i,)) for i in range(workers)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return results


def row(kind: str, how: str, per_worker: list[list[float]], seconds: float) -> list[str]:
    every = [d for durations in per_worker for d in durations]
    rate = len(every) / seconds
    return [kind, how, f"{rate:,.0f}", fmt_us(statistics.median(every)),
            fmt_us(percentile(every, 0.99))]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--seconds", type=float, default=3.0)
    parser.add_argument("--workers", type=int, default=8)
    add_quick(parser)
    args = parser.parse_args(argv)
    seconds, workers = (0.2, 2) if args.quick else (args.seconds, args.workers)
    rows: list[list[str]] = []
    with tempfile.TemporaryDirectory(prefix="spendguard-bench-") as folder:
        for choice in available_ledgers(Path(folder)):
            if choice.url is None:
                rows.append([choice.kind, "", choice.missing or "", "", ""])
                continue
            url = choice.url if choice.kind != "memory" else f"memory://bench-{uuid.uuid4()}"
            rows.append(row(choice.kind, "1 process", in_threads(url, 1, seconds), seconds))
            if choice.kind == "memory":
                rows.append(row(choice.kind, f"{workers} threads",
                                in_threads(url, workers, seconds), seconds))
            else:
                rows.append(row(choice.kind, f"{workers} processes",
                                in_processes(url, workers, seconds), seconds))
    drop_bench_keys()
    print(f"Ledger throughput: reserve + settle pairs against one budget scope, "
          f"{seconds:g} s per run\n")
    print(markdown_table(["ledger", "workers", "pairs / s (all workers)", "median pair",
                          "p99 pair"], rows))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
