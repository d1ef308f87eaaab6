"""Injected faults (errors, timeouts, latency) as the SDKs' retry loops see them."""

from __future__ import annotations

import asyncio
import contextlib
from typing import Any

import anthropic
import openai
import pytest

from spendguard import ConfigError
from spendguard.testing import Emulator, ManualClock

USER: Any = [{"role": "user", "content": "hi"}]


def test_sdk_retries_through_injected_rate_limits() -> None:
    emulator = Emulator()
    emulator.fail_next(2, status=429)
    completion = emulator.openai_client().chat.completions.create(model="gpt-5.5",
                                                                  messages=USER)
    assert completion.choices[0].message.content
    log = emulator.requests
    assert [r.status for r in log] == [429, 429, 200]
    assert [r.headers["x-stainless-retry-count"] for r in log] == ["0", "1", "2"]
    assert [r.fault for r in log] == ["status", "status", None]


def test_more_failures_than_retries_surface_as_the_sdks_status_error() -> None:
    emulator = Emulator()
    emulator.fail_next(3, status=500)
    with pytest.raises(openai.InternalServerError):
        emulator.openai_client().chat.completions.create(model="gpt-5.5", messages=USER)
    assert len(emulator.requests) == 3


def test_anthropic_overloaded_529_is_retried() -> None:
    emulator = Emulator()
    emulator.fail_next(1, status=529)
    message = emulator.anthropic_client().messages.create(model="claude-sonnet-5",
                                                          max_tokens=5, messages=USER)
    assert message.usage.output_tokens > 0
    assert [r.status for r in emulator.requests] == [529, 200]
    emulator.fail_next(1, status=529)
    with pytest.raises(anthropic.InternalServerError) as error:
        emulator.anthropic_client(max_retries=0).messages.create(
            model="claude-sonnet-5", max_tokens=5, messages=USER)
    assert error.value.status_code == 529
    assert error.value.body["error"]["type"] == "overloaded_error"  # type: ignore[index]


def test_injected_errors_carry_retry_headers_in_provider_format() -> None:
    emulator = Emulator()
    emulator.fail_next(1, status=429, retry_after_ms=1500)
    with pytest.raises(openai.RateLimitError) as error:
        emulator.openai_client(max_retries=0).chat.completions.create(model="gpt-5.5",
                                                                      messages=USER)
    assert error.value.response.headers["retry-after-ms"] == "1500"
    assert error.value.response.headers["retry-after"] == "2"
    assert error.value.code == "rate_limit_exceeded"


def test_faults_can_target_one_path() -> None:
    emulator = Emulator()
    emulator.fail_next(1, status=500, path="/v1/messages")
    emulator.openai_client(max_retries=0).chat.completions.create(model="gpt-5.5",
                                                                  messages=USER)
    with pytest.raises(anthropic.InternalServerError):
        emulator.anthropic_client(max_retries=0).messages.create(
            model="claude-sonnet-5", max_tokens=5, messages=USER)


def test_injected_timeouts_are_retried_then_surface_as_timeouts() -> None:
    emulator = Emulator()
    emulator.timeout_next(1)
    emulator.openai_client().chat.completions.create(model="gpt-5.5", messages=USER)
    assert [r.status for r in emulator.requests] == [None, 200]
    emulator.timeout_next(1)
    with pytest.raises(openai.APITimeoutError):
        emulator.openai_client(max_retries=0).chat.completions.create(model="gpt-5.5",
                                                                      messages=USER)
    emulator.timeout_next(1)
    with pytest.raises(anthropic.APITimeoutError):
        emulator.anthropic_client(max_retries=0).messages.create(
            model="claude-sonnet-5", max_tokens=5, messages=USER)


def test_async_clients_retry_through_faults_too() -> None:
    async def run() -> list[int | None]:
        emulator = Emulator()
        emulator.fail_next(1, status=503)
        emulator.timeout_next(1)
        await emulator.async_anthropic_client().messages.create(
            model="claude-sonnet-5", max_tokens=5, messages=USER)
        return [r.status for r in emulator.requests]

    assert asyncio.run(run()) == [503, None, 200]


def test_random_errors_are_seeded_and_repeatable() -> None:
    def statuses(seed: int) -> list[int | None]:
        emulator = Emulator(seed=seed, error_rate=0.5, error_statuses=(429, 500))
        client = emulator.openai_client(max_retries=0)
        for _ in range(12):
            with contextlib.suppress(openai.APIStatusError):
                client.chat.completions.create(model="gpt-5.5", messages=USER)
        return [r.status for r in emulator.requests]

    first = statuses(7)
    assert first == statuses(7)
    assert {429, 500, 200} <= set(first)


def test_latency_uses_the_manual_clock_instead_of_waiting() -> None:
    clock = ManualClock(start_s=1_000_000)
    emulator = Emulator(clock=clock, latency_s=2.5)
    emulator.openai_client().chat.completions.create(model="gpt-5.5", messages=USER)
    emulator.anthropic_client().messages.create(model="claude-sonnet-5", max_tokens=5,
                                                messages=USER)
    assert clock() == 1_000_005.0


def test_clear_faults_drops_pending_faults() -> None:
    emulator = Emulator()
    emulator.fail_next(5)
    emulator.clear_faults()
    emulator.openai_client(max_retries=0).chat.completions.create(model="gpt-5.5",
                                                                  messages=USER)


def test_bad_fault_settings_are_config_errors() -> None:
    emulator = Emulator()
    with pytest.raises(ConfigError, match="status"):
        emulator.fail_next(1, status=200)
    with pytest.raises(ConfigError, match="count"):
        emulator.fail_next(0)
    with pytest.raises(ConfigError, match="after_events"):
        emulator.break_next_stream(after_events=-1)
