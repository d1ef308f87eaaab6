"""The reply body the guard decoded to settle a call is the SDK's parse, once: the raw
response still decodes afresh, and a transport's own response class is left alone."""

from __future__ import annotations

import gzip
import json
from collections.abc import AsyncIterator, Iterator
from typing import Any

import httpx2
import openai
import pytest

import spendguard
from tests.provider_bodies import chat_completion

BASE_URL = "http://provider.test/v1"
REPLY = chat_completion(prompt_tokens=12, completion_tokens=3, content="hello")


class _Chunks(httpx2.SyncByteStream):
    """A body the transport has not read yet, as from a socket."""

    def __init__(self, body: bytes | None = None) -> None:
        self._body = json.dumps(REPLY).encode() if body is None else body

    def __iter__(self) -> Iterator[bytes]:
        yield self._body[:40]
        yield self._body[40:]


class _OwnResponse(httpx2.Response):
    def json(self, **kwargs: Any) -> Any:
        body = super().json(**kwargs)
        body["choices"][0]["message"]["content"] = "from the subclass"
        return body


def _reply(kind: str) -> httpx2.Response:
    headers = {"content-type": "application/json"}
    if kind == "read":  # a mock's response: read before the transport sees it
        return httpx2.Response(200, headers=headers, content=json.dumps(REPLY).encode())
    if kind == "streamed":
        return httpx2.Response(200, headers=headers, stream=_Chunks())
    return _OwnResponse(200, headers=headers, content=json.dumps(REPLY).encode())


def _client(kind: str, budget: spendguard.Budget) -> Any:
    return _client_of(lambda request: _reply(kind), budget)


def _client_of(reply: Any, budget: spendguard.Budget, **options: Any) -> Any:
    """A guarded client whose provider answers each request with ``reply(request)``."""
    return spendguard.OpenAI(api_key="k", base_url=BASE_URL, max_retries=0, budget=budget,
                             http_client=httpx2.Client(transport=httpx2.MockTransport(reply)),
                             **options)


@pytest.mark.parametrize("kind", ["read", "streamed"])
def test_the_raw_response_decodes_afresh_after_the_sdk_parsed_the_settled_body(
        kind: str) -> None:
    budget = spendguard.Budget("1", ledger="memory://")
    raw = _client(kind, budget).chat.completions.with_raw_response.create(
        model="gpt-4o-mini", messages=[{"role": "user", "content": "hi"}], max_tokens=5)
    completion = raw.parse()
    assert (completion.choices[0].message.content, completion.usage.prompt_tokens) == \
        ("hello", 12)
    first = raw.http_response.json()
    first["usage"]["prompt_tokens"] = -1
    assert raw.http_response.json() == REPLY
    [record] = budget.ledger.records()
    assert (record.status, record.tokens["input"], record.tokens["output"]) == ("ok", 12, 3)


@pytest.mark.parametrize("kind", ["read", "streamed"])
def test_a_json_read_with_options_decodes_the_bytes_and_the_sdk_still_parses_its_reply(
        kind: str) -> None:
    budget = spendguard.Budget("1", ledger="memory://")
    raw = _client(kind, budget).chat.completions.with_raw_response.create(
        model="gpt-4o-mini", messages=[{"role": "user", "content": "hi"}], max_tokens=5)
    assert raw.http_response.json(parse_int=str)["usage"]["prompt_tokens"] == "12"
    assert raw.parse().usage.prompt_tokens == 12


def test_a_response_class_of_the_wrapped_transport_keeps_its_own_json() -> None:
    budget = spendguard.Budget("1", ledger="memory://")
    completion = _client("own", budget).chat.completions.create(
        model="gpt-4o-mini", messages=[{"role": "user", "content": "hi"}], max_tokens=5)
    assert completion.choices[0].message.content == "from the subclass"
    [record] = budget.ledger.records()
    assert (record.status, record.tokens["input"]) == ("ok", 12)


def test_a_body_read_off_the_connection_is_handed_on_in_the_transports_own_response() -> None:
    budget = spendguard.Budget("1", ledger="memory://")
    sent: list[httpx2.Response] = []

    def reply(request: httpx2.Request) -> httpx2.Response:
        sent.append(_reply("streamed"))
        return sent[-1]

    client = _client_of(reply, budget)
    raw = client.chat.completions.with_raw_response.create(
        model="gpt-4o-mini", messages=[{"role": "user", "content": "hi"}], max_tokens=5)
    response = raw.http_response
    assert response is sent[0] and response.is_closed
    assert response.elapsed.total_seconds() >= 0  # the client timed it, as without spendguard
    assert response.content == json.dumps(REPLY).encode()
    assert b"".join(response.iter_bytes()) == response.content
    assert raw.parse().usage.prompt_tokens == 12
    [record] = budget.ledger.records()
    assert (record.status, record.tokens["input"], record.tokens["output"]) == ("ok", 12, 3)


