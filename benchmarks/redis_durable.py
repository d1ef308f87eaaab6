"""The cost of durable settles: reserve + settle latency with and without ``wait_replicas``.

Usage::

    .venv/bin/python benchmarks/redis_durable.py [--calls 2000] [--quick]

Starts its own primary and one replica (``redis-server --replicaof``) on free loopback ports
in a temporary folder, waits until the replica's link is up, and times, in one thread, pairs
of reserve + settle on a fresh ledger over ``redis://`` to the primary: first without
waiting, then with ``?wait_replicas=1`` (each settle followed by ``WAIT 1``, so it returns
once the replica has it). Each row gives the median and the 99th percentile of one pair, and
what waiting adds at the median. On one machine the replica answers over loopback; across
machines add the network round trip to the replica to each settle.
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import subprocess
import tempfile
import time
from pathlib import Path

from ledger_throughput import _pair
from redis_cluster import HOST, _cli, _free_port, _until

from spendguard._budget.ledger import open_ledger


def _start(folder: Path, *extra: str) -> int:
    port = _free_port()
    node = folder / str(port)
    node.mkdir()
    subprocess.run(["redis-server", "--port", str(port), "--bind", HOST, "--save", "",
                    "--appendonly", "no", "--repl-diskless-sync-delay", "0", "--dir",
                    str(node), "--daemonize", "yes", "--logfile", str(node / "redis.log"),
                    *extra], check=True, timeout=30)
    _until(lambda: _cli(port, "PING").strip() == "PONG", f"redis-server on {port}")
    return port


def pair_times(url: str, calls: int) -> list[float]:
    """Seconds per reserve + settle pair, ``calls`` of them, after a warm-up."""
    ledger = open_ledger(url)
    for _ in range(50):
        _pair(ledger)
    times = []
    for _ in range(calls):
        started = time.perf_counter()
        _pair(ledger)
        times.append(time.perf_counter() - started)
    ledger.close()
    return times


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n")[0])
    parser.add_argument("--calls", type=int, default=2000, help="pairs per row")
    parser.add_argument("--quick", action="store_true", help="200 pairs per row")
    options = parser.parse_args()
    calls = 200 if options.quick else options.calls
    if shutil.which("redis-server") is None or shutil.which("redis-cli") is None:
        print("n/a: redis-server and redis-cli are needed to start a primary and a replica")
        return
    with tempfile.TemporaryDirectory(prefix="spendguard-durable-") as folder:
        primary = _start(Path(folder))
        replica = _start(Path(folder), "--replicaof", HOST, str(primary))
        try:
            _until(lambda: "master_link_status:up" in _cli(replica, "INFO", "replication"),
                   "the replica to sync")
            url = f"redis://{HOST}:{primary}/0?prefix=sgbench:"
            rows = [("no wait", pair_times(url, calls)),
                    ("wait_replicas=1", pair_times(f"{url}&wait_replicas=1", calls))]
        finally:
            for port in (replica, primary):
                _cli(port, "SHUTDOWN", "NOSAVE")
    base = statistics.median(rows[0][1])
    print(f"{'settles':<16} {'median pair':>12} {'p99 pair':>10} {'added (median)':>15}")
    for name, times in rows:
        median = statistics.median(times)
        p99 = statistics.quantiles(times, n=100)[98]
        print(f"{name:<16} {median * 1e6:>10,.0f} µs {p99 * 1e6:>8,.0f} µs "
              f"{(median - base) * 1e6:>12,.0f} µs")
    print(f"({calls} reserve + settle pairs per row, one thread, one replica, all on this "
          f"machine's loopback)")


if __name__ == "__main__":
    main()
