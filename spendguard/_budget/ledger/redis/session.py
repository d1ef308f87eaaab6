"""A Redis ledger's connection: runs its scripts, with bounded timeouts, and names failures.

redis-py is imported here, when a ``redis://`` ledger is first opened, never before; the client
is a ``redis.Redis`` for one server, a ``redis.cluster.RedisCluster`` for a cluster, or the
primary a ``redis.sentinel.Sentinel`` names. Every script is sent with the ledger's ``totals``
key as its one declared key, so a cluster routes it to the primary holding the ledger's slot.
Every failure to reach the server — refused, timed out, reset, read-only after a failover, a
cluster that is down or moving slots — becomes
:class:`LedgerUnavailable` naming the URL with its password masked; anything else Redis
answers with becomes :class:`LedgerError`. A dropped connection is retried once at once
(a server restart leaves stale pooled connections); a timeout is not retried, so one operation
waits at most about twice the URL's ``timeout``.
"""

from __future__ import annotations

import hashlib
import threading
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, TypeVar

from spendguard._budget.ledger.redis import scripts as redis_scripts
from spendguard._budget.ledger.redis.options import RedisOptions
from spendguard._core.errors import ConfigError, LedgerError, LedgerUnavailable

if TYPE_CHECKING:
    import redis

__all__ = ["SCHEMA", "RedisSession"]

SCHEMA = "1"
_SCRIPTS = {"reserve": redis_scripts.RESERVE, "settle": redis_scripts.SETTLE,
            "release": redis_scripts.RELEASE, "adjust": redis_scripts.ADJUST,
            "recover": redis_scripts.RECOVER, "import": redis_scripts.IMPORT}
T = TypeVar("T")


class RedisSession:
    """The client, scripts and health of one Redis ledger in this process."""

    def __init__(self, options: RedisOptions) -> None:
        try:
            import redis  # noqa: PLC0415 - optional dependency, loaded on first use
            from redis.backoff import NoBackoff  # noqa: PLC0415
            from redis.retry import Retry  # noqa: PLC0415
        except ImportError:
            raise ConfigError(f"ledger: {options.url!r} needs the redis package; install it "
                              f"with pip install 'spendguard-llm[redis]'") from None
        self.options = options
        self.prefix = options.key_prefix
        self._redis = redis
        self.client: redis.Redis = _client(options, redis, Retry(
            NoBackoff(), 1, supported_errors=(redis.ConnectionError,)))
        self._route = f"{self.prefix}totals"
        self._own = threading.local()
        self._shas = {name: _sha1(source) for name, source in _SCRIPTS.items()}
        self._schema_checked = False
        self._rest_until = 0.0

    def run(self, name: str, args: list[str]) -> list[str]:
        """Run script ``name`` with the prefix and ``args``; its reply as a list of strings.

        EVALSHA sends the script's digest, not its text; a server that does not know the
        script yet (new, restarted, or another cluster primary) is sent it once.
        """
        reply = self.read(lambda client: self._evalsha(client, name, args))
        return [str(part) for part in reply]

    def _evalsha(self, client: Any, name: str, args: list[str]) -> Any:
        try:
            return client.evalsha(self._shas[name], 1, self._route, self.prefix, *args)
        except self._redis.exceptions.NoScriptError:
            client.script_load(_SCRIPTS[name])
            return client.evalsha(self._shas[name], 1, self._route, self.prefix, *args)

    def read(self, operation: Callable[[redis.Redis], T]) -> T:
        """Run ``operation`` on the client, failures mapped to spendguard's errors."""
        redis = self._redis
        try:
            if not self._schema_checked:
                self._check_schema()
            result = self._operate(operation)
        except redis.AuthenticationError as exc:
            raise LedgerError(f"Redis ledger {self.options.url} refused the credentials: "
                              f"{self._clean(exc)}; check the user and password in the "
                              f"URL") from exc
        except (redis.ConnectionError, redis.TimeoutError, redis.ReadOnlyError,
                redis.exceptions.ClusterError) as exc:
            self._rest()
            advice = ("" if self.options.fail_open else
                      "; spendguard fails closed and refuses calls it cannot record. Start or "
                      "fix Redis, or opt into fail-open with '?fail_open=1&local_cap_usd=N' "
                      "in the URL")
            raise LedgerUnavailable(
                f"Redis ledger {self.options.url} is unreachable ({type(exc).__name__}: "
                f"{self._clean(exc)}){advice}", url=self.options.url) from exc
        except redis.RedisError as exc:
            raise LedgerError(f"Redis ledger {self.options.url} failed: "
                              f"{self._clean(exc)}") from exc
        self._rest_until = 0.0
        return result

    def _operate(self, operation: Callable[[Any], T]) -> T:
        """``operation`` on this thread's connection; on a cluster, to the ledger's primary.

        Every key of a ledger is in one slot, so on a cluster the operation goes straight to
        the primary that the cluster client's map names for it, skipping the cluster client's
        own routing (about half of its time per command). If that primary answers that the
        slot has moved, is being moved or is down, or cannot be reached, the operation is run
        once more through the cluster client, which follows the redirection and renews its
        map: the scripts and reads are all safe to run twice.
        """
        if self.options.topology != "cluster":
            return operation(self._thread_client(self.client.connection_pool))
        exceptions = self._redis.exceptions
        cluster: Any = self.client
        try:
            node = cluster.get_node_from_key(self._route).redis_connection
        except exceptions.RedisClusterException:
            node = None
        if node is None:
            return operation(cluster)
        try:
            return operation(self._thread_client(node.connection_pool))
        except (exceptions.MovedError, exceptions.AskError, exceptions.TryAgainError,
                exceptions.ClusterDownError, exceptions.ConnectionError):
            return operation(cluster)

    def _thread_client(self, pool: Any) -> Any:
        """This thread's client, on a connection of its own from ``pool``.

        A pooled command takes a connection, polls its socket for stray data and gives it
        back each time; a connection kept per thread skips that, about a third of redis-py's
        time per command.
        """
        client = getattr(self._own, "client", None)
        if client is None or client.connection_pool is not pool:
            client = self._own.client = self._redis.Redis(connection_pool=pool,
                                                          single_connection_client=True)
        return client

    def resting(self) -> bool:
        """In fail-open mode: whether Redis failed less than ``retry_s`` ago (don't wait on it)."""
        return self.options.fail_open and time.monotonic() < self._rest_until

    def close(self) -> None:
        self.client.close()

    def _rest(self) -> None:
        if self.options.fail_open:
            self._rest_until = time.monotonic() + self.options.retry_s

    def _check_schema(self) -> None:
        key = f"{self.prefix}meta"
        self.client.hsetnx(key, "schema", SCHEMA)
        found: Any = self.client.hget(key, "schema")
        if found != SCHEMA:
            raise LedgerError(f"Redis ledger {self.options.url} (prefix {self.prefix!r}) has "
                              f"schema {found!r}, written by another spendguard version; this "
                              f"one reads schema {SCHEMA}")
        self._schema_checked = True

    def _clean(self, exc: BaseException) -> str:
        text = str(exc)
        if self.options.password:
            text = text.replace(self.options.password, "***")
        return text