def test_a_content_encoded_body_read_off_the_connection_reaches_the_sdk_decoded() -> None:
    budget = spendguard.Budget("1", ledger="memory://")
    encoded = gzip.compress(json.dumps(REPLY).encode())
    sent: list[httpx2.Response] = []

    def reply(request: httpx2.Request) -> httpx2.Response:
        sent.append(httpx2.Response(200, headers={"content-type": "application/json",
                                                  "content-encoding": "gzip"},
                                    stream=_Chunks(encoded)))
        return sent[-1]

    client = _client_of(reply, budget)
    raw = client.chat.completions.with_raw_response.create(
        model="gpt-4o-mini", messages=[{"role": "user", "content": "hi"}], max_tokens=5)
    assert raw.http_response is sent[0]  # decoded once, by the HTTP library's own decoder
    assert raw.http_response.content == json.dumps(REPLY).encode()
    assert raw.parse().usage.prompt_tokens == 12
    [record] = budget.ledger.records()
    assert (record.status, record.tokens["input"]) == ("ok", 12)


class _AsyncChunks(httpx2.AsyncByteStream):
    async def __aiter__(self) -> AsyncIterator[bytes]:
        text = json.dumps(REPLY).encode()
        yield text[:40]
        yield text[40:]


async def test_an_async_body_read_off_the_connection_is_handed_on_in_its_own_response() -> None:
    budget = spendguard.Budget("1", ledger="memory://")
    sent: list[httpx2.Response] = []

    def reply(request: httpx2.Request) -> httpx2.Response:
        sent.append(httpx2.Response(200, headers={"content-type": "application/json"},
                                    stream=_AsyncChunks()))
        return sent[-1]

    client: Any = spendguard.AsyncOpenAI(
        api_key="k", base_url=BASE_URL, max_retries=0, budget=budget,
        http_client=httpx2.AsyncClient(transport=httpx2.MockTransport(reply)))
    raw = await client.chat.completions.with_raw_response.create(
        model="gpt-4o-mini", messages=[{"role": "user", "content": "hi"}], max_tokens=5)
    response = raw.http_response
    assert response is sent[0] and response.is_closed
    assert response.elapsed.total_seconds() >= 0
    assert raw.parse().usage.prompt_tokens == 12
    [record] = budget.ledger.records()
    assert (record.status, record.tokens["input"], record.tokens["output"]) == ("ok", 12, 3)


def test_a_body_that_is_not_what_its_encoding_says_reaches_the_sdk_as_its_own_error() -> None:
    budget = spendguard.Budget("1", ledger="memory://")

    def reply(request: httpx2.Request) -> httpx2.Response:
        return httpx2.Response(200, headers={"content-type": "application/json",
                                             "content-encoding": "gzip"}, stream=_Chunks())

    client = _client_of(reply, budget)
    with pytest.raises(openai.APIConnectionError) as raised:  # the SDK's own wrapping
        client.chat.completions.create(
            model="gpt-4o-mini", messages=[{"role": "user", "content": "hi"}], max_tokens=5)
    assert isinstance(raised.value.__cause__, httpx2.DecodingError)
    [record] = budget.ledger.records()
    assert record.status == "usage_unreadable"


@pytest.mark.parametrize(("asked", "sent"), [
    ("gzip, deflate, br, zstd", "gzip, deflate"),
    ("br;q=1.0, gzip;q=0.8", "gzip;q=0.8"),
    ("br", "identity"),
    ("gzip, deflate", "gzip, deflate"),
])
def test_a_priced_request_asks_only_for_encodings_the_guard_reads(asked: str, sent: str) -> None:
    """With brotli or zstandard installed the HTTP library asks for br and zstd too; a reply
    in one would leave the call unreadable and charged its worst case."""
    seen: list[str | None] = []

    def reply(request: httpx2.Request) -> httpx2.Response:
        seen.append(request.headers.get("accept-encoding"))
        return _reply("read")

    budget = spendguard.Budget("1", ledger="memory://")
    client = _client_of(reply, budget, default_headers={"Accept-Encoding": asked})
    client.chat.completions.create(model="gpt-4o-mini", max_tokens=5,
                                   messages=[{"role": "user", "content": "hi"}])
    assert seen == [sent]
    [record] = budget.ledger.records()
    assert record.status == "ok"
