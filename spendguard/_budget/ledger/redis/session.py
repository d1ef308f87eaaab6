"""A Redis ledger's connection: runs its scripts, with bounded timeouts, and names failures.

redis-py is imported here, when a ``redis://`` ledger is first opened, never before; the client
is a ``redis.Redis`` for one server, a ``redis.cluster.RedisCluster`` for a cluster, or the
primary a ``redis.sentinel.Sentinel`` names. Every script is sent with the ledger's ``totals``
key as its one declared key, so a cluster routes it to the primary holding the ledger's slot.
Scripts, one per reserve or settle, take the short way: loaded as one function library and
called with ``FCALL`` (``EVALSHA`` on a server without functions), packed here and written to
the thread's own connection (see :meth:`RedisSession.run`); reads go through redis-py's
client.
Every failure to reach the server — refused, timed out, reset, read-only after a failover, a
cluster that is down or moving slots — becomes
:class:`LedgerUnavailable` naming the URL with its password masked; anything else Redis
answers with becomes :class:`LedgerError`. A dropped connection is retried once at once
(a server restart leaves stale pooled connections); a timeout is not retried, so one operation
waits at most about twice the URL's ``timeout``.

Each thread keeps its own connection, reconnected through redis-py's ``connect()``, which
asks where the server is now (the Sentinels' current primary), so after a failover every
thread's next operation reaches the new primary. Every new connection checks the ledger's
identity before its first command (:mod:`~spendguard._budget.ledger.redis.identity`). With
``wait_replicas``, each settle, release, correction and import is followed, in the same
write, by ``WAIT`` on the same connection; on a cluster, a script that had to follow a
redirection through redis-py's cluster client (the first after a slot moved) is not waited on.
"""

from __future__ import annotations

import hashlib
import os
import threading
import time
import weakref
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any, TypeVar

from spendguard._budget.ledger.redis import scripts as redis_scripts
from spendguard._budget.ledger.redis.identity import Identity
from spendguard._budget.ledger.redis.options import RedisOptions
from spendguard._budget.ledger.schema import newer_schema_error
from spendguard._core.errors import ConfigError, LedgerError, LedgerUnavailable

if TYPE_CHECKING:
    import redis

__all__ = ["SCHEMA", "RedisSession"]

SCHEMA = "2"
"""The schema this spendguard writes (``meta`` ``schema``): 2 holds a rolling window's open
calls under its held key; a schema 1 ledger is migrated on first use (``MIGRATE_2``)."""
_SCRIPTS = {"reserve": redis_scripts.RESERVE, "settle": redis_scripts.SETTLE,
            "release": redis_scripts.RELEASE, "adjust": redis_scripts.ADJUST,
            "recover": redis_scripts.RECOVER, "import": redis_scripts.IMPORT}
T = TypeVar("T")
# The scripts whose writes ``wait_replicas`` waits on: what the provider billed, or undid.
_DURABLE = frozenset({"settle", "release", "adjust", "import"})

_SESSIONS: weakref.WeakSet[RedisSession] = weakref.WeakSet()


def _forget_connections_after_fork() -> None:
    """In a forked child: drop every session's per-thread connections, inherited from the
    parent. Used by both processes, one socket would hand each the other's replies (a
    refusal meant for one reaching the other); the pools themselves reconnect in the child."""
    for session in list(_SESSIONS):
        session._own = threading.local()


os.register_at_fork(after_in_child=_forget_connections_after_fork)