def _sha1(source: str) -> str:
    return hashlib.sha1(source.encode(), usedforsecurity=False).hexdigest()


def _client(options: RedisOptions, redis: Any, retry: Any) -> Any:
    """The redis-py client for the URL's topology, with its timeouts, credentials and TLS."""
    common: dict[str, Any] = {
        "username": options.username, "password": options.password,
        "socket_connect_timeout": options.connect_timeout_s,
        "socket_timeout": options.reply_timeout_s, "decode_responses": True,
        "client_name": "spendguard", **_tls_kwargs(options)}
    if options.topology == "cluster":
        nodes = [redis.cluster.ClusterNode(host, port) for host, port in options.nodes]
        return redis.cluster.RedisCluster(startup_nodes=nodes, retry=retry, **common)
    if options.topology == "sentinel":
        # The URL's credentials and TLS are the primary's; Sentinels get the same TLS.
        sentinels = redis.sentinel.Sentinel(list(options.nodes), sentinel_kwargs={
            "socket_connect_timeout": options.connect_timeout_s,
            "socket_timeout": options.reply_timeout_s, **_tls_kwargs(options)})
        return sentinels.master_for(options.service, db=options.db, retry=retry, **common)
    return redis.Redis(host=options.host, port=options.port, db=options.db, retry=retry,
                       **common)


def _tls_kwargs(options: RedisOptions) -> dict[str, Any]:
    """redis-py's TLS arguments, named as the URL names them."""
    if not options.tls:
        return {}
    kwargs: dict[str, Any] = {"ssl": True}
    if options.ssl_cert_reqs is not None:
        kwargs["ssl_cert_reqs"] = options.ssl_cert_reqs
    if options.ssl_ca_certs is not None:
        kwargs["ssl_ca_certs"] = options.ssl_ca_certs
    return kwargs
