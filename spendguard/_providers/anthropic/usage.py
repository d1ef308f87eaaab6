"""Anthropic: usage from Messages responses, their streams and Message Batches result lines.

Token model: ``input_tokens`` EXCLUDES cache reads and writes (the three add up to the prompt);
``output_tokens`` includes thinking. Cache writes are split by TTL in ``cache_creation``; a bare
``cache_creation_input_tokens`` is the default 5-minute TTL.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace
from typing import Any

from spendguard._core.errors import ConfigError, ProviderResponseError
from spendguard._costing.usage import Usage
from spendguard._providers import endpoint_kind, read_count, read_table, to_plain
from spendguard._providers.anthropic import endpoints

__all__ = ["MessageStreamReader", "stream_reader", "usage_from_anthropic"]

PROVIDER = "anthropic"

# ---------------------------------------------------------------- usage extraction


def usage_from_anthropic(payload: object, *, endpoint: str | None = None) -> Usage:
    """Usage from a Message, a ``message_start`` / ``message_delta`` event, a batch result line,
    or a bare usage object."""
    if endpoint_kind(endpoint) not in (None, endpoints.MESSAGES):
        raise ConfigError(f"endpoint: {endpoint!r} is not an Anthropic endpoint; use messages")
    data = to_plain(payload, provider=PROVIDER)
    if "custom_id" in data and "result" in data:
        return _batch_result(data)
    if data.get("type") == "message_start" and isinstance(data.get("message"), Mapping):
        data = dict(data["message"])
    if "usage" in data:
        usage = read_table(data, "usage", provider=PROVIDER, path="message")
        if usage is None:
            raise ProviderResponseError("anthropic: the message has no usage (usage is null)",
                                        provider=PROVIDER, field="usage")
    elif "input_tokens" in data or "output_tokens" in data:
        usage = data
    else:
        raise ProviderResponseError("anthropic: the message has no usage field",
                                    provider=PROVIDER, field="usage")
    return _usage(usage)


def _usage(usage: Mapping[str, Any]) -> Usage:
    def count(container: Mapping[str, Any] | None, key: str, path: str = "usage",
              required: bool = False) -> int:
        return read_count(container, key, provider=PROVIDER, path=path, required=required)

    tools: dict[str, int] = {}
    server_tools = read_table(usage, "server_tool_use", provider=PROVIDER, path="usage")
    for name in server_tools or {}:
        if name.endswith("_requests"):  # web_search_requests, web_fetch_requests, ...
            tools[name.removesuffix("_requests")] = count(server_tools, name,
                                                          "usage.server_tool_use")
    details = read_table(usage, "output_tokens_details", provider=PROVIDER, path="usage")
    # Beta `iterations`: a compaction entry's tokens are billed but NOT in the top-level fields.
    compaction = _NO_COMPACTION  # most messages have no iterations: nothing to add up
    for index, entry in enumerate(usage.get("iterations") or ()):
        if isinstance(entry, Mapping) and entry.get("type") == "compaction":
            path = f"usage.iterations[{index}]"
            compaction += Usage(
                input_tokens=count(entry, "input_tokens", path),
                cache_read_tokens=count(entry, "cache_read_input_tokens", path),
                cache_write_tokens=_cache_writes(entry, path),
                output_tokens=count(entry, "output_tokens", path),
            )
    writes = _cache_writes(usage, "usage")
    return Usage(
        input_tokens=count(usage, "input_tokens", required=True) + compaction.input_tokens,
        cache_read_tokens=count(usage, "cache_read_input_tokens") + compaction.cache_read_tokens,
        cache_write_tokens={ttl: n + compaction.cache_write_tokens.get(ttl, 0)
                            for ttl, n in writes.items()},
        output_tokens=count(usage, "output_tokens", required=True) + compaction.output_tokens,
        reasoning_tokens=count(details, "thinking_tokens", "usage.output_tokens_details"),
        tool_requests=tools,
        service_tier=_label(usage, "service_tier"),
        speed=_label(usage, "speed"),
        inference_geo=_label(usage, "inference_geo"),
    )


_NO_COMPACTION = Usage()  # frozen: shared, and ``+=`` rebinds rather than changes it


def _cache_writes(usage: Mapping[str, Any], path: str) -> dict[str, int]:
    total = read_count(usage, "cache_creation_input_tokens", provider=PROVIDER, path=path)
    split = read_table(usage, "cache_creation", provider=PROVIDER, path=path)
    writes = {
        "5m": read_count(split, "ephemeral_5m_input_tokens", provider=PROVIDER,
                         path=f"{path}.cache_creation"),
        "1h": read_count(split, "ephemeral_1h_input_tokens", provider=PROVIDER,
                         path=f"{path}.cache_creation"),
    }
    # Writes beyond the TTL split (or with no split at all) used the default TTL, 5 minutes.
    writes["5m"] += max(total - writes["5m"] - writes["1h"], 0)
    return writes


def _label(usage: Mapping[str, Any], key: str) -> str | None:
    value = usage.get(key)
    return value if isinstance(value, str) else None


def _batch_result(line: Mapping[str, Any]) -> Usage:
    # {"custom_id", "result": {"type": "succeeded", "message": {...}}}; errored, canceled and
    # expired requests are not billed.
    result = read_table(line, "result", provider=PROVIDER, path="batch line")
    if result is None or result.get("type") != "succeeded":
        return Usage(service_tier="batch")
    message = read_table(result, "message", provider=PROVIDER, path="batch line.result")
    if message is None:
        raise ProviderResponseError("anthropic: a succeeded batch result has no message",
                                    provider=PROVIDER, field="result.message")
    usage = usage_from_anthropic(message)
    return usage if usage.service_tier == "batch" else replace(usage, service_tier="batch")


# ---------------------------------------------------------------- stream reader


class MessageStreamReader:
    """A ``messages`` stream: ``message_start`` carries the input side of usage, each
    ``message_delta`` the cumulative output (and any updated input counts); ``message_stop``
    ends it. ``usage()`` merges the two, so a stream cut after ``message_start`` still reports
    its exact input."""

    def __init__(self) -> None:
        self.model: str | None = None
        self.complete = False
        self.output_chars = 0
        self.output_events = 0
        self._parts: list[str] = []
        self._start: dict[str, Any] | None = None
        self._delta: dict[str, Any] = {}

    def feed(self, event_name: str | None, data: Mapping[str, Any]) -> None:
        kind = event_name or data.get("type")
        if kind == "message_start":
            message = data.get("message")
            if isinstance(message, Mapping):
                if isinstance(message.get("model"), str):
                    self.model = message["model"]
                usage = message.get("usage")
                self._start = dict(usage) if isinstance(usage, Mapping) else {}
        elif kind == "content_block_delta":
            delta = data.get("delta")
            if isinstance(delta, Mapping):
                pieces = [delta.get(key) for key in ("text", "thinking", "partial_json")]
                texts = [piece for piece in pieces if isinstance(piece, str) and piece]
                if texts:
                    self._parts.extend(texts)
                    self.output_chars += sum(len(text) for text in texts)
                    self.output_events += 1
        elif kind == "message_delta":
            usage = data.get("usage")
            if isinstance(usage, Mapping):  # cumulative: later values replace earlier ones
                self._delta.update({k: v for k, v in usage.items() if v is not None})
        elif kind == "message_stop":
            self.complete = True

    def usage(self) -> Usage | None:
        if self._start is None and not self._delta:
            return None
        merged = {**(self._start or {}), **self._delta}
        merged.setdefault("input_tokens", 0)
        merged.setdefault("output_tokens", 0)
        return _usage(merged)

    def output_text(self) -> str:
        return "".join(self._parts)


def stream_reader(endpoint: str) -> MessageStreamReader:
    """A reader for one Anthropic ``messages`` stream."""
    if endpoint_kind(endpoint) is not endpoints.MESSAGES:
        raise ProviderResponseError(f"anthropic: {endpoint!r} does not stream",
                                    provider=PROVIDER, field="endpoint")
    return MessageStreamReader()