class RedisSession:
    """The client, scripts and health of one Redis ledger in this process."""

    def __init__(self, options: RedisOptions, *, check_identity: bool = True,
                 reading: bool = False) -> None:
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
        self.identity = Identity(options, self.prefix)
        self._check_identity = check_identity
        self._reading = reading  # a report's or export's: no call waits on it
        exceptions = redis.exceptions
        # What redis-py raises: its errors, and the cluster client's own (not RedisErrors:
        # no node reachable, a slot no node serves).
        self._failures = (redis.RedisError, exceptions.RedisClusterException)
        # A cluster node's answer that it does not hold the ledger's slot (so has no
        # identity of it to check).
        self._moved = (exceptions.MovedError, exceptions.AskError)
        self.client: redis.Redis = _client(options, redis, Retry(
            NoBackoff(), 1, supported_errors=(redis.ConnectionError,)), self._on_connect)
        self._route = f"{self.prefix}totals"
        self._own = threading.local()
        _SESSIONS.add(self)
        # What a cluster primary answers when the ledger's slot is elsewhere or unreachable.
        self._redirected = (exceptions.MovedError, exceptions.AskError, exceptions.TryAgainError,
                            exceptions.ClusterDownError, exceptions.ConnectionError)
        self._shas = {name: _sha1(source) for name, source in _SCRIPTS.items()}
        # Each script's command as sent, up to its own arguments: the function (FCALL) or
        # digest (EVALSHA), the one key (the cluster routes by it) and the prefix. FCALL
        # until a server shows it has no functions (Redis 6.2) or may not use them.
        self._heads = {name: _packed("FCALL", f"{_LIBRARY_NAME}_{name}", "1", self._route,
                                     self.prefix) for name in _SCRIPTS}
        self._functions = True
        # WAIT numreplicas timeout-ms, sent after each settle, release, correction or import;
        # for half the reply timeout, so that its answer comes before the socket gives up.
        self._wait_s = options.reply_timeout_s / 2
        self._wait = None if not options.wait_replicas else b"".join((
            b"*3\r\n", _packed("WAIT", str(options.wait_replicas),
                                str(max(1, round(self._wait_s * 1000))))))
        self._schema_checked = False
        self._schema_readable = False  # a newer schema: read, never written
        self._rest_until = 0.0

    def _on_connect(self, connection: Any) -> None:
        """Every new connection, however made (first, reconnect, new primary, another cluster
        node): redis-py's handshake, then the ledger's identity checked before any command
        (see :mod:`~spendguard._budget.ledger.redis.identity`)."""
        connection.on_connect()
        if self._check_identity:
            self.identity.check(connection, self._moved)

    def check_not_flushed(self) -> None:
        """Raise :class:`LedgerReset` if the ledger's generation is gone (a read that found
        nothing: a new scope, or a flushed ledger)."""
        if not self._check_identity:
            return
        meta = f"{self.prefix}meta"
        if not self.read(lambda client: client.hexists(meta, "generation")):
            raise self.reset_error()

    def check_writable(self) -> None:
        """Stamp, migrate or refuse the ledger's schema for writing, as a script's run does."""
        try:
            if not self._schema_checked:
                self._check_schema(writing=True)
        except self._failures as exc:
            raise self._failure(exc) from exc

    def reset_error(self) -> LedgerError:
        """The refusal for a script that found the ledger's generation gone (flushed)."""
        return self.identity.reset("is empty (flushed under a live connection)",
                                   self.identity.seen())

    def run(self, name: str, args: Sequence[str]) -> list[Any]:
        """Run script ``name`` with the prefix and ``args``; its reply as a list.

        The hot path of every reserve and settle: one FCALL of the script's function (on
        Redis 7 and later; an EVALSHA of its digest before), packed here behind the script's
        pre-encoded head (function or digest, key, prefix) and written straight to this
        thread's connection, its reply read from it, without redis-py's command layers. A
        server that does not know the function or script yet (new, restarted, or another
        cluster primary) is sent it once.
        """
        try:
            if not self._schema_checked:
                self._check_schema(writing=True)
            reply = self._script(name, args)
        except self._failures as exc:
            raise self._failure(exc) from exc
        self._rest_until = 0.0
        if not isinstance(reply, list):
            return [reply]
        if reply and reply[0] == "reset":
            raise self.reset_error()
        return reply

    def _script(self, name: str, args: Sequence[str]) -> Any:
        # The count: the head's five words (command, function or digest, 1, key, prefix), the args.
        parts = [b"*%d\r\n" % (len(args) + 5)]
        for arg in args:
            data = arg.encode()
            parts.append(b"$%d\r\n%s\r\n" % (len(data), data))
        if self.options.topology != "cluster":
            return self._send(self._thread_client(self.client.connection_pool), name, parts)
        primary = self._cluster_primary()
        if primary is not None:
            try:
                return self._send(primary, name, parts)
            except self._redirected:
                pass  # the cluster client follows the redirection and renews its map
        return self._evalsha(self.client, name, args)

    def _send(self, client: Any, name: str, parts: list[bytes]) -> Any:
        """The reply to script ``name`` on ``client``'s connection; ``parts`` are the
        command's count and its packed arguments, the script's head goes between them.

        As redis-py's client would: a dropped connection (a restarted server leaves stale
        ones) is reconnected and the command sent once more at once; a timeout is not
        retried. The scripts are idempotent, so one that ran before its reply was lost may
        run again. A server without the functions loaded (new, restarted, flushed, or
        another cluster primary) is sent the library once, or the script's text once on the
        EVALSHA way.
        """
        connection = client.connection
        try:
            return self._on_thread(client, lambda _: self._exchange(connection, name, parts))
        except self._redis.exceptions.NoScriptError:
            client.script_load(_SCRIPTS[name])
        except self._redis.ResponseError as exc:
            if not self._functions or not self._load_functions(client, exc):
                raise
            if not self._functions:  # switched to EVALSHA just now
                client.script_load(_SCRIPTS[name])
        return self._exchange(connection, name, parts)

    def _exchange(self, connection: Any, name: str, parts: list[bytes]) -> Any:
        packed = b"".join((parts[0], self._heads[name], *parts[1:]))
        if self._wait is None or name not in _DURABLE:
            connection.send_packed_command((packed,), check_health=False)
            return connection.read_response()
        # WAIT in the same write: it waits for this connection's writes, the script's.
        connection.send_packed_command((packed, self._wait), check_health=False)
        try:
            reply = connection.read_response()
        except self._redis.ResponseError:
            connection.read_response()  # WAIT's reply too: the connection stays in step
            raise
        acknowledged = connection.read_response()
        if acknowledged < self.options.wait_replicas:
            raise LedgerUnavailable(
                f"Redis ledger {self.options.url}: only {acknowledged} of "
                f"{self.options.wait_replicas} replica(s) acknowledged the {name} within "
                f"{self._wait_s:g}s (wait_replicas); check the replicas' links (INFO "
                f"replication)", url=self.options.url)
        return reply

    def _load_functions(self, client: Any, refusal: BaseException) -> bool:
        """After FCALL was refused with ``refusal``: whether to send it again.

        A server that does not know the library is sent it (whole, replacing any older copy
        of the same text); one that has no functions or does not let this user run or load
        them switches this session to EVALSHA for good.
        """
        if str(refusal).startswith("Function not found"):
            try:
                client.function_load(_LIBRARY, replace=True)
                return True
            except self._redis.ResponseError as exc:
                refusal = exc
        if not (isinstance(refusal, self._redis.exceptions.NoPermissionError)
                or str(refusal).startswith(("unknown command", "unknown subcommand"))):
            return False
        self._functions = False
        self._heads = {name: _packed("EVALSHA", sha, "1", self._route, self.prefix)
                       for name, sha in self._shas.items()}
        return True

    def _evalsha(self, client: Any, name: str, args: Sequence[str]) -> Any:
        try:
            return client.evalsha(self._shas[name], 1, self._route, self.prefix, *args)
        except self._redis.exceptions.NoScriptError:
            client.script_load(_SCRIPTS[name])
            return client.evalsha(self._shas[name], 1, self._route, self.prefix, *args)

    def read(self, operation: Callable[[redis.Redis], T]) -> T:
        """Run ``operation`` on the client, failures mapped to spendguard's errors."""
        try:
            if not self._schema_checked and not self._schema_readable:
                self._check_schema(writing=False)
            result = self._operate(operation)
        except self._failures as exc:
            raise self._failure(exc) from exc
        self._rest_until = 0.0
        return result

    def _failure(self, exc: BaseException) -> LedgerError:
        """The error that a redis-py failure means: unreachable, refused credentials, or other."""
        redis = self._redis
        if isinstance(exc, redis.AuthenticationError):
            return LedgerError(f"Redis ledger {self.options.url} refused the credentials: "
                               f"{self._clean(exc)}; check the user and password in the URL")
        if isinstance(exc, (redis.ConnectionError, redis.TimeoutError, redis.ReadOnlyError,
                            redis.exceptions.ClusterError,
                            redis.exceptions.RedisClusterException)):
            self._rest()
            advice = ("; start or fix Redis, or check the URL" if self._reading else
                      "" if self.options.fail_open else
                      "; spendguard fails closed and refuses calls it cannot record. Start or "
                      "fix Redis, or opt into fail-open with '?fail_open=1&local_cap_usd=N' "
                      "in the URL")
            return LedgerUnavailable(
                f"Redis ledger {self.options.url} is unreachable ({type(exc).__name__}: "
                f"{self._clean(exc)}){advice}", url=self.options.url)
        return LedgerError(f"Redis ledger {self.options.url} failed: {self._clean(exc)}")

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
            return self._on_thread(self._thread_client(self.client.connection_pool),
                                   operation)
        primary = self._cluster_primary()
        if primary is not None:
            try:
                return self._on_thread(primary, operation)
            except self._redirected:
                pass  # the cluster client follows the redirection and renews its map
        return operation(self.client)

    def _cluster_primary(self) -> Any:
        """This thread's client on the primary the cluster client's map names for the ledger's
        slot; None when the map names none."""
        cluster: Any = self.client
        try:
            node = cluster.get_node_from_key(self._route).redis_connection
        except self._redis.exceptions.RedisClusterException:
            return None
        return None if node is None else self._thread_client(node.connection_pool)

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

    def _on_thread(self, client: Any, operation: Callable[[Any], T]) -> T:
        """``operation`` on ``client``, this thread's own connection, (re)connected first.

        A connection kept past a failure must be reconnected through ``connect()``, the one
        way that asks where the server is now: for Sentinel, the Sentinels' current primary.
        redis-py's own reconnect, inside a command's send, dials the address the connection
        last had, so a thread that had reached a primary before it died would dial the dead
        address for good. On a live connection ``connect()`` returns at once. A dropped
        connection (a restarted server, a failover) is reconnected and ``operation`` run
        once more at once: the scripts and reads are all safe to run twice.
        """
        connection = client.connection
        try:
            connection.connect()
            return operation(client)
        except self._redis.ConnectionError:
            connection.disconnect()
            connection.connect()
            return operation(client)

    def resting(self) -> bool:
        """In fail-open mode: whether Redis failed less than ``retry_s`` ago (don't wait on it)."""
        return self.options.fail_open and time.monotonic() < self._rest_until

    def close(self) -> None:
        self.client.close()

    def _rest(self) -> None:
        if self.options.fail_open:
            self._rest_until = time.monotonic() + self.options.retry_s

    def has_ledger(self) -> bool:
        """Whether a ledger was ever written under this prefix; reads, never writes."""
        try:
            return bool(self._operate(lambda client: client.exists(f"{self.prefix}meta")))
        except self._redis.RedisError as exc:
            raise self._failure(exc) from exc

    def _check_schema(self, *, writing: bool) -> None:
        """Stamp a new ledger with :data:`SCHEMA`, migrate an older one, and refuse to write to
        one a newer spendguard stamped (reading it stays allowed)."""
        key = f"{self.prefix}meta"
        self.client.hsetnx(key, "schema", SCHEMA)
        found: Any = self.client.hget(key, "schema")
        if found == "1":
            self.client.eval(redis_scripts.MIGRATE_2, 1, self._route, self.prefix)
            found = SCHEMA
        if found != SCHEMA:
            where = f"Redis {self.options.url} (prefix {self.prefix!r})"
            if not str(found).isdigit() or int(found) < int(SCHEMA):
                raise LedgerError(f"the ledger {where} has schema {found!r}, which no "
                                  f"spendguard writes; it is not a spendguard ledger, or was "
                                  f"damaged: use another key prefix")
            if writing:
                raise newer_schema_error(where, int(found), int(SCHEMA))
            self._schema_readable = True
            return
        self._schema_checked = True

    def _clean(self, exc: BaseException) -> str:
        text = str(exc)
        if self.options.password:
            text = text.replace(self.options.password, "***")
        return text


