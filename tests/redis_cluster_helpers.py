"""Throwaway Redis deployments started by the tests: a 3-primary cluster and a Sentinel.

Each server runs on free loopback ports in a temporary folder and is shut down at the end.
Readiness is polled (``CLUSTER INFO`` says ``cluster_state:ok`` on every node; the Sentinel
names the primary), never waited for with a fixed sleep. Without ``redis-server`` and
``redis-cli`` the tests that need them are skipped.
"""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

HOST = "127.0.0.1"
PRIMARIES = 3

requires_redis_cluster_tools = pytest.mark.skipif(
    shutil.which("redis-server") is None or shutil.which("redis-cli") is None,
    reason="redis-server and redis-cli are needed to start a local Redis Cluster "
           "(apt-get install redis-server)")


def free_port_pair() -> int:
    """A free port whose cluster bus port (port + 10000) is free too."""
    for _ in range(100):
        with socket.socket() as probe:
            probe.bind((HOST, 0))
            port: int = probe.getsockname()[1]
        if port < 55535 and _free(port) and _free(port + 10000):
            return port
    raise AssertionError("no free pair of ports for a cluster node")


def _free(port: int) -> bool:
    with socket.socket() as probe:
        try:
            probe.bind((HOST, port))
        except OSError:
            return False
        return True


def poll(condition: Callable[[], bool], what: str, within_s: float = 30.0) -> None:
    """Wait until ``condition()`` holds, asking again every few milliseconds."""
    deadline = time.monotonic() + within_s
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.02)  # the pause between two polls of the condition, not a guessed delay


def _cli(port: int, *args: str) -> str:
    result = subprocess.run(["redis-cli", "-h", HOST, "-p", str(port), *args],
                            capture_output=True, text=True, timeout=30, check=False)
    return result.stdout


def _start_server(directory: Path, port: int, *extra: str) -> None:
    subprocess.run(["redis-server", "--port", str(port), "--bind", HOST, "--save", "",
                    "--appendonly", "no", "--dir", str(directory), "--daemonize", "yes",
                    "--logfile", str(directory / f"{port}.log"), *extra],
                   check=True, timeout=30)
    poll(lambda: _cli(port, "PING").strip() == "PONG", f"redis-server on port {port}")


def _shutdown(port: int) -> None:
    _cli(port, "SHUTDOWN", "NOSAVE")


def _cluster_ok(ports: list[int]) -> bool:
    return all("cluster_state:ok" in _cli(port, "CLUSTER", "INFO") for port in ports)


def start_cluster(directory: Path, primaries: int = PRIMARIES, *, replicas: int = 0,
                  node_timeout_ms: int = 5000) -> list[int]:
    """Start ``primaries`` cluster nodes (and ``replicas`` per primary), join them as one
    cluster, and wait until it is ok."""
    ports: list[int] = []
    for _ in range(primaries * (1 + replicas)):
        port = free_port_pair()
        node = directory / str(port)
        node.mkdir()
        _start_server(node, port, "--cluster-enabled", "yes", "--cluster-config-file",
                      str(node / "nodes.conf"), "--cluster-node-timeout",
                      str(node_timeout_ms), "--repl-diskless-sync-delay", "0")
        ports.append(port)
    subprocess.run(["redis-cli", "--cluster", "create", *(f"{HOST}:{p}" for p in ports),
                    "--cluster-replicas", str(replicas), "--cluster-yes"],
                   capture_output=True, check=True, timeout=60)
    poll(lambda: _cluster_ok(ports), "cluster_state:ok on every node")
    if replicas:
        poll(lambda: sum("master_link_status:up" in _cli(port, "INFO", "replication")
                         for port in ports) == primaries * replicas, "every replica to sync")
    return ports


def slot_primary(port: int, key: str) -> int:
    """The port of the primary that the node on ``port`` names for ``key``'s slot now."""
    slot = int(_cli(port, "CLUSTER", "KEYSLOT", key).strip())
    for line in _cli(port, "CLUSTER", "NODES").splitlines():
        fields = line.split()
        if "master" not in fields[2] or "fail" in fields[2]:
            continue
        for part in fields[8:]:
            low, _, high = part.partition("-")
            if low.isdigit() and int(low) <= slot <= int(high or low):
                return int(fields[1].split("@")[0].rpartition(":")[2])
    return 0


def stop_servers(ports: list[int]) -> None:
    for port in ports:
        _shutdown(port)


def cluster_url(ports: list[int], prefix: str, **options: str) -> str:
    query = "&".join(f"{key}={value}" for key, value in {"prefix": prefix, **options}.items())
    return f"redis+cluster://{','.join(f'{HOST}:{p}' for p in ports)}?{query}"


