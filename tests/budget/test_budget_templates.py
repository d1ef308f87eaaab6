"""Per-user budgets: a template on a budget makes one child scope per end user or tag value,
on first sight, atomic with the call, and the report lists them."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from datetime import timedelta
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest
import respx

import spendguard
from spendguard import Budget, BudgetConfigError, BudgetExceeded, render_report_text
from spendguard._budget.ledger.base import CallInfo
from spendguard._budget.reservations import reserve_call
from tests.ledger_helpers import settle, start_together, worker
from tests.provider_bodies import anthropic_message, chat_completion

D = Decimal
OPENAI_CHAT = "https://api.openai.com/v1/chat/completions"
ANTHROPIC_MESSAGES = "https://api.anthropic.com/v1/messages"
MESSAGES: Any = [{"role": "user", "content": "Say hi"}]


def app_budget(ledger: str = "memory://", limit: str = "10") -> Budget:
    return Budget(limit, scope="app", ledger=ledger, warn_at=None)


def scopes_of_records(budget: Budget) -> list[tuple[str, ...]]:
    """The scopes of each call's record (a refusal's $0 marker is no call)."""
    return [record.scopes for record in budget.ledger.records()
            if record.status != "adjustment"]


@respx.mock
def test_each_openai_end_user_gets_a_budget_of_their_own_on_first_sight() -> None:
    # Each call's worst case is about its actual cost ($0.000121): $0.0003 holds two a user.
    route = respx.post(OPENAI_CHAT).respond(200, json=chat_completion(
        prompt_tokens=9, completion_tokens=200))
    app = app_budget()
    users = app.per("user", limit_usd="0.0003")
    client = spendguard.OpenAI(api_key="sk-test", budget=app, max_retries=0)

    def ask(**who: str) -> None:
        client.chat.completions.create(model="gpt-4o-mini", messages=MESSAGES, max_tokens=200,
                                       **who)  # type: ignore[call-overload]

    ask(safety_identifier="alice")
    ask(user="bob")  # the older field works too
    ask(safety_identifier="alice")
    with pytest.raises(BudgetExceeded) as refused:  # alice's own limit, not the app's
        ask(safety_identifier="alice")
    assert refused.value.scope == "app/user:alice"
    ask(safety_identifier="bob")
    ask()  # no end user: the app's budget alone
    assert route.call_count == 5
    assert scopes_of_records(app) == [("app", "app/user:alice"), ("app", "app/user:bob"),
                                      ("app", "app/user:alice"), ("app", "app/user:bob"),
                                      ("app",)]
    assert users.budget_for("bob").spent == users.budget_for("alice").spent > 0
    assert app.spent == sum((r.actual_usd for r in app.ledger.records()), D(0))


@respx.mock
def test_an_anthropic_end_user_is_read_from_metadata_user_id() -> None:
    respx.post(ANTHROPIC_MESSAGES).respond(200, json=anthropic_message())
    app = app_budget()
    app.per("user", limit_usd="1", max_calls=1)
    client = spendguard.Anthropic(api_key="sk-ant-test", budget=app, max_retries=0)
    client.messages.create(model="claude-haiku-4-5", messages=MESSAGES, max_tokens=200,
                           metadata={"user_id": "u-7"})
    with pytest.raises(BudgetExceeded) as refused:
        client.messages.create(model="claude-haiku-4-5", messages=MESSAGES, max_tokens=200,
                               metadata={"user_id": "u-7"})
    assert (refused.value.scope, refused.value.refused_by) == ("app/user:u-7", "max_calls")


def test_a_tag_template_keys_calls_by_a_spendguard_tags_value() -> None:
    app = app_budget()
    customers = app.per("tag:customer", limit_usd="1", period="1h")
    call = CallInfo(provider="openai", model="gpt-test", endpoint="chat")
    with spendguard.tags(customer="acme"):
        settle(reserve_call(app, D("0.8"), call=call), "0.8")
        with pytest.raises(BudgetExceeded, match="'app/customer:acme'"):
            reserve_call(app, D("0.5"), call=call)
    with spendguard.tags(customer="globex"):
        settle(reserve_call(app, D("0.5"), call=call), "0.5")
    assert customers.budget_for("acme").spent == D("0.8")
    assert customers.budget_for("acme").period == "1h"


def test_a_template_on_an_entered_budget_applies_to_every_client_inside() -> None:
    app = app_budget()
    app.per("user", limit_usd="1")
    call = CallInfo(provider="openai", model="gpt-test", endpoint="chat", end_user="carol")
    with app:
        reservation = reserve_call(None, D("0.1"), call=call)
    assert reservation.call.end_user == "carol"
    settle(reservation, "0.1")
    assert scopes_of_records(app) == [("app", "app/user:carol")]


@pytest.mark.parametrize(("value", "name"), [
    ("team/alice", "user:team%2Falice"), ("50%", "user:50%25"),
    ("x" * 65, "user:sha256-"), ("tab\there", "user:sha256-")])
def test_a_user_id_is_made_a_safe_scope_name(value: str, name: str) -> None:
    assert app_budget().per("user", limit_usd="1").name_for(value).startswith(name)


@pytest.mark.parametrize(("by", "options"), [
    ("email", {}), ("tag:", {}), ("tag:1bad", {}), ("user", {"period": "weekly"}),
    ("user", {"max_calls": -2})])
def test_a_bad_template_is_refused_when_made_naming_the_field(by: str,
                                                             options: dict[str, Any]) -> None:
    with pytest.raises(BudgetConfigError) as caught:
        app_budget().per(by, limit_usd="1", **options)
    assert caught.value.field in ("by", "period", "max_calls")


def test_the_report_lists_each_users_budget_against_its_limit(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'ledger.db'}"
    app = app_budget(url)
    app.per("user", limit_usd="2")
    for person, cost in (("alice", "0.5"), ("bob", "1.5")):
        call = CallInfo(provider="openai", model="gpt-test", endpoint="chat", end_user=person)
        settle(reserve_call(app, D(cost), call=call), cost)
    report = spendguard.report_spend(url, by="scope")
    listed = {b.scope: (b.spent_usd, b.limit_usd) for b in report.budgets}
    assert listed["app/user:alice"] == (D("0.5"), D("2"))
    assert listed["app/user:bob"] == (D("1.5"), D("2"))
    assert "app/user:bob" in render_report_text(report)


def _one_users_call(args: tuple[Budget, str]) -> int:
    app, person = args
    call = CallInfo(provider="openai", model="gpt-test", endpoint="chat", end_user=person)
    try:
        reservation = reserve_call(app, D("0.5"), call=call)
    except BudgetExceeded:
        return 0
    settle(reservation, "0.5")
    return 1


def test_threads_never_overspend_any_users_budget_on_sqlite(tmp_path: Path) -> None:
    app = app_budget(f"sqlite:///{tmp_path / 'ledger.db'}", limit="100")
    users = app.per("user", limit_usd="3")
    people = [f"user-{n}" for n in range(5)]
    with ThreadPoolExecutor(max_workers=8) as pool:
        granted = sum(pool.map(_one_users_call, [(app, people[n % 5]) for n in range(100)]))
    assert granted == 5 * 6  # each user's $3 holds six $0.50 calls, and not a seventh
    for person in people:
        assert users.budget_for(person).spent == D("3")
    assert app.ledger.verify() == []


def test_four_processes_never_overspend_any_users_budget_on_one_sqlite_file(
        tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'ledger.db'}"
    processes = [worker("users", url, "app", "100", "2", "0.5", "24", "ann,ben,cat")
                 for _ in range(4)]
    summaries = start_together(processes)
    assert sum(s["violations"] for s in summaries) == 0
    for person in ("ann", "ben", "cat"):  # first sight raced in four processes: 4 calls each
        assert sum(s["granted"][person] for s in summaries) == 4
    app = app_budget(url, limit="100")
    assert app.spent == D("6") and app.ledger.verify() == []



def test_the_report_shows_a_rolling_windows_sum_ending_at_its_latest_step(
        tmp_path: Path) -> None:
    from tests.ledger_helpers import FakeClock

    url = f"sqlite:///{tmp_path / 'ledger.db'}"
    clock = FakeClock()
    app = Budget("10", scope="app", ledger=url, warn_at=None, clock=clock, period="1h")
    for _ in range(3):
        settle(reserve_call(app, D("0.5"), call=CallInfo(provider="openai", model="gpt-test",
                                                          endpoint="chat")), "0.5")
        clock.advance(minutes=25)  # the first call is out of the window by the third
    [listed] = spendguard.report_spend(url).budgets
    assert listed.spent_usd == D("1.5")
    last_step_end = clock.now - timedelta(minutes=25) + timedelta(minutes=1)
    text = render_report_text(spendguard.report_spend(url))
    assert f"1h to {last_step_end:%Y-%m-%d %H:%M:%S}" in text


@respx.mock
async def test_async_clients_key_per_user_budgets_the_same_way() -> None:
    respx.post(OPENAI_CHAT).respond(200, json=chat_completion(prompt_tokens=9,
                                                              completion_tokens=20))
    app = app_budget()
    users = app.per("user", limit_usd="1", max_calls=1)
    client = spendguard.AsyncOpenAI(api_key="sk-test", budget=app, max_retries=0)
    await client.chat.completions.create(model="gpt-4o-mini", messages=MESSAGES,
                                         max_tokens=50, safety_identifier="dana")
    with pytest.raises(BudgetExceeded, match="max_calls=1"):
        await client.chat.completions.create(model="gpt-4o-mini", messages=MESSAGES,
                                             max_tokens=50, safety_identifier="dana")
    assert users.budget_for("dana").calls == 1
