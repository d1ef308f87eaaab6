"""The normalised usage record: disjoint token buckets, whatever the provider called them.

Providers disagree on what "input tokens" means. OpenAI's ``prompt_tokens`` / ``input_tokens``
*include* cached (and, we read, cache-write) tokens; Anthropic's ``input_tokens`` *excludes*
cache reads and writes. :class:`Usage` removes the trap: its buckets never overlap, so cost is
simply each bucket times its rate. Reasoning / thinking tokens are part of ``output_tokens``
(that is how both bill them); ``reasoning_tokens`` only says how many of them there were.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, fields
from types import MappingProxyType
from typing import Any

from spendguard._core.errors import ConfigError

__all__ = ["CACHE_TTLS", "Usage", "reply_usage", "usage_from"]

CACHE_TTLS = ("5m", "1h", "30m", "12h")
"""Known cache-write TTLs: Anthropic 5m / 1h, OpenAI 30m / 12h."""

_TABLES = ("cache_write_tokens", "tool_requests")
_LABELS = ("service_tier", "speed", "inference_geo")
_REPR_ALWAYS = ("input_tokens", "output_tokens")


# Shared by every record with nothing in a table (most of them): nobody holds the dict.
_EMPTY: Mapping[str, int] = MappingProxyType({})


def _frozen(mapping: Mapping[str, int], name: str) -> Mapping[str, int]:
    if not mapping:
        return _EMPTY
    for key, count in mapping.items():
        _check_count(count, f"{name}[{key!r}]")
    kept = {key: mapping[key] for key in sorted(mapping) if mapping[key]}
    return MappingProxyType(kept) if kept else _EMPTY


def _check_count(value: object, name: str) -> None:
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise ConfigError(f"Usage.{name}: expected a whole number of tokens >= 0, got {value!r}")


@dataclass(frozen=True)
class Usage:
    """Tokens one request used (or is expected to use), in disjoint buckets.

    - ``input_tokens``: uncached input, billed at the base input rate
    - ``cache_read_tokens``: input served from the prompt cache
    - ``cache_write_tokens``: input written to the cache, by TTL ("5m", "1h", "30m", "12h")
    - ``output_tokens``: everything generated, reasoning / thinking included
    - ``reasoning_tokens``: the reasoning part of ``output_tokens`` (informational)
    - ``tool_requests``: billable server-tool calls by tool ("web_search", "web_fetch")
    - ``service_tier``, ``speed``, ``inference_geo``: as the provider reported them
    - ``estimated``: True when the counts were not read from the provider's response
    """

    input_tokens: int = 0
    cache_read_tokens: int = 0
    cache_write_tokens: Mapping[str, int] = field(default_factory=dict)
    output_tokens: int = 0
    reasoning_tokens: int = 0
    tool_requests: Mapping[str, int] = field(default_factory=dict)
    service_tier: str | None = None
    speed: str | None = None
    inference_geo: str | None = None
    estimated: bool = False

    def __post_init__(self) -> None:
        # Built several times per guarded call: the fields are read directly, not by name.
        for name, count in (("input_tokens", self.input_tokens),
                            ("cache_read_tokens", self.cache_read_tokens),
                            ("output_tokens", self.output_tokens),
                            ("reasoning_tokens", self.reasoning_tokens)):
            if count.__class__ is not int or count < 0:
                _check_count(count, name)
        for name, value in (("cache_write_tokens", self.cache_write_tokens),
                            ("tool_requests", self.tool_requests)):
            if value is _EMPTY:
                continue
            if value.__class__ is dict and not value:  # the default: no second call to freeze
                object.__setattr__(self, name, _EMPTY)
                continue
            if not isinstance(value, Mapping):
                raise ConfigError(f"Usage.{name}: expected a mapping of name -> count")
            object.__setattr__(self, name, _frozen(value, name))

    @property
    def total_cache_write_tokens(self) -> int:
        """Cache-write tokens over every TTL."""
        return sum(self.cache_write_tokens.values())

    @property
    def total_input_tokens(self) -> int:
        """Uncached + cache reads + cache writes: what long-context tiers count."""
        return self.input_tokens + self.cache_read_tokens + self.total_cache_write_tokens

    @property
    def total_tokens(self) -> int:
        """Input of every kind plus output."""
        return self.total_input_tokens + self.output_tokens

    def __add__(self, other: object) -> Usage:
        """The sum of two records, for totals. Labels survive only where both agree.

        Price each request on its own: a sum can cross a long-context threshold that no single
        request crossed.
        """
        if not isinstance(other, Usage):
            return NotImplemented

        def merged(a: Mapping[str, int], b: Mapping[str, int]) -> dict[str, int]:
            return {key: a.get(key, 0) + b.get(key, 0) for key in {*a, *b}}

        return Usage(
            input_tokens=self.input_tokens + other.input_tokens,
            cache_read_tokens=self.cache_read_tokens + other.cache_read_tokens,
            cache_write_tokens=merged(self.cache_write_tokens, other.cache_write_tokens),
            output_tokens=self.output_tokens + other.output_tokens,
            reasoning_tokens=self.reasoning_tokens + other.reasoning_tokens,
            tool_requests=merged(self.tool_requests, other.tool_requests),
            **{name: getattr(self, name) if getattr(self, name) == getattr(other, name) else None
               for name in _LABELS},
            estimated=self.estimated or other.estimated,
        )

    def __radd__(self, other: object) -> Usage:
        if other == 0:  # sum() starts from 0
            return self
        return NotImplemented

    def __hash__(self) -> int:
        return hash(tuple(
            tuple(value.items()) if isinstance(value, Mapping) else value
            for value in (getattr(self, f.name) for f in fields(self))
        ))

    def token_counts(self) -> dict[str, int]:
        """Tokens by billed kind (``input``, ``cache_read``, ``cache_write_<ttl>``, ``output``,
        ``reasoning``); zero kinds left out except input and output."""
        counts = {"input": self.input_tokens}
        if self.cache_read_tokens:
            counts["cache_read"] = self.cache_read_tokens
        if self.cache_write_tokens:  # most replies write none: no call for them
            counts.update({f"cache_write_{ttl}": n for ttl, n in self.cache_write_tokens.items()})
        counts["output"] = self.output_tokens
        if self.reasoning_tokens:
            counts["reasoning"] = self.reasoning_tokens
        return counts

    def __repr__(self) -> str:
        shown = [f"{f.name}={dict(v) if isinstance(v, Mapping) else v!r}"
                 for f in fields(self) if (v := getattr(self, f.name)) or f.name in _REPR_ALWAYS]
        return f"Usage({', '.join(shown)})"

    def as_dict(self) -> dict[str, Any]:
        """A JSON-ready dict (zero buckets and unset labels left out); inverse of from_dict."""
        out: dict[str, Any] = {}
        for f in fields(self):
            value = getattr(self, f.name)
            if isinstance(value, Mapping):
                value = dict(value)
            if value:
                out[f.name] = value
        return out

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Usage:
        """A record from :meth:`as_dict` output (e.g. read back from a ledger)."""
        known = {f.name for f in fields(cls)}
        unknown = sorted(set(data) - known)
        if unknown:
            raise ConfigError(f"Usage.from_dict: unknown field(s) {', '.join(unknown)}")
        return cls(**data)


_UNSET = {f.name: _EMPTY if f.name in _TABLES else f.default for f in fields(Usage)}
"""Every field of a Usage at its default (the tables as the shared empty one)."""


def reply_usage(input_tokens: int, cache_read_tokens: int, cache_write_tokens: Mapping[str, int],
                output_tokens: int, reasoning_tokens: int, service_tier: str | None) -> Usage:
    """``Usage(...)`` of the counts a provider's reply gave: built in one step when they are
    whole numbers >= 0 and nothing was written to the cache (every guarded call's usual
    reply), through the constructor and its checks otherwise."""
    if (not cache_write_tokens and input_tokens.__class__ is int and input_tokens >= 0
            and cache_read_tokens.__class__ is int and cache_read_tokens >= 0
            and output_tokens.__class__ is int and output_tokens >= 0
            and reasoning_tokens.__class__ is int and reasoning_tokens >= 0
            and (service_tier is None or service_tier.__class__ is str)):
        usage: Usage = object.__new__(Usage)
        usage.__dict__.update(_UNSET, input_tokens=input_tokens,
                              cache_read_tokens=cache_read_tokens, output_tokens=output_tokens,
                              reasoning_tokens=reasoning_tokens, service_tier=service_tier)
        return usage
    return Usage(input_tokens=input_tokens, cache_read_tokens=cache_read_tokens,
                 cache_write_tokens=cache_write_tokens, output_tokens=output_tokens,
                 reasoning_tokens=reasoning_tokens, service_tier=service_tier)


def usage_from(provider: str, payload: object, *, endpoint: str | None = None) -> Usage:
    """Read a provider response, stream event, batch result line or usage object into a Usage.

    ``payload`` may be a parsed JSON dict or an SDK object (``ChatCompletion``, ``Response``,
    ``Message``, their ``usage`` attribute, ...). ``endpoint`` ("chat", "responses",
    "embeddings", "messages" or a URL path) pins the shape when a bare usage dict is ambiguous.
    Raises :class:`~spendguard._core.errors.ProviderResponseError` naming the field when usage is
    missing or malformed.
    """
    # Imported here: the provider adapters build Usage records, so they import this module.
    from spendguard._providers.adapter import adapter_for  # noqa: PLC0415

    return adapter_for(provider).read_usage(payload, endpoint=endpoint)
