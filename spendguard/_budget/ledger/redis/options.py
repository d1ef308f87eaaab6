"""The Redis ledger's URL: where the server is, and how the ledger behaves when it is not there.

Three topologies, each with or without TLS (``rediss`` in place of ``redis``):

- ``redis://[[user]:password@]host[:port][/db]`` — one Redis server;
- ``redis+cluster://[[user]:password@]host:port[,host:port...][/0]`` — Redis Cluster, found
  from any of the nodes named. Every key of the ledger carries the prefix as its hash tag
  (``{spendguard:}totals``), so each script touches one slot: one ledger (one prefix) lives on
  one primary, and a cluster's capacity grows with the number of prefixes, not within one;
- ``redis+sentinel://[[user]:password@]host:port[,host:port...]/service_name[/db]`` — the
  primary that the Sentinels name ``service_name``, found again after a failover.

The options spendguard reads from the query, each checked here so a typo is an error, not a
default:

- ``timeout`` — seconds to connect and to wait for a reply (default 1 to connect, 2 to reply);
- ``prefix`` — put before every key (default ``spendguard:``);
- ``fail_open`` — ``1`` to keep making calls while Redis is unreachable, up to
  ``local_cap_usd`` per process (required with it); ``0`` (the default) refuses them;
- ``retry_s`` — in fail-open mode, how long to go straight to the local ledger after Redis
  failed before trying it again (default 5);
- ``wait_replicas`` — after each settle, release or correction, wait until that many
  replicas have acknowledged it (Redis ``WAIT``, up to the ``timeout``); one not acknowledged
  in time is kept in this process and sent again with the next operation, as when Redis is
  unreachable. Default 0: don't wait (a failover may lose the latest settles);
- ``ssl_cert_reqs`` (``none``, ``optional`` or ``required``, the default) and ``ssl_ca_certs``
  (a CA bundle file) — with TLS only, passed to redis-py as they are named.

The password never leaves this module except to the Redis client: :attr:`RedisOptions.url` is
the URL with it masked, used in every message and repr.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from decimal import Decimal
from typing import Literal
from urllib.parse import parse_qsl, unquote, urlsplit

from spendguard._core.errors import ConfigError
from spendguard._core.money import parse_usd
from spendguard._core.terminal import masked_url

__all__ = ["DEFAULT_PREFIX", "SCHEMES", "RedisOptions", "Topology", "parse_redis_url"]

DEFAULT_PREFIX = "spendguard:"
_DEFAULT_CONNECT_TIMEOUT_S = 1.0
_DEFAULT_REPLY_TIMEOUT_S = 2.0
_DEFAULT_RETRY_S = 5.0
_OPTIONS = ("timeout", "prefix", "fail_open", "local_cap_usd", "retry_s", "wait_replicas",
            "ssl_cert_reqs", "ssl_ca_certs")
_TRUE, _FALSE = ("1", "true", "yes", "on"), ("0", "false", "no", "off")
_CERT_REQS = ("none", "optional", "required")

Topology = Literal["single", "cluster", "sentinel"]
# scheme -> (topology, TLS)
SCHEMES: dict[str, tuple[Topology, bool]] = {
    "redis": ("single", False), "rediss": ("single", True),
    "redis+cluster": ("cluster", False), "rediss+cluster": ("cluster", True),
    "redis+sentinel": ("sentinel", False), "rediss+sentinel": ("sentinel", True),
}
_FORMS = ("'redis://host:6379/0', 'redis+cluster://host:7000,host:7001' or "
          "'redis+sentinel://host:26379,host:26380/service_name/0' ('rediss' for TLS)")


@dataclass(frozen=True, slots=True)
class RedisOptions:
    """A parsed Redis ledger URL. ``url`` is safe to show: its password is masked.

    ``nodes`` are the server (single), the nodes to discover the cluster from, or the
    Sentinels; ``host``/``port`` are the first of them. ``key_prefix`` is what every key
    starts with: the prefix, as a hash tag in a cluster.
    """

    url: str
    host: str
    port: int
    db: int
    username: str | None
    password: str | None
    tls: bool
    connect_timeout_s: float
    reply_timeout_s: float
    prefix: str
    fail_open: bool
    local_cap_usd: Decimal | None
    retry_s: float
    topology: Topology = "single"
    nodes: tuple[tuple[str, int], ...] = ()
    service: str | None = None
    ssl_cert_reqs: str | None = None
    ssl_ca_certs: str | None = None
    wait_replicas: int = 0

    @property
    def key_prefix(self) -> str:
        return f"{{{self.prefix}}}" if self.topology == "cluster" else self.prefix

    def __repr__(self) -> str:
        return f"RedisOptions({self.url!r})"


def parse_redis_url(url: str) -> RedisOptions:
    """Read ``url``; a bad part is a :class:`ConfigError` that names it (never the password)."""
    shown = masked_url(url)
    scheme = url.partition("://")[0].lower()
    if scheme not in SCHEMES or "://" not in url:
        raise ConfigError(f"ledger: {shown!r} is not a Redis URL; write {_FORMS}")
    topology, tls = SCHEMES[scheme]
    parts = urlsplit(url)
    userinfo, _, hosts = parts.netloc.rpartition("@")
    username, _, password = userinfo.partition(":")
    nodes = _nodes(hosts, shown, default_port=26379 if topology == "sentinel" else 6379)
    if topology == "single" and len(nodes) > 1:
        raise ConfigError(f"ledger: {shown!r} names several servers; for Redis Cluster write "
                          f"'redis+cluster://{hosts}', for Sentinels "
                          f"'redis+sentinel://{hosts}/service_name'")
    service, db = _path(parts.path, topology, shown)
    query = dict(parse_qsl(parts.query, keep_blank_values=True))
    unknown = sorted(set(query) - set(_OPTIONS))
    if unknown:
        raise ConfigError(f"ledger: {shown!r} has unknown option(s) {', '.join(unknown)}; the "
                          f"options are {', '.join(_OPTIONS)}")
    connect_s, reply_s = _DEFAULT_CONNECT_TIMEOUT_S, _DEFAULT_REPLY_TIMEOUT_S
    if "timeout" in query:
        connect_s = reply_s = _seconds(query["timeout"], "timeout", shown)
    prefix = _prefix(query.get("prefix", DEFAULT_PREFIX), topology, shown)
    fail_open = _flag(query.get("fail_open", "0"), shown)
    cap = None
    if "local_cap_usd" in query:
        cap = parse_usd(query["local_cap_usd"], field="local_cap_usd")
    if fail_open and cap is None:
        raise ConfigError(f"ledger: fail_open=1 in {shown!r} needs local_cap_usd, the most "
                          f"one process may spend while Redis is unreachable, e.g. "
                          f"'&local_cap_usd=5'")
    cert_reqs, ca_certs = _tls_options(query, tls, scheme, shown)
    return RedisOptions(
        url=shown, host=nodes[0][0], port=nodes[0][1], db=db,
        username=unquote(username) or None if userinfo else None,
        password=unquote(password) if userinfo and ":" in userinfo else None, tls=tls,
        connect_timeout_s=connect_s, reply_timeout_s=reply_s, prefix=prefix,
        fail_open=fail_open, local_cap_usd=cap,
        retry_s=(_seconds(query["retry_s"], "retry_s", shown, allow_zero=True)
                 if "retry_s" in query else _DEFAULT_RETRY_S),
        topology=topology, nodes=nodes, service=service, ssl_cert_reqs=cert_reqs,
        ssl_ca_certs=ca_certs, wait_replicas=_replicas(query.get("wait_replicas", "0"), shown),
    )


def _replicas(text: str, shown: str) -> int:
    if not text.isdigit() or int(text) > 100:
        raise ConfigError(f"ledger: wait_replicas={text!r} in {shown!r} must be a number of "
                          f"replicas from 0 to 100, e.g. 'wait_replicas=1'")
    return int(text)


def _nodes(hosts: str, shown: str, *, default_port: int) -> tuple[tuple[str, int], ...]:
    """``host[:port],host[:port]...`` (``[v6]:port`` for IPv6) as (host, port) pairs."""
    nodes = []
    for item in hosts.split(",") if hosts else [""]:
        host, port_text = item, ""
        if item.startswith("["):
            host, _, rest = item[1:].partition("]")
            port_text = rest.removeprefix(":")
        elif ":" in item:
            host, _, port_text = item.rpartition(":")
        if not port_text:
            port = default_port
        elif port_text.isdigit() and 0 < int(port_text) < 65536:
            port = int(port_text)
        else:
            raise ConfigError(f"ledger: {shown!r} has a bad port {port_text!r}; write e.g. "
                              f"'redis://host:6379/0'")
        nodes.append((host or "localhost", port))
    return tuple(nodes)


def _path(path: str, topology: Topology, shown: str) -> tuple[str | None, int]:
    """The Sentinel service name (None otherwise) and the database number from the path."""
    segments = [part for part in path.split("/") if part]
    service = None
    if topology == "sentinel":
        if not segments:
            raise ConfigError(f"ledger: {shown!r} names no service; write the name the "
                              f"Sentinels monitor the primary by, e.g. "
                              f"'redis+sentinel://host:26379/mymaster/0'")
        service = unquote(segments.pop(0))
    db_text = segments[0] if len(segments) == 1 else "0" if not segments else "/".join(segments)
    if not db_text.isdigit():
        raise ConfigError(f"ledger: {shown!r} names database {db_text!r}; the path is the "
                          f"database number, e.g. 'redis://host:6379/0'")
    if topology == "cluster" and int(db_text) != 0:
        raise ConfigError(f"ledger: {shown!r} names database {db_text}; Redis Cluster has "
                          f"only database 0: drop it, or keep ledgers apart by '?prefix='")
    return service, int(db_text)


def _prefix(prefix: str, topology: Topology, shown: str) -> str:
    if not prefix or not prefix.isprintable() or " " in prefix or len(prefix) > 100:
        raise ConfigError(f"ledger: prefix={prefix!r} in {shown!r} must be 1-100 printable "
                          f"characters without spaces, e.g. 'spendguard:'")
    if topology == "cluster" and ("{" in prefix or "}" in prefix):
        raise ConfigError(f"ledger: prefix={prefix!r} in {shown!r} holds a brace; in a cluster "
                          f"spendguard makes the prefix the hash tag itself, so write it "
                          f"without braces, e.g. 'spendguard:'")
    return prefix


def _tls_options(query: dict[str, str], tls: bool, scheme: str,
                 shown: str) -> tuple[str | None, str | None]:
    """``ssl_cert_reqs`` and ``ssl_ca_certs``, which only a TLS URL may carry."""
    given = [name for name in ("ssl_cert_reqs", "ssl_ca_certs") if name in query]
    if given and not tls:
        raise ConfigError(f"ledger: {', '.join(given)} in {shown!r} need TLS; write "
                          f"'{scheme.replace('redis', 'rediss', 1)}://...'")
    cert_reqs = query.get("ssl_cert_reqs")
    if cert_reqs is not None and cert_reqs.lower() not in _CERT_REQS:
        raise ConfigError(f"ledger: ssl_cert_reqs={cert_reqs!r} in {shown!r} must be one of "
                          f"{', '.join(_CERT_REQS)}")
    ca_certs = query.get("ssl_ca_certs")
    if ca_certs is not None and not ca_certs:
        raise ConfigError(f"ledger: ssl_ca_certs in {shown!r} is empty; give the path of a CA "
                          f"bundle, e.g. 'ssl_ca_certs=/etc/ssl/certs/ca.pem'")
    return None if cert_reqs is None else cert_reqs.lower(), ca_certs


def _seconds(text: str, name: str, shown: str, *, allow_zero: bool = False) -> float:
    try:
        value = float(text)
    except ValueError:
        value = math.nan
    if not math.isfinite(value) or value < 0 or (value == 0 and not allow_zero) or value > 600:
        raise ConfigError(f"ledger: {name}={text!r} in {shown!r} must be a number of seconds "
                          f"{'from 0' if allow_zero else 'above 0'} up to 600, e.g. 0.5")
    return value


def _flag(text: str, shown: str) -> bool:
    if text.lower() in _TRUE:
        return True
    if text.lower() in _FALSE:
        return False
    raise ConfigError(f"ledger: fail_open={text!r} in {shown!r} must be 1 or 0")
