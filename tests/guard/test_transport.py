"""The choke point's failure paths, through the real SDKs (sync and async) with HTTP mocked.

The rule under test: once a request reached the (mocked) provider it ends in exactly one ledger
record and no open reservation, and the caller gets what the SDK alone would have given.
"""

from __future__ import annotations

import logging
import warnings
from decimal import Decimal
from pathlib import Path
from typing import Any

import anthropic
import httpx
import openai
import pytest
import respx

import spendguard
from tests.provider_bodies import (
    anthropic_message,
    chat_completion,
)
from tests.redis_helpers import (
    fixture_redis_prefix,  # noqa: F401 - a fixture: pytest finds it here
    fixture_redis_url,  # noqa: F401 - a fixture: pytest finds it here
    requires_redis,
)
from tests.transport_helpers import (
    ANTHROPIC_MESSAGES,
    OPENAI_CHAT,
    anthropic_call,
    billed,
    fixture_ledger_url,  # noqa: F401 - a fixture: pytest finds it here
    openai_call,
    outcome,
    records,
)

# ---------------------------------------------------------------- before and after sending


@pytest.mark.parametrize("is_async", [False, True])
@respx.mock
def test_a_connect_error_before_sending_releases_the_reservation(ledger_url: str,
                                                                 is_async: bool) -> None:
    respx.post(OPENAI_CHAT).mock(side_effect=httpx.ConnectError("refused"))
    b = spendguard.Budget("1", ledger=ledger_url)
    with pytest.raises(openai.APIConnectionError):
        openai_call(is_async, b, max_retries=0)
    [record] = records(ledger_url)
    assert (record.status, record.note) == ("released", "ConnectError")
    assert b.spent == b.reserved == 0


@pytest.mark.parametrize("is_async", [False, True])
@respx.mock
def test_a_read_timeout_after_sending_is_charged_its_worst_case(
        ledger_url: str, is_async: bool) -> None:
    route = respx.post(ANTHROPIC_MESSAGES).mock(side_effect=httpx.ReadTimeout("slow"))
    b = spendguard.Budget("1", ledger=ledger_url)
    with pytest.raises(anthropic.APITimeoutError):
        anthropic_call(is_async, b, max_retries=0)  # retries would sleep; each is one attempt
    assert route.call_count == 1
    [lost] = records(ledger_url)
    assert (lost.status, lost.actual_usd, lost.usage_estimated) == ("error", lost.estimated_usd,
                                                                    True)
    assert "ReadTimeout" in (lost.note or "")
    assert b.reserved == 0


@pytest.mark.parametrize("is_async", [False, True])
@respx.mock
def test_a_connection_reset_mid_body_is_charged_and_the_sdk_error_reaches_the_caller(
        ledger_url: str, is_async: bool) -> None:
    body = httpx.Response(200, json=chat_completion()).content

    class Reset(httpx.SyncByteStream, httpx.AsyncByteStream):
        def __iter__(self) -> Any:
            yield body[:20]
            raise httpx.ReadError("connection reset by peer")

        async def __aiter__(self) -> Any:
            yield body[:20]
            raise httpx.ReadError("connection reset by peer")

    respx.post(OPENAI_CHAT).respond(200, stream=Reset(),
                                    headers={"content-type": "application/json"})
    b = spendguard.Budget("1", ledger=ledger_url)
    with pytest.raises(openai.APIConnectionError):
        openai_call(is_async, b, max_retries=0)
    [record] = billed(ledger_url)
    assert (record.status, record.actual_usd) == ("error", record.estimated_usd)
    assert b.reserved == 0


# ---------------------------------------------------------------- unreadable usage, bodies


def _anthropic_usage(**changes: Any) -> dict[str, Any]:
    body = anthropic_message(output_tokens=80)  # within the request's max_tokens
    body["usage"].update(changes)
    return body


ANTHROPIC_UNREADABLE = {
    "unknown service tier": _anthropic_usage(service_tier="ultra"),
    "unknown inference_geo": _anthropic_usage(inference_geo="mars"),
    "unknown server tool counter": _anthropic_usage(
        server_tool_use={"code_execution_requests": 2}),
    "token count 10**30": _anthropic_usage(output_tokens=10**30),
    "non-iterable field": _anthropic_usage(iterations=5),
    "no usage": {k: v for k, v in anthropic_message().items() if k != "usage"},
}