def drop_cluster_prefix(ports: list[int], prefix: str) -> None:
    """Delete every key of the ledger under ``prefix`` (all in its hash tag's slot)."""
    from redis.cluster import RedisCluster

    client = RedisCluster(host=HOST, port=ports[0], socket_timeout=5)
    try:
        keys = list(client.scan_iter(match=f"{{{prefix}}}*", count=1000))
        for key in keys:
            client.delete(key)
    finally:
        client.close()


@pytest.fixture(scope="session", name="redis_cluster")
def fixture_redis_cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[list[int]]:
    """The ports of a local 3-primary Redis Cluster, started once for the session.

    ``tests/conftest.py`` makes it visible everywhere: a test module that imports it as well
    defines it again for itself, and starts a cluster of its own (about 2-5 s)."""
    if shutil.which("redis-server") is None or shutil.which("redis-cli") is None:
        pytest.skip("redis-server and redis-cli are needed to start a local Redis Cluster "
                    "(apt-get install redis-server)")
    ports: list[int] = []
    try:
        ports = start_cluster(tmp_path_factory.mktemp("redis-cluster"))
        yield ports
    finally:
        stop_servers(ports)


def start_sentinel(directory: Path, primary_port: int, service: str, *,
                   down_after_ms: int | None = None) -> int:
    """A Sentinel on a free port watching the primary on ``primary_port`` as ``service``;
    with ``down_after_ms``, one that fails over that soon after the primary stops answering
    (the failover itself bounded to a second)."""
    port = free_port_pair()
    config = directory / f"sentinel-{port}.conf"
    quick = ("" if down_after_ms is None else
             f"sentinel down-after-milliseconds {service} {down_after_ms}\n"
             f"sentinel failover-timeout {service} 1000\n")
    config.write_text(f"port {port}\nbind {HOST}\ndir {directory}\n"
                      f"sentinel monitor {service} {HOST} {primary_port} 1\n{quick}")
    subprocess.run(["redis-server", str(config), "--sentinel", "--daemonize", "yes",
                    "--logfile", str(directory / f"sentinel-{port}.log")],
                   check=True, timeout=30)
    poll(lambda: str(primary_port) in _cli(port, "SENTINEL", "get-master-addr-by-name",
                                           service), f"the Sentinel to name {service}")
    return port


def start_primary(directory: Path) -> int:
    """A plain Redis server on a free port (a Sentinel's primary), that a replica syncs
    from at once (no wait for more replicas to join the first sync)."""
    port = free_port_pair()
    _start_server(directory, port, "--repl-diskless-sync-delay", "0")
    return port


def start_replica(directory: Path, primary_port: int) -> int:
    """A Redis server on a free port replicating the one on ``primary_port``, once in sync."""
    port = free_port_pair()
    folder = directory / f"replica-{port}"
    folder.mkdir()
    _start_server(folder, port, "--replicaof", HOST, str(primary_port))
    poll(lambda: "master_link_status:up" in _cli(port, "INFO", "replication"),
         f"the replica on port {port} to sync")
    return port


def kill_server(port: int) -> None:
    """SIGKILL the server on ``port``: no goodbye to its clients, as when a machine dies."""
    info = _cli(port, "INFO", "server")
    pid = int(next(line.split(":")[1] for line in info.splitlines()
                   if line.startswith("process_id:")))
    os.kill(pid, signal.SIGKILL)
    poll(lambda: _cli(port, "PING").strip() != "PONG", f"the server on port {port} to die")


def sentinel_primary(sentinel_port: int, service: str) -> int:
    """The port of the primary the Sentinel names for ``service`` to its clients now (its
    ``SENTINEL MASTER`` entry, switched once the failover has promoted the replica)."""
    reply = _cli(sentinel_port, "SENTINEL", "MASTER", service).split()
    fields = dict(zip(reply[::2], reply[1::2], strict=False))
    return int(fields.get("port", 0))


def sentinel_knows_replica(sentinel_port: int, service: str, replica_port: int) -> bool:
    return str(replica_port) in _cli(sentinel_port, "SENTINEL", "replicas", service)


class Deployment:
    """Where a parametrised test's ledger lives: the shared Redis server or the local cluster."""

    def __init__(self, name: str, url: Callable[[str], str],
                 drop: Callable[[str], None]) -> None:
        self.name, self.url, self.drop = name, url, drop

    def __repr__(self) -> str:
        return self.name


@pytest.fixture(name="redis_deployment", params=["single", "cluster"])
def fixture_redis_deployment(request: pytest.FixtureRequest) -> Deployment:
    """The shared Redis server, then the local 3-primary cluster: each test runs on both."""
    from tests.redis_helpers import drop_prefix, ledger_url

    if request.param == "single":
        return Deployment("single", ledger_url, drop_prefix)
    ports: list[int] = request.getfixturevalue("redis_cluster")
    return Deployment("cluster", lambda prefix: cluster_url(ports, prefix),
                      lambda prefix: drop_cluster_prefix(ports, prefix))
