"""The Redis ledger's URL: where the server is, and how the ledger behaves when it is not there.

``redis://[[user]:password@]host[:port][/db][?option=value&...]`` (``rediss://`` for TLS). The
options spendguard reads from the query, each checked here so a typo is an error, not a default:

- ``timeout`` — seconds to connect and to wait for a reply (default 1 to connect, 2 to reply);
- ``prefix`` — put before every key (default ``spendguard:``);
- ``fail_open`` — ``1`` to keep making calls while Redis is unreachable, up to
  ``local_cap_usd`` per process (required with it); ``0`` (the default) refuses them;
- ``retry_s`` — in fail-open mode, how long to go straight to the local ledger after Redis
  failed before trying it again (default 5).

The password never leaves this module except to the Redis client: :attr:`RedisOptions.url` is
the URL with it masked, used in every message and repr.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from decimal import Decimal
from urllib.parse import parse_qsl, quote, unquote, urlsplit

from spendguard.errors import ConfigError
from spendguard.money import parse_usd

__all__ = ["DEFAULT_PREFIX", "RedisOptions", "parse_redis_url"]

DEFAULT_PREFIX = "spendguard:"
_DEFAULT_CONNECT_TIMEOUT_S = 1.0
_DEFAULT_REPLY_TIMEOUT_S = 2.0
_DEFAULT_RETRY_S = 5.0
_OPTIONS = ("timeout", "prefix", "fail_open", "local_cap_usd", "retry_s")
_TRUE, _FALSE = ("1", "true", "yes", "on"), ("0", "false", "no", "off")


@dataclass(frozen=True, slots=True)
class RedisOptions:
    """A parsed Redis ledger URL. ``url`` is safe to show: its password is masked."""

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

    def __repr__(self) -> str:
        return f"RedisOptions({self.url!r})"


def parse_redis_url(url: str) -> RedisOptions:
    """Read ``url``; a bad part is a :class:`ConfigError` that names it (never the password)."""
    parts = urlsplit(url)
    password = None if parts.password is None else unquote(parts.password)
    shown = _masked(url)
    if parts.scheme not in ("redis", "rediss"):
        raise ConfigError(f"ledger: {shown!r} is not a Redis URL; write "
                          f"'redis://host:6379/0' or 'rediss://...' for TLS")
    try:
        port = parts.port or 6379
    except ValueError:
        raise ConfigError(f"ledger: {shown!r} has a bad port; write e.g. "
                          f"'redis://host:6379/0'") from None
    db_text = parts.path.strip("/") or "0"
    if not db_text.isdigit():
        raise ConfigError(f"ledger: {shown!r} names database {db_text!r}; the path is the "
                          f"database number, e.g. 'redis://host:6379/0'")
    query = dict(parse_qsl(parts.query, keep_blank_values=True))
    unknown = sorted(set(query) - set(_OPTIONS))
    if unknown:
        raise ConfigError(f"ledger: {shown!r} has unknown option(s) {', '.join(unknown)}; the "
                          f"options are {', '.join(_OPTIONS)}")
    connect_s, reply_s = _DEFAULT_CONNECT_TIMEOUT_S, _DEFAULT_REPLY_TIMEOUT_S
    if "timeout" in query:
        connect_s = reply_s = _seconds(query["timeout"], "timeout", shown)
    prefix = query.get("prefix", DEFAULT_PREFIX)
    if not prefix or not prefix.isprintable() or " " in prefix or len(prefix) > 100:
        raise ConfigError(f"ledger: prefix={prefix!r} in {shown!r} must be 1-100 printable "
                          f"characters without spaces, e.g. 'spendguard:'")
    fail_open = _flag(query.get("fail_open", "0"), shown)
    cap = None
    if "local_cap_usd" in query:
        cap = parse_usd(query["local_cap_usd"], field="local_cap_usd")
    if fail_open and cap is None:
        raise ConfigError(f"ledger: fail_open=1 in {shown!r} needs local_cap_usd, the most "
                          f"one process may spend while Redis is unreachable, e.g. "
                          f"'&local_cap_usd=5'")
    return RedisOptions(
        url=shown, host=parts.hostname or "localhost", port=port, db=int(db_text),
        username=None if parts.username is None else unquote(parts.username) or None,
        password=password, tls=parts.scheme == "rediss", connect_timeout_s=connect_s,
        reply_timeout_s=reply_s, prefix=prefix, fail_open=fail_open, local_cap_usd=cap,
        retry_s=(_seconds(query["retry_s"], "retry_s", shown, allow_zero=True)
                 if "retry_s" in query else _DEFAULT_RETRY_S),
    )


def _masked(url: str) -> str:
    parts = urlsplit(url)
    if parts.password is None:
        return url
    user = quote(unquote(parts.username or ""), safe="")
    host = parts.netloc.rpartition("@")[2]
    return parts._replace(netloc=f"{user}:***@{host}").geturl()


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