@pytest.mark.parametrize(("body", "is_async"), [
    *[pytest.param(body, False, id=name) for name, body in ANTHROPIC_UNREADABLE.items()],
    pytest.param(ANTHROPIC_UNREADABLE["no usage"], True, id="no usage-async"),
    pytest.param(ANTHROPIC_UNREADABLE["token count 10**30"], True, id="10**30-async"),
])
@respx.mock
def test_unreadable_anthropic_usage_returns_the_reply_sent_once_and_charges_the_worst_case(
        ledger_url: str, body: dict[str, Any], is_async: bool,
        caplog: pytest.LogCaptureFixture) -> None:
    route = respx.post(ANTHROPIC_MESSAGES).respond(200, json=body)
    b = spendguard.Budget("1", ledger=ledger_url)
    with warnings.catch_warnings(), caplog.at_level(logging.WARNING, "spendguard"):
        warnings.simplefilter("error")  # a user's -W error must not fail the paid call
        reply = anthropic_call(is_async, b)
    assert isinstance(reply, anthropic.types.Message)
    assert route.call_count == 1
    [record] = records(ledger_url)
    assert record.status == "usage_unreadable"
    assert record.actual_usd == record.estimated_usd > 0
    assert (record.note or "").startswith("usage unreadable: ")
    assert b.reserved == 0


OPENAI_REPLY = chat_completion(prompt_tokens=10, completion_tokens=50)  # within the worst case
OPENAI_UNREADABLE = {
    "unknown service tier": {**OPENAI_REPLY, "service_tier": "ultra"},
    "token count 10**30": chat_completion(completion_tokens=10**30),
    "malformed details": {**OPENAI_REPLY, "usage": {
        **OPENAI_REPLY["usage"], "prompt_tokens_details": 7}},
    "no usage": {k: v for k, v in OPENAI_REPLY.items() if k != "usage"},
}


@pytest.mark.parametrize(("body", "is_async"), [
    *[pytest.param(body, False, id=name) for name, body in OPENAI_UNREADABLE.items()],
    pytest.param(OPENAI_UNREADABLE["unknown service tier"], True, id="tier-async"),
])
@respx.mock
def test_unreadable_openai_usage_returns_the_reply_and_charges_the_worst_case(
        ledger_url: str, body: dict[str, Any], is_async: bool) -> None:
    route = respx.post(OPENAI_CHAT).respond(200, json=body)
    b = spendguard.Budget("1", ledger=ledger_url)
    reply = openai_call(is_async, b)
    assert reply.choices[0].message.content == "hi"
    assert route.call_count == 1
    [record] = records(ledger_url)
    assert (record.status, record.actual_usd) == ("usage_unreadable", record.estimated_usd)
    assert b.reserved == 0


@pytest.mark.parametrize("backend", ["sqlite", pytest.param("redis", marks=requires_redis)])
@respx.mock
def test_every_ledger_backend_keeps_the_reason_of_an_unreadable_charge(
        tmp_path: Path, backend: str, request: pytest.FixtureRequest) -> None:
    url = (f"sqlite:///{tmp_path / 'ledger.db'}" if backend == "sqlite"
           else request.getfixturevalue("redis_url"))
    respx.post(ANTHROPIC_MESSAGES).respond(200, json=_anthropic_usage(output_tokens="many"))
    b = spendguard.Budget("1", ledger=url)
    anthropic_call(False, b)
    [record] = b.ledger.records()
    assert record.status == "usage_unreadable"
    assert "output_tokens" in (record.note or "")


@respx.mock
def test_a_non_string_model_in_the_reply_is_priced_by_the_request_model(ledger_url: str) -> None:
    respx.post(ANTHROPIC_MESSAGES).respond(200, json={**anthropic_message(output_tokens=80),
                                                      "model": 42})
    b = spendguard.Budget("1", ledger=ledger_url)
    anthropic_call(False, b)
    [record] = records(ledger_url)
    # claude-haiku-4-5: 50 in × $1 + 80 out × $5, per million
    assert (record.status, record.actual_usd) == ("ok", Decimal("0.00045"))


