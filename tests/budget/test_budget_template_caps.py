"""Bounded per-user scopes: a template's cap on distinct children per period, the shared
overflow scope (or a refusal) past it, and reports that fold children beyond the top N."""

from __future__ import annotations

import json
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest
import respx
from click.testing import CliRunner

import spendguard
from spendguard import Budget, BudgetConfigError, BudgetExceeded, render_report_text
from spendguard._budget.ledger.base import CallInfo
from spendguard._budget.reservations import reserve_call
from spendguard.cli import main
from tests.example_runs import RunExample, on_examples_worker
from tests.ledger_backends import LedgerBackend
from tests.ledger_helpers import FakeClock, settle
from tests.provider_bodies import chat_completion

D = Decimal
OPENAI_CHAT = "https://api.openai.com/v1/chat/completions"
MESSAGES: Any = [{"role": "user", "content": "Say hi"}]
OVERFLOW = "app/user:%overflow"


def ask(client: spendguard.OpenAI, who: str) -> None:
    client.chat.completions.create(model="gpt-4o-mini", messages=MESSAGES, max_tokens=50,
                                   safety_identifier=who)


def user_call(person: str) -> CallInfo:
    return CallInfo(provider="openai", model="gpt-test", endpoint="chat", end_user=person)


@respx.mock
def test_new_users_past_the_cap_share_one_overflow_scope_on_every_backend(
        ledger_backend: LedgerBackend) -> None:
    respx.post(OPENAI_CHAT).respond(200, json=chat_completion(prompt_tokens=9,
                                                              completion_tokens=50))
    url = ledger_backend.url(timeout="2")
    app = Budget("10", scope="app", ledger=url, warn_at=None, period="daily")
    app.per("user", limit_usd="1", max_children=2)
    client = spendguard.OpenAI(api_key="sk-test", budget=app, max_retries=0)
    for who in ("alice", "bob", "carol", "dave", "alice"):
        ask(client, who)
    scopes = [record.scopes for record in app.ledger.records()]
    assert scopes == [("app", "app/user:alice", "app/user:%new"),
                      ("app", "app/user:bob", "app/user:%new"),
                      ("app", OVERFLOW), ("app", OVERFLOW),
                      ("app", "app/user:alice")]  # a known user keeps their own scope
    report = spendguard.report_spend(url, by="scope")
    assert OVERFLOW in [b.scope for b in report.budgets]
    assert OVERFLOW in [g.name for g in report.groups]
    text = render_report_text(report)
    assert "%new" not in text  # the count is bookkeeping, never shown
    assert f"({OVERFLOW}: values past their template's max_children" in text
    assert app.ledger.verify() == []


@respx.mock
def test_a_new_user_past_the_cap_is_refused_naming_max_children_when_asked() -> None:
    route = respx.post(OPENAI_CHAT).respond(200, json=chat_completion(prompt_tokens=9,
                                                                      completion_tokens=50))
    app = Budget("10", scope="app", ledger="memory://", warn_at=None)
    app.per("user", limit_usd="1", max_children=1, overflow="refuse")
    client = spendguard.OpenAI(api_key="sk-test", budget=app, max_retries=0)
    ask(client, "alice")
    with pytest.raises(BudgetExceeded, match="max_children=1") as refused:
        ask(client, "bob")
    assert refused.value.refused_by == "max_children"
    assert refused.value.scope == "app/user:bob"
    assert "overflow=\"share\"" in str(refused.value)
    ask(client, "alice")
    assert route.call_count == 2  # nothing sent for bob


def test_the_cap_counts_distinct_users_per_period_and_a_new_day_starts_again() -> None:
    clock = FakeClock(datetime(2031, 3, 1, 9, 0, tzinfo=UTC))
    app = Budget("10", scope="app", ledger="memory://", warn_at=None, clock=clock)
    app.per("user", limit_usd="1", period="daily", max_children=1)
    settle(reserve_call(app, D("0.1"), call=user_call("alice")), "0.1")
    settle(reserve_call(app, D("0.1"), call=user_call("bob")), "0.1")
    clock.advance(days=1)
    settle(reserve_call(app, D("0.1"), call=user_call("bob")), "0.1")
    assert [r.scopes[1] for r in app.ledger.records()] == [
        "app/user:alice", OVERFLOW, "app/user:bob"]


