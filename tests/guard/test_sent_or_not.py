"""A request is charged only if it left the machine: an attempt that failed before its body
was written out is released, one that failed after is charged its worst case."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Callable
from typing import Any

import httpx2
import openai
import pytest

import spendguard
from spendguard import SpendRecord
from tests.provider_bodies import chat_completion

MESSAGES: Any = [{"role": "user", "content": "hi"}]


def _budget() -> spendguard.Budget:
    return spendguard.Budget("1", ledger=f"memory://sent-{uuid.uuid4().hex[:8]}", warn_at=None)


def _records(budget: spendguard.Budget) -> list[SpendRecord]:
    return list(budget.ledger.records(scope=budget.scope))


def _client(budget: spendguard.Budget, handler: Callable[[httpx2.Request], Any]
            ) -> spendguard.OpenAI:
    return spendguard.OpenAI(api_key="k", budget=budget, max_retries=0,
                             http_client=httpx2.Client(transport=httpx2.MockTransport(handler)))


def _write(request: httpx2.Request) -> None:
    """What a connection does with a request: hand every byte of its body to the socket."""
    for _ in request.stream:  # type: ignore[union-attr]
        pass


def test_a_failure_before_the_body_was_written_is_released() -> None:
    budget = _budget()

    def closed_loop(request: httpx2.Request) -> httpx2.Response:
        raise RuntimeError("Event loop is closed")  # nothing written yet

    with pytest.raises(RuntimeError):
        _client(budget, closed_loop).chat.completions.create(
            model="gpt-5.5", messages=MESSAGES, max_tokens=20)
    [record] = _records(budget)
    assert record.status == "released" and record.actual_usd == 0
    assert "not sent" in (record.note or "")
    assert budget.spent == budget.reserved == 0


@pytest.mark.parametrize("written", [False, True])
def test_a_write_error_is_charged_only_once_the_whole_body_was_handed_over(
        written: bool) -> None:
    budget = _budget()

    def broken_pipe(request: httpx2.Request) -> httpx2.Response:
        if written:
            _write(request)
        raise httpx2.WriteError("broken pipe")

    with pytest.raises(openai.APIConnectionError):
        _client(budget, broken_pipe).chat.completions.create(
            model="gpt-5.5", messages=MESSAGES, max_tokens=20)
    [record] = _records(budget)
    if written:
        assert (record.status, record.actual_usd) == ("error", record.estimated_usd)
        assert "after sending" in (record.note or "")
    else:
        assert record.status == "released" and "not sent" in (record.note or "")


def test_a_written_request_that_is_answered_is_settled_from_its_usage() -> None:
    budget = _budget()

    def answered(request: httpx2.Request) -> httpx2.Response:
        _write(request)
        return httpx2.Response(200, json=chat_completion(prompt_tokens=9, completion_tokens=3))

    _client(budget, answered).chat.completions.create(model="gpt-5.5", messages=MESSAGES,
                                                      max_tokens=20)
    [record] = _records(budget)
    assert record.status == "ok" and record.tokens == {"input": 9, "output": 3}


@pytest.mark.parametrize("written", [False, True])
async def test_a_call_cancelled_while_waiting_is_charged_only_if_its_body_was_written(
        written: bool) -> None:
    budget = _budget()
    entered = asyncio.Event()
    never = asyncio.Event()

    async def waiting(request: httpx2.Request) -> httpx2.Response:
        if written:
            async for _ in request.stream:  # type: ignore[union-attr]
                pass
        entered.set()
        await never.wait()
        raise AssertionError("unreachable")

    client = spendguard.AsyncOpenAI(
        api_key="k", budget=budget, max_retries=0,
        http_client=httpx2.AsyncClient(transport=httpx2.MockTransport(waiting)))
    task = asyncio.ensure_future(client.chat.completions.create(
        model="gpt-5.5", messages=MESSAGES, max_tokens=20))
    await entered.wait()
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    [record] = _records(budget)
    assert record.status == ("error" if written else "released")
    assert budget.reserved == 0


def test_a_connect_error_of_the_sdk_is_released_and_not_retried_into_a_charge() -> None:
    budget = _budget()

    def refused(request: httpx2.Request) -> httpx2.Response:
        raise httpx2.ConnectError("connection refused")

    client = _client(budget, refused)
    with pytest.raises(openai.APIConnectionError):
        client.chat.completions.create(model="gpt-5.5", messages=MESSAGES, max_tokens=20)
    assert [r.status for r in _records(budget)] == ["released"]