def test_an_unreadable_cause_is_logged_once(ledger_url: str,
                                            caplog: pytest.LogCaptureFixture) -> None:
    body = _anthropic_usage(inference_geo="atlantis")
    with respx.mock, caplog.at_level(logging.DEBUG, "spendguard"):
        respx.post(ANTHROPIC_MESSAGES).respond(200, json=body)
        b = spendguard.Budget("1", ledger=ledger_url)
        for _ in range(3):
            anthropic_call(False, b)
    said = [r for r in caplog.records if "could not read usage" in r.getMessage()]
    assert [r.levelno for r in said] == [logging.WARNING, logging.DEBUG, logging.DEBUG]
    assert len(records(ledger_url)) == 3


class RawWire(httpx.BaseTransport, httpx.AsyncBaseTransport):
    """A provider sending these exact bytes and headers (nothing decoded on the way)."""

    def __init__(self, body: bytes, headers: dict[str, str]) -> None:
        self.body, self.headers, self.sent = body, headers, 0

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        self.sent += 1
        return httpx.Response(200, headers=self.headers, stream=httpx.ByteStream(self.body))

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        return self.handle_request(request)


@pytest.mark.parametrize("is_async", [False, True])
def test_a_lying_content_encoding_gives_the_sdk_own_outcome_and_one_record_per_attempt(
        ledger_url: str, is_async: bool) -> None:
    wire = RawWire(b'{"not": "gzip"}', {"content-type": "application/json",
                                        "content-encoding": "gzip"})

    def http_client() -> Any:
        return httpx.AsyncClient(transport=wire) if is_async else httpx.Client(transport=wire)

    plain = outcome(openai_call, is_async, None, max_retries=0, http_client=http_client())
    sent_plainly = wire.sent
    b = spendguard.Budget("1", ledger=ledger_url)
    guarded = outcome(openai_call, is_async, b, max_retries=0, http_client=http_client())
    assert guarded == plain
    assert wire.sent - sent_plainly == sent_plainly
    assert [r.status for r in billed(ledger_url)] == ["usage_unreadable"] * sent_plainly
    assert "error" in (billed(ledger_url)[0].note or "")
    assert b.reserved == 0


# ---------------------------------------------------------------- proxy mounts


@pytest.mark.parametrize("is_async", [False, True])
def test_requests_through_a_proxy_mount_are_guarded_on_every_path(ledger_url: str,
                                                                  is_async: bool) -> None:
    replies: Any = iter([httpx.Response(200, json=chat_completion(prompt_tokens=10,
                                                                  completion_tokens=5)),
                         httpx.ReadTimeout("proxy timed out")])

    def proxy(request: httpx.Request) -> httpx.Response:
        reply = next(replies)
        if isinstance(reply, Exception):
            raise reply
        assert isinstance(reply, httpx.Response)
        return reply

    mount = {"https://api.openai.com": httpx.MockTransport(proxy)}
    b = spendguard.Budget("1", ledger=ledger_url)
    for _ in range(2):
        http_client: Any = (httpx.AsyncClient(mounts=mount) if is_async
                            else httpx.Client(mounts=mount))
        outcome(openai_call, is_async, b, http_client=http_client, max_retries=0)
    assert [r.status for r in records(ledger_url)] == ["ok", "error"]
    assert b.reserved == 0


@respx.mock
def test_a_ledger_that_fails_at_settle_leaves_the_call_returned_and_the_worst_case_held(
        ledger_url: str, monkeypatch: pytest.MonkeyPatch,
        caplog: pytest.LogCaptureFixture) -> None:
    route = respx.post(ANTHROPIC_MESSAGES).respond(200, json=anthropic_message())
    b = spendguard.Budget("1", ledger=ledger_url)

    def gone(*args: Any, **kwargs: Any) -> Any:
        raise spendguard.LedgerError("the ledger vanished")

    monkeypatch.setattr(b.ledger, "settle", gone)
    with caplog.at_level(logging.ERROR, "spendguard"):
        reply = anthropic_call(False, b)  # the anthropic SDK would retry an exception
    assert isinstance(reply, anthropic.types.Message)
    assert route.call_count == 1
    assert any("stays held until it expires" in r.getMessage() for r in caplog.records)
    # nothing lost: the worst case stays held, and is charged when the reservation expires
    assert b.reserved > 0
