"""The call event stream: one event per step of each attempt, in order; a failing
subscriber never breaks the call; nothing is built while nobody listens."""

from __future__ import annotations

import logging
from typing import Any

import pytest

import spendguard
from spendguard import CallEvent
from spendguard._budget import events
from spendguard._budget.events import Stage
from spendguard.testing import Emulator

MESSAGES: Any = [{"role": "user", "content": "Say something short."}]


def test_a_call_publishes_reserved_then_warned_then_settled() -> None:
    seen: list[CallEvent] = []
    events.subscribe(seen.append)
    events.subscribe(seen.append)  # once, however often added
    try:
        budget = spendguard.Budget("0.0015", ledger="memory://", warn_at=0.5,
                                   on_warn=lambda crossed: None)
        client = spendguard.wrap(Emulator().openai_client(max_retries=0), budget=budget)
        client.chat.completions.create(model="gpt-5.5", messages=MESSAGES, max_tokens=40)
    finally:
        events.unsubscribe(seen.append)
    assert [e.stage for e in seen] == [Stage.RESERVED, Stage.WARNED, Stage.SETTLED]
    assert len({e.call_id for e in seen}) == 1
    settled = seen[-1]
    assert settled.actual_usd == budget.spent and settled.status == "ok"
    assert settled.scopes == (budget.scope,) and settled.tokens["output"] > 0
    assert not events.listening()


def test_a_failing_subscriber_is_logged_once_and_the_call_goes_on(
        caplog: pytest.LogCaptureFixture) -> None:
    def broken(event: CallEvent) -> None:
        raise RuntimeError("subscriber bug")

    events.subscribe(broken)
    try:
        budget = spendguard.Budget("1", ledger="memory://", warn_at=None)
        client = spendguard.wrap(Emulator().openai_client(max_retries=0), budget=budget)
        with caplog.at_level(logging.WARNING, logger="spendguard.events"):
            for _ in range(2):
                client.chat.completions.create(model="gpt-5.5", messages=MESSAGES,
                                               max_tokens=20)
    finally:
        events.unsubscribe(broken)
    assert len(list(budget.ledger.records(scope=budget.scope))) == 2
    assert budget.reserved == 0
    assert len([r for r in caplog.records if "subscriber" in r.getMessage()]) == 1


def test_publishing_without_subscribers_builds_nothing() -> None:
    assert not events.listening()
    events.publish(Stage.SETTLED, no_such_field=1)  # would be an invalid event if built