def test_a_released_first_call_gives_its_place_back() -> None:
    app = Budget("10", scope="app", ledger="memory://", warn_at=None)
    app.per("user", limit_usd="1", max_children=1)
    reserve_call(app, D("0.1"), call=user_call("alice")).release("http 500")
    settle(reserve_call(app, D("0.1"), call=user_call("bob")), "0.1")
    assert [r.scopes for r in app.ledger.records() if r.status == "ok"] == [
        ("app", "app/user:bob", "app/user:%new")]


def test_threads_meeting_many_new_users_at_once_never_make_more_children_than_the_cap(
        tmp_path: Path) -> None:
    app = Budget("100", scope="app", ledger=f"sqlite:///{tmp_path / 'l.db'}", warn_at=None)
    app.per("user", limit_usd="2", max_children=3)  # overflow users share one user's $2

    def one(person: str) -> None:
        settle(reserve_call(app, D("0.1"), call=user_call(person)), "0.1")

    with ThreadPoolExecutor(max_workers=4) as pool:
        list(pool.map(one, [f"user{n}" for n in range(16)]))
    children = {scope for r in app.ledger.records() for scope in r.scopes[1:]}
    own = children - {OVERFLOW, "app/user:%new"}
    assert len(own) <= 3 and OVERFLOW in children
    assert len(list(app.ledger.records())) == 16
    assert app.ledger.verify() == []


@pytest.mark.parametrize(("options", "field"), [
    ({"max_children": 0}, "max_children"), ({"max_children": "5"}, "max_children"),
    ({"max_children": 5, "overflow": "drop"}, "overflow")])
def test_a_bad_cap_or_overflow_choice_is_refused_naming_the_field(options: dict[str, Any],
                                                                   field: str) -> None:
    app = Budget("10", scope="app", ledger="memory://")
    with pytest.raises(BudgetConfigError) as caught:
        app.per("user", limit_usd="1", **options)
    assert caught.value.field == field


# -- reports fold children beyond the top N -------------------------------------------------

def _thirty_users(url: str) -> None:
    app = Budget("100", scope="app", ledger=url, warn_at=None)
    app.per("user", limit_usd="5")
    for n in range(30):
        cost = D(n + 1) / 100  # user29 spent most
        settle(reserve_call(app, cost, call=user_call(f"user{n:02d}")), cost)


def test_the_report_keeps_the_top_children_and_folds_the_rest_into_one_row(
        tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'l.db'}"
    _thirty_users(url)
    report = spendguard.report_spend(url, by="scope", top=5)
    rows = {b.scope: b for b in report.budgets}
    assert sorted(rows) == ["app", "app/user:* (25 more)", "app/user:user25", "app/user:user26",
                            "app/user:user27", "app/user:user28", "app/user:user29"]
    folded = rows["app/user:* (25 more)"]
    assert (folded.folded, folded.spent_usd) == (25, sum(D(n) / 100 for n in range(1, 26)))
    assert [g.name for g in report.groups][:2] == ["app", "app/user:* (25 more)"]
    assert sum(g.spent_usd for g in report.groups[1:]) == report.total_usd
    everything = spendguard.report_spend(url, by="scope", top=None)
    assert len(everything.budgets) == 31 and len(everything.groups) == 31


def test_report_cli_folds_by_default_and_shows_every_scope_when_asked(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'l.db'}"
    _thirty_users(url)
    runner = CliRunner()
    default = runner.invoke(main, ["report", "--ledger", url, "--by", "scope"])
    top3 = runner.invoke(main, ["report", "--ledger", url, "--by", "scope", "--top", "3",
                                "--json"])
    every = runner.invoke(main, ["report", "--ledger", url, "--by", "scope", "--all-scopes"])
    bad = runner.invoke(main, ["report", "--ledger", url, "--top", "0"])
    assert default.exit_code == top3.exit_code == every.exit_code == 0
    assert "app/user:* (10 more)" in default.output and "user00" not in default.output
    assert "--all-scopes lists them" in default.output
    budgets = json.loads(top3.output)["budgets"]
    assert [b["folded"] for b in budgets if b["folded"]] == [27]
    assert "app/user:user00" in every.output and "more)" not in every.output
    assert bad.exit_code == 2 and "--top" in bad.output and "Traceback" not in bad.output


@on_examples_worker("per_user_budgets")
def test_the_per_user_example_caps_its_visitors_and_folds_its_report(
        run_example: RunExample) -> None:
    done = run_example("per_user_budgets")
    assert done.returncode == 0, done.stderr
    assert "app:demo/user:%overflow" in done.stdout
    assert "app:demo/user:* (1 more)" in done.stdout
    assert "%new" not in done.stdout
