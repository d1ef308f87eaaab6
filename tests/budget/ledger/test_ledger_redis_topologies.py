"""The Redis ledger past one server: Redis Cluster, Sentinel and TLS URLs, on real servers.

The cluster is the session's local 3-primary cluster; the Sentinel and the TLS server are
started by the test that needs them, on free loopback ports, and shut down afterwards.
"""

from __future__ import annotations

import shutil
import subprocess
import uuid
from collections.abc import Callable, Iterator
from decimal import Decimal
from pathlib import Path

import pytest

from spendguard import Budget, ConfigError, open_ledger
from spendguard._budget.ledger.redis import RedisLedger
from spendguard._budget.ledger.redis.options import parse_redis_url
from tests.ledger_helpers import spend
from tests.redis_cluster_helpers import (
    HOST,
    cluster_url,
    drop_cluster_prefix,
    free_port_pair,
    poll,
    start_primary,
    start_sentinel,
    stop_servers,
)
from tests.redis_helpers import fixture_open_redis  # noqa: F401 - a fixture: pytest finds it here

D = Decimal
pytestmark = pytest.mark.redis
needs_servers = pytest.mark.skipif(
    shutil.which("redis-server") is None or shutil.which("redis-cli") is None,
    reason="redis-server and redis-cli are needed to start local Redis servers "
           "(apt-get install redis-server)")


# -- the URL forms ----------------------------------------------------------------------------

def test_a_cluster_url_names_the_nodes_to_find_it_by_and_tags_keys_with_the_prefix() -> None:
    options = parse_redis_url("redis+cluster://:pw@10.0.0.1:7000,10.0.0.2:7001?prefix=acme:")
    assert (options.topology, options.nodes, options.db) == (
        "cluster", (("10.0.0.1", 7000), ("10.0.0.2", 7001)), 0)
    assert (options.prefix, options.key_prefix, options.password) == ("acme:", "{acme:}", "pw")
    assert options.url == "redis+cluster://:***@10.0.0.1:7000,10.0.0.2:7001?prefix=acme:"


def test_a_sentinel_url_names_the_sentinels_the_service_and_the_database() -> None:
    options = parse_redis_url("redis+sentinel://s1:26379,s2/mymaster/3?timeout=0.5")
    assert (options.topology, options.nodes, options.service, options.db) == (
        "sentinel", (("s1", 26379), ("s2", 26379)), "mymaster", 3)
    assert options.key_prefix == options.prefix == "spendguard:"


def test_tls_options_are_read_from_a_rediss_url() -> None:
    options = parse_redis_url("rediss+cluster://h:7000?ssl_cert_reqs=required"
                              "&ssl_ca_certs=/etc/ssl/ca.pem")
    assert (options.tls, options.ssl_cert_reqs, options.ssl_ca_certs) == (
        True, "required", "/etc/ssl/ca.pem")


@pytest.mark.parametrize(("url", "says"), [
    ("redis+cluster://h:7000/2", "only database 0"),
    ("redis+cluster://h:7000?prefix={sg}:", "brace"),
    ("redis+sentinel://h:26379", "names no service"),
    ("redis+sentinel://h:26379/mymaster/zero", "database"),
    ("redis://h1:6379,h2:6379/0", "redis\\+cluster://"),
    ("redis+cluster://h:7000,h:port", "bad port"),
    ("redis://h/0?ssl_cert_reqs=none", "need TLS; write 'rediss://"),
    ("rediss://h/0?ssl_cert_reqs=maybe", "ssl_cert_reqs"),
    ("rediss://h/0?ssl_ca_certs=", "ssl_ca_certs"),
    ("redis+clutser://h:7000", "is not a ledger URL"),
])
def test_a_bad_cluster_sentinel_or_tls_url_is_a_config_error_naming_the_part(
        url: str, says: str) -> None:
    with pytest.raises(ConfigError, match=says):
        open_ledger(url)


def test_tls_options_reach_the_redis_client(
        open_redis: Callable[[str], RedisLedger]) -> None:
    ledger = open_redis("rediss://127.0.0.1:1/0?ssl_cert_reqs=optional"
                        "&ssl_ca_certs=/etc/ssl/ca.pem")
    kwargs = ledger._session.client.connection_pool.connection_kwargs
    assert (kwargs["ssl_cert_reqs"], kwargs["ssl_ca_certs"]) == ("optional", "/etc/ssl/ca.pem")
    assert ledger._session.client.connection_pool.connection_class.__name__ == "SSLConnection"


# -- Redis Cluster ----------------------------------------------------------------------------

@pytest.fixture(name="cluster_prefixes")
def fixture_cluster_prefixes(redis_cluster: list[int]) -> Iterator[list[str]]:
    prefixes: list[str] = []
    yield prefixes
    for prefix in prefixes:
        drop_cluster_prefix(redis_cluster, prefix)


def test_every_key_of_a_cluster_ledger_lives_in_the_slot_of_its_prefix(
        redis_cluster: list[int], cluster_prefixes: list[str]) -> None:
    prefix = f"sgtest:{uuid.uuid4().hex[:12]}:"
    cluster_prefixes.append(prefix)
    budget = Budget("10", scope="team", ledger=cluster_url(redis_cluster, prefix),
                    warn_at=0.1)
    spend(budget, "2", "1.5")
    assert (budget.spent, budget.reserved) == (D("1.5"), D(0))
    client = budget.ledger._session.client  # type: ignore[attr-defined]
    keys = list(client.scan_iter(match=f"{{{prefix}}}*"))
    assert {f"{{{prefix}}}{name}" for name in ("totals", "records", "events", "meta",
                                                "crossings")} <= set(keys)
    assert {client.keyslot(key) for key in keys} == {client.keyslot(f"{{{prefix}}}")}


