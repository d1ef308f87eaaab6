"""Redis Cluster throughput: reserve + settle pairs a second on a local 3-primary cluster.

Usage::

    .venv/bin/python benchmarks/redis_cluster.py [--calls 2000] [--processes 8] [--quick]

Starts its own cluster (three ``redis-server --cluster-enabled yes`` on free loopback ports in
a temporary folder, joined by ``redis-cli --cluster create``, ready once every node's
``CLUSTER INFO`` says ``cluster_state:ok``) and shuts it down at the end. A ledger's keys all
carry its prefix as hash tag, so one ledger is one slot on one primary; the cluster's capacity
comes from many ledgers. Two rows: every process on one ledger (one primary does all the
work), then the processes spread over one ledger per primary. Each row gives the workers' CPU
per call and each primary's (``INFO cpu``), as ``ledger_throughput.py`` does.
"""

from __future__ import annotations

import argparse
import shutil
import socket
import subprocess
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

from ledger_throughput import measure_cpu, server_cpu_s

HOST = "127.0.0.1"


def _free_port() -> int:
    """A free port whose cluster bus port (port + 10000) is free too."""
    while True:
        with socket.socket() as probe:
            probe.bind((HOST, 0))
            port: int = probe.getsockname()[1]
        if port < 55535:
            with socket.socket() as bus:
                try:
                    bus.bind((HOST, port + 10000))
                except OSError:
                    continue
            return port


def _cli(port: int, *args: str) -> str:
    return subprocess.run(["redis-cli", "-h", HOST, "-p", str(port), *args],
                          capture_output=True, text=True, timeout=30, check=False).stdout


def _until(condition: Any, what: str) -> None:
    deadline = time.monotonic() + 60
    while not condition():
        if time.monotonic() > deadline:
            raise SystemExit(f"timed out waiting for {what}")
        time.sleep(0.02)  # between two polls of the condition


def start_cluster(folder: Path, primaries: int = 3) -> list[int]:
    """Start and join ``primaries`` nodes; their ports once the cluster is ok."""
    ports = []
    for _ in range(primaries):
        port = _free_port()
        node = folder / str(port)
        node.mkdir()
        subprocess.run(["redis-server", "--port", str(port), "--bind", HOST, "--save", "",
                        "--appendonly", "no", "--cluster-enabled", "yes",
                        "--cluster-config-file", str(node / "nodes.conf"), "--dir", str(node),
                        "--daemonize", "yes", "--logfile", str(node / "redis.log")],
                       check=True, timeout=30)
        ports.append(port)
        _until(lambda p=port: _cli(p, "PING").strip() == "PONG", f"node {port}")
    subprocess.run(["redis-cli", "--cluster", "create", *(f"{HOST}:{p}" for p in ports),
                    "--cluster-replicas", "0", "--cluster-yes"],
                   capture_output=True, check=True, timeout=60)
    _until(lambda: all("cluster_state:ok" in _cli(p, "CLUSTER", "INFO") for p in ports),
           "cluster_state:ok")
    return ports


def prefixes_per_primary(ports: list[int]) -> dict[int, str]:
    """One fresh ledger prefix whose hash tag lands on each primary, by port."""
    from redis.cluster import RedisCluster

    client: Any = RedisCluster(host=HOST, port=ports[0])
    found: dict[int, str] = {}
    try:
        while len(found) < len(ports):
            prefix = f"sgbench:{uuid.uuid4().hex[:8]}:"
            node = client.get_node_from_key(f"{{{prefix}}}totals")
            found.setdefault(node.port, prefix)
    finally:
        client.close()
    return found


def measure_row(ports: list[int], prefixes: list[str], processes: int,
                calls: int) -> tuple[float, float, list[float]]:
    """Pairs a second with ``processes`` spread over ``prefixes``; client and node CPU µs."""
    nodes = ",".join(f"{HOST}:{p}" for p in ports)
    urls = [f"redis+cluster://{nodes}?prefix={prefixes[i % len(prefixes)]}"
            for i in range(processes)]
    before = [server_cpu_s(f"redis://{HOST}:{p}") for p in ports]
    rate, client_us = measure_cpu(urls, calls)
    after = [server_cpu_s(f"redis://{HOST}:{p}") for p in ports]
    pairs = processes * calls
    return rate, client_us, [(b - a) / pairs * 1e6 for a, b in zip(before, after, strict=True)]


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n")[0])
    parser.add_argument("--calls", type=int, default=2000, help="calls per process")
    parser.add_argument("--processes", type=int, default=8)
    parser.add_argument("--quick", action="store_true", help="500 calls per process")
    options = parser.parse_args()
    calls = 500 if options.quick else options.calls
    if shutil.which("redis-server") is None or shutil.which("redis-cli") is None:
        print("n/a: redis-server and redis-cli are needed to start a local cluster")
        return
    with tempfile.TemporaryDirectory(prefix="spendguard-cluster-") as folder:
        ports = start_cluster(Path(folder))
        try:
            spread = list(prefixes_per_primary(ports).values())
            rows = [("1 ledger (1 primary)", measure_row(ports, spread[:1], options.processes,
                                                          calls)),
                     (f"{len(spread)} ledgers (1 per primary)",
                      measure_row(ports, spread, options.processes, calls))]
        finally:
            for port in ports:
                _cli(port, "SHUTDOWN", "NOSAVE")
    print(f"{'ledgers':<26} {'processes':>9} {'pairs/s':>9} {'client CPU':>11} "
          f"{'CPU per primary (µs per pair)':>30}")
    for name, (rate, client_us, node_us) in rows:
        per_node = " / ".join(f"{us:,.1f}" for us in node_us)
        print(f"{name:<26} {options.processes:>9} {rate:>9,.0f} {client_us:>11,.1f} "
              f"{per_node:>30}")
    print(f"({calls} calls per process, each a reserve + settle; 3 primaries, no replicas, on "
          f"this machine's loopback; CPU in µs per pair)")


if __name__ == "__main__":
    main()
