"""OpenAI: usage from Chat Completions, Responses, Embeddings, their streams and batch lines.

Token model: ``prompt_tokens`` (chat) and ``input_tokens`` (Responses) INCLUDE cached tokens and
cache writes; ``completion_tokens`` / ``output_tokens`` include reasoning tokens. See
:func:`spendguard._providers.split_inclusive_input`.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace
from typing import Any

from spendguard._core.errors import ProviderResponseError, UnknownModelError
from spendguard._costing.endpoints import Endpoint
from spendguard._costing.usage import Usage, reply_usage
from spendguard._providers import (
    endpoint_kind,
    read_count,
    read_table,
    split_inclusive_input,
    to_plain,
)
from spendguard._providers.openai import endpoints

__all__ = ["ChatStreamReader", "ResponsesStreamReader", "stream_reader", "usage_from_openai"]

PROVIDER = "openai"
RESPONSE_TERMINAL_EVENTS = ("response.completed", "response.incomplete", "response.failed")

# ---------------------------------------------------------------- usage extraction


def usage_from_openai(payload: object, *, endpoint: str | None = None) -> Usage:
    """Usage from a response, a stream chunk / terminal event, a batch output line, or a bare
    usage object (``endpoint`` then says which shape; otherwise it is read from the fields)."""
    # A decoded reply (the guard's) is a plain dict already: taken as it is, with no call.
    data = payload if type(payload) is dict else to_plain(payload, provider=PROVIDER)
    if "custom_id" in data:
        return _batch_line(data, endpoint)
    # Membership and indexing rather than .get: a reply's fields cost no call to look at.
    if "type" in data and data["type"] in (*RESPONSE_TERMINAL_EVENTS, "response.created") \
            and isinstance(data.get("response"), Mapping):
        data = dict(data["response"])
    if "usage" in data:
        usage = data["usage"]
        if usage.__class__ is not dict and not isinstance(usage, Mapping):
            raise ProviderResponseError(
                f"openai: the response has no usage (usage is {usage!r}); for a chat stream, "
                'send stream_options={"include_usage": true}', provider=PROVIDER, field="usage")
    elif "prompt_tokens" in data or "input_tokens" in data:
        usage, data = data, {}
    else:
        raise ProviderResponseError("openai: the response has no usage field",
                                    provider=PROVIDER, field="usage")
    # The guard names the endpoint by its member: taken as it is.
    kind = endpoint if endpoint.__class__ is Endpoint and endpoint is not Endpoint.FREE \
        else endpoint_kind(endpoint)
    if kind is None:
        kind = (endpoints.RESPONSES if "input_tokens" in usage
                else endpoints.CHAT if "completion_tokens" in usage else endpoints.EMBEDDINGS)
    tier = None
    if "service_tier" in data:
        named = data["service_tier"]
        tier = named if named.__class__ is str or isinstance(named, str) else None
    if kind is endpoints.RESPONSES:
        return _responses_usage(usage, data, tier)
    if kind is endpoints.EMBEDDINGS:
        prompt = read_count(usage, "prompt_tokens", provider=PROVIDER, path="usage", required=True)
        return Usage(input_tokens=prompt, service_tier=tier)
    return _usual_chat_usage(usage, tier) or _chat_usage(usage, tier)


def _usual_chat_usage(usage: Mapping[str, Any], tier: str | None) -> Usage | None:
    """The usual chat reply's usage (whole counts, its two detail tables, no audio, cache
    reads and writes within the prompt) read in place, with no call per field; None for any
    other, which :func:`_chat_usage` reads field by field and says what is wrong with."""
    if "prompt_tokens" not in usage or "completion_tokens" not in usage \
            or "prompt_cache_hit_tokens" in usage:
        return None
    # An absent table or count reads as its default from the dicts merged under it.
    tables = {**_NO_DETAILS, **usage}
    details, out_details = tables["prompt_tokens_details"], tables["completion_tokens_details"]
    if details.__class__ is not dict or out_details.__class__ is not dict:
        return None
    prompt_side = {**_PROMPT_ZEROS, **details}
    output_side = {**_OUTPUT_ZEROS, **out_details}
    counts = (usage["prompt_tokens"], usage["completion_tokens"],
              prompt_side["cached_tokens"], prompt_side["cache_write_tokens"],
              prompt_side["audio_tokens"], output_side["audio_tokens"],
              output_side["reasoning_tokens"])
    for count in counts:
        if count.__class__ is not int or count < 0:  # None, a bool, a float, a negative
            return None
    prompt, completion, cached, written, audio_in, audio_out, reasoning = counts
    if audio_in or audio_out or cached + written > prompt:
        return None
    # As split_inclusive_input reads them: reads and writes are part of the prompt's total.
    return reply_usage(prompt - cached - written, cached, {"30m": written} if written else {},
                       completion, reasoning, tier)


_NO_DETAILS: dict[str, Any] = {"prompt_tokens_details": {}, "completion_tokens_details": {}}
_PROMPT_ZEROS = {"cached_tokens": 0, "cache_write_tokens": 0, "audio_tokens": 0}
_OUTPUT_ZEROS = {"audio_tokens": 0, "reasoning_tokens": 0}


def _chat_usage(usage: Mapping[str, Any], tier: str | None) -> Usage:
    prompt = read_count(usage, "prompt_tokens", provider=PROVIDER, path="usage", required=True)
    completion = read_count(usage, "completion_tokens", provider=PROVIDER, path="usage",
                            required=True)
    details = read_table(usage, "prompt_tokens_details", provider=PROVIDER, path="usage")
    path = "usage.prompt_tokens_details"
    cached = read_count(details, "cached_tokens", provider=PROVIDER, path=path)
    if not cached and "prompt_cache_hit_tokens" in usage:
        # DeepSeek's OpenAI-compatible API reports cache hits in its own field
        # (api-docs.deepseek.com, "Context Caching": prompt_cache_hit_tokens / _miss_tokens).
        cached = read_count(usage, "prompt_cache_hit_tokens", provider=PROVIDER, path="usage")
    # Chat Completions caches with the default 30-minute retention only.
    written = read_count(details, "cache_write_tokens", provider=PROVIDER, path=path)
    writes = {"30m": written} if written else {}  # Usage drops zero buckets anyway
    uncached, writes = split_inclusive_input(prompt, cached, writes, provider=PROVIDER, path=path)
    out_details = read_table(usage, "completion_tokens_details", provider=PROVIDER, path="usage")
    for container, where in ((details, path), (out_details, "usage.completion_tokens_details")):
        audio = read_count(container, "audio_tokens", provider=PROVIDER, path=where)
        if audio:
            raise unpriced_audio(f"{where}.audio_tokens = {audio}")
    reasoning = read_count(out_details, "reasoning_tokens", provider=PROVIDER,
                           path="usage.completion_tokens_details")
    return reply_usage(uncached, cached, writes, completion, reasoning, tier)


def unpriced_audio(what: str) -> UnknownModelError:
    """Audio tokens, which the price table has no rate for: refused, never billed as text."""
    return UnknownModelError(
        f"openai: {what}: spendguard's price table has no rate for audio tokens (they cost "
        "several times text tokens), so it does not bill them as text. Audio input and output "
        "are refused before sending; a reply that reports audio tokens anyway is recorded at "
        "the call's worst case (status usage_unreadable). Use a text model, or send audio "
        "requests through a client without spendguard.",
        name="audio_tokens", kind="token kind")


def _responses_usage(usage: Mapping[str, Any], response: Mapping[str, Any],
                     tier: str | None) -> Usage:
    def count(container: Mapping[str, Any] | None, key: str, path: str,
              required: bool = False) -> int:
        return read_count(container, key, provider=PROVIDER, path=path, required=required)

    total = count(usage, "input_tokens", "usage", required=True)
    output = count(usage, "output_tokens", "usage", required=True)
    path = "usage.input_tokens_details"
    details = read_table(usage, "input_tokens_details", provider=PROVIDER, path="usage")
    cached = count(details, "cached_tokens", path)
    written = count(details, "cache_write_tokens", path)
    split = read_table(details, "cache_write_tokens_details", provider=PROVIDER, path=path)
    split_path = f"{path}.cache_write_tokens_details"
    writes = {"30m": count(split, "ttl_30m_tokens", split_path),
              "12h": count(split, "ttl_12h_tokens", split_path)}
    # Writes without (or beyond) a TTL split used the default retention, 30 minutes.
    writes["30m"] += max(written - writes["30m"] - writes["12h"], 0)
    uncached, writes = split_inclusive_input(total, cached, writes, provider=PROVIDER, path=path)
    out_details = read_table(usage, "output_tokens_details", provider=PROVIDER, path="usage")
    tools: dict[str, int] = {}
    tool_usage = read_table(response, "tool_usage", provider=PROVIDER, path="response")
    web_search = read_table(tool_usage, "web_search", provider=PROVIDER, path="tool_usage")
    if web_search is not None:
        tools["web_search"] = count(web_search, "num_requests", "tool_usage.web_search")
    reasoning = count(out_details, "reasoning_tokens", "usage.output_tokens_details")
    if tools:
        return Usage(input_tokens=uncached, cache_read_tokens=cached, cache_write_tokens=writes,
                     output_tokens=output, reasoning_tokens=reasoning, tool_requests=tools,
                     service_tier=tier)
    # The TTL buckets left at 0 (most replies) are what Usage drops anyway.
    return reply_usage(uncached, cached, {ttl: n for ttl, n in writes.items() if n}, output,
                       reasoning, tier)


def _batch_line(line: Mapping[str, Any], endpoint: str | None) -> Usage:
    # A Batch API output line: {"custom_id", "response": {"status_code", "body"}, "error"}.
    # Failed lines are not billed; successful ones are billed at Batch rates.
    response = read_table(line, "response", provider=PROVIDER, path="batch line")
    if response is None or response.get("status_code") != 200:
        return Usage(service_tier="batch")
    body = read_table(response, "body", provider=PROVIDER, path="batch line.response")
    if body is None:
        raise ProviderResponseError("openai: batch line has status 200 but no response.body",
                                    provider=PROVIDER, field="response.body")
    return replace(usage_from_openai(body, endpoint=endpoint), service_tier="batch")


# ---------------------------------------------------------------- stream readers


class _TextCounter:
    def __init__(self) -> None:
        self.model: str | None = None
        self.complete = False
        self.output_chars = 0
        self.output_events = 0
        self._parts: list[str] = []
        self._usage: Usage | None = None

    def _add_text(self, *texts: object) -> None:
        pieces = [text for text in texts if isinstance(text, str) and text]
        if pieces:
            self._parts.extend(pieces)
            self.output_chars += sum(len(piece) for piece in pieces)
            self.output_events += 1

    def usage(self) -> Usage | None:
        return self._usage

    def output_text(self) -> str:
        return "".join(self._parts)


class ChatStreamReader(_TextCounter):
    """A ``chat.completions`` stream: usage arrives in the last chunk, only when the request
    sent ``stream_options={"include_usage": true}``."""

    def __init__(self) -> None:
        super().__init__()
        self._open_choices: set[int] = set()

    def feed(self, event_name: str | None, data: Mapping[str, Any]) -> None:
        model = data.get("model")
        if isinstance(model, str) and model:
            self.model = model
        for choice in data.get("choices") or ():
            if not isinstance(choice, Mapping):
                continue
            index = choice.get("index", 0)
            delta = choice.get("delta") or {}
            if isinstance(delta, Mapping):
                calls = delta.get("tool_calls") or ()
                arguments = [(call.get("function") or {}).get("arguments")
                             for call in calls if isinstance(call, Mapping)]
                self._add_text(delta.get("content"), delta.get("refusal"),
                               delta.get("reasoning_content"), *arguments)
            if choice.get("finish_reason") is None:
                self._open_choices.add(index)
            else:
                self._open_choices.discard(index)
                self.complete = not self._open_choices
        if isinstance(data.get("usage"), Mapping):
            self._usage = usage_from_openai(data, endpoint=endpoints.CHAT)
            self.complete = True


class ResponsesStreamReader(_TextCounter):
    """A ``responses`` stream: usage is in the Response embedded in the terminal event
    (``response.completed``, ``response.incomplete`` or ``response.failed``)."""

    def feed(self, event_name: str | None, data: Mapping[str, Any]) -> None:
        kind = event_name or data.get("type")
        response = data.get("response")
        if isinstance(response, Mapping) and isinstance(response.get("model"), str):
            self.model = response["model"]
        if isinstance(kind, str) and kind.endswith(".delta"):
            self._add_text(data.get("delta"))
        if kind in RESPONSE_TERMINAL_EVENTS and isinstance(response, Mapping):
            self.complete = True
            if isinstance(response.get("usage"), Mapping):
                self._usage = usage_from_openai(response, endpoint=endpoints.RESPONSES)


def stream_reader(endpoint: str) -> ChatStreamReader | ResponsesStreamReader:
    """A reader for one OpenAI stream (``chat`` or ``responses``)."""
    kind = endpoint_kind(endpoint)
    if kind is endpoints.CHAT:
        return ChatStreamReader()
    if kind is endpoints.RESPONSES:
        return ResponsesStreamReader()
    raise ProviderResponseError(f"openai: {endpoint!r} does not stream", provider=PROVIDER,
                                field="endpoint")