def test_ledgers_with_other_prefixes_are_spread_over_the_cluster_primaries(
        redis_cluster: list[int], cluster_prefixes: list[str]) -> None:
    cluster_prefixes.extend(f"sgtest:{uuid.uuid4().hex[:12]}:" for _ in range(12))
    nodes = set()
    for prefix in cluster_prefixes:
        ledger = open_ledger(cluster_url(redis_cluster, prefix))
        spend(Budget("5", scope="p", ledger=ledger, warn_at=None), "1", "1")
        client = ledger._session.client  # type: ignore[attr-defined]
        nodes.add(client.get_node_from_key(f"{{{prefix}}}totals").port)
        assert ledger.verify() == []
    assert len(nodes) > 1  # twelve ledgers did not all land on one primary


def test_a_cluster_ledger_with_a_stale_slot_map_follows_the_redirection(
        redis_cluster: list[int], cluster_prefixes: list[str]) -> None:
    prefix = f"sgtest:{uuid.uuid4().hex[:12]}:"
    cluster_prefixes.append(prefix)
    ledger = open_ledger(cluster_url(redis_cluster, prefix))
    budget = Budget("10", scope="team", ledger=ledger, warn_at=None)
    spend(budget, "1", "1")
    cluster = ledger._session.client  # type: ignore[attr-defined]
    slot = cluster.keyslot(f"{{{prefix}}}totals")
    owner = cluster.nodes_manager.slots_cache[slot][0]
    cluster.nodes_manager.slots_cache[slot] = [
        next(node for node in cluster.get_primaries() if node.name != owner.name)]  # stale
    spend(budget, "1", "0.5")  # the wrong primary answers MOVED
    assert (budget.spent, budget.reserved) == (D("1.5"), D(0))
    assert cluster.nodes_manager.slots_cache[slot][0].name == owner.name
    assert ledger.verify() == []


# -- Sentinel ---------------------------------------------------------------------------------

@needs_servers
def test_a_sentinel_url_finds_the_primary_and_keeps_a_budget_there(tmp_path: Path) -> None:
    primary = start_primary(tmp_path)
    sentinel = 0
    try:
        sentinel = start_sentinel(tmp_path, primary, "sgsvc")
        url = f"redis+sentinel://{HOST}:{sentinel}/sgsvc/0?prefix=sgtest:"
        budget = Budget("3", scope="team", ledger=url, warn_at=None)
        spend(budget, "2", "1.25")
        assert (budget.spent, budget.reserved) == (D("1.25"), D(0))
        ledger = budget.ledger
        assert ledger._session.client.get_connection_kwargs()[  # type: ignore[attr-defined]
            "db"] == 0
        assert [r.actual_usd for r in ledger.records()] == [D("1.25")]
        ledger.close()
    finally:
        stop_servers([port for port in (sentinel, primary) if port])


# -- TLS --------------------------------------------------------------------------------------

def _certificates(folder: Path) -> tuple[Path, Path, Path]:
    """A throwaway CA and a server certificate for 127.0.0.1 it signed."""
    ca_key, ca, key, request, cert = (folder / name for name in (
        "ca.key", "ca.pem", "server.key", "server.csr", "server.pem"))
    extension = folder / "san.cnf"
    extension.write_text(f"subjectAltName=IP:{HOST}\n")
    for command in (
            ["req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1", "-subj",
             "/CN=spendguard-test-ca", "-keyout", ca_key, "-out", ca],
            ["req", "-newkey", "rsa:2048", "-nodes", "-subj", f"/CN={HOST}", "-keyout", key,
             "-out", request],
            ["x509", "-req", "-in", request, "-CA", ca, "-CAkey", ca_key, "-CAcreateserial",
             "-days", "1", "-extfile", extension, "-out", cert]):
        subprocess.run(["openssl", *map(str, command)], capture_output=True, check=True,
                       timeout=60)
    return ca, cert, key


@needs_servers
@pytest.mark.skipif(shutil.which("openssl") is None, reason="openssl makes the certificates "
                    "(apt-get install openssl)")
def test_a_rediss_url_keeps_a_budget_on_a_tls_server_checked_against_its_ca(
        tmp_path: Path) -> None:
    ca, cert, key = _certificates(tmp_path)
    port = free_port_pair()
    subprocess.run(["redis-server", "--port", "0", "--tls-port", str(port), "--bind", HOST,
                    "--tls-cert-file", str(cert), "--tls-key-file", str(key),
                    "--tls-ca-cert-file", str(ca), "--tls-auth-clients", "no", "--save", "",
                    "--appendonly", "no", "--dir", str(tmp_path), "--daemonize", "yes",
                    "--logfile", str(tmp_path / "tls.log")], check=True, timeout=30)
    url = f"rediss://{HOST}:{port}/0?prefix=sgtest:&ssl_cert_reqs=required&ssl_ca_certs={ca}"
    ledger = RedisLedger(url)
    try:
        poll(lambda: _answers(ledger), "the TLS server to answer")
        budget = Budget("3", scope="team", ledger=ledger, warn_at=None)
        spend(budget, "2", "0.5")
        assert (budget.spent, budget.reserved) == (D("0.5"), D(0))
    finally:
        ledger._session.client.shutdown(nosave=True)
        ledger.close()


def _answers(ledger: RedisLedger) -> bool:
    try:
        return bool(ledger._session.client.ping())
    except Exception:  # not listening yet
        return False