def _packed(*words: str) -> bytes:
    """``words`` as consecutive RESP bulk strings (a command's head, without its count)."""
    out = b""
    for word in words:
        data = word.encode()
        out += b"$%d\r\n%s\r\n" % (len(data), data)
    return out


def _library(common: str, bodies: dict[str, str]) -> tuple[str, str]:
    """The scripts as one Redis function library: its name and its text.

    ``common`` (the helpers every script shares) is run once, when the library is loaded,
    rather than at every call as EVAL does; each script's body becomes a function of its
    own (``KEYS`` and ``ARGV`` are the function's arguments). The name carries the text's
    digest, so libraries of different spendguard versions live side by side on one server.
    """
    digest = _sha1(common + "".join(bodies[name] for name in sorted(bodies)))[:16]
    name = f"spendguard_{digest}"
    functions = "".join(
        f"redis.register_function('{name}_{script}', function(KEYS, ARGV)\n{body}\nend)\n"
        for script, body in bodies.items())
    return name, f"#!lua name={name}\n{common}{functions}"


def _sha1(source: str) -> str:
    return hashlib.sha1(source.encode(), usedforsecurity=False).hexdigest()


_LIBRARY_NAME, _LIBRARY = _library(redis_scripts.COMMON, redis_scripts.BODIES)


def _client(options: RedisOptions, redis: Any, retry: Any,
            on_connect: Callable[[Any], None]) -> Any:
    """The redis-py client for the URL's topology, with its timeouts, credentials and TLS;
    ``on_connect`` sets up each new connection."""
    common: dict[str, Any] = {
        "redis_connect_func": on_connect,
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
