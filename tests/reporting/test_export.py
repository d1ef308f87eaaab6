"""Exports of the ledger: CSV, JSON Lines and FOCUS, their totals, and what they never contain."""

from __future__ import annotations

import io
import json
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest
import respx

import spendguard
from spendguard import Budget, ConfigError, export_spend, open_ledger, validate_focus
from spendguard._budget.budget import CallInfo
from spendguard._budget.ledger import ScopeClaim
from spendguard._budget.reservations import reserve_call
from spendguard._reporting.export import FOCUS_COLUMNS, LEDGER_COLUMNS
from tests.finance_helpers import book, csv_rows, list_cost, read_csv, total, usage_of
from tests.ledger_helpers import START, FakeClock
from tests.paths import REPO
from tests.provider_bodies import anthropic_message, chat_completion

D = Decimal
SECRET_KEY = "sk-proj-SECRETKEY0123456789"
SECRET_PROMPT = "the launch code is 0000-SECRET-PROMPT"


@pytest.fixture
def ledger_url(tmp_path: Path) -> str:
    return f"sqlite:///{tmp_path / 'ledger.db'}"


def budget(ledger_url: str, scope: str = "project:acme", limit: str = "100",
           clock: FakeClock | None = None) -> Budget:
    return Budget(limit, ledger=ledger_url, scope=scope, clock=clock or FakeClock())


def export_text(ledger_url: str, format: Any, **options: Any) -> tuple[str, Decimal]:
    out = io.StringIO()
    result = export_spend(out, format=format, ledger=ledger_url, **options)
    return out.getvalue(), result.total_usd


@respx.mock
def test_calls_through_guarded_clients_export_to_every_format_with_the_ledgers_total(
        ledger_url: str, tmp_path: Path) -> None:
    respx.post("https://api.openai.com/v1/chat/completions").respond(200, json=chat_completion(
        prompt_tokens=1200, cached_tokens=200, completion_tokens=300))
    respx.post("https://api.anthropic.com/v1/messages").respond(200, json=anthropic_message(
        input_tokens=40, output_tokens=90, cache_write_5m=2000, cache_read=500))
    acme = Budget("5", ledger=ledger_url, scope="project:acme")
    openai_client = spendguard.OpenAI(api_key=SECRET_KEY, budget=acme)
    anthropic_client = spendguard.Anthropic(api_key=SECRET_KEY, budget=acme)
    messages: Any = [{"role": "user", "content": SECRET_PROMPT}]
    with spendguard.tags(team="search"):
        for _ in range(3):
            openai_client.chat.completions.create(model="gpt-4o-mini", messages=messages,
                                                  max_tokens=400)
        anthropic_client.messages.create(model="claude-haiku-4-5", messages=messages,
                                         max_tokens=400)
    ledger_total = sum((r.actual_usd for r in open_ledger(ledger_url).records()), D(0))
    assert ledger_total == acme.spent > 0
    focus_file = tmp_path / "focus.csv"
    export_spend(focus_file, format="focus", ledger=ledger_url)
    focus = read_csv(focus_file)
    assert total(focus, "BilledCost") == ledger_total
    # gpt-4o-mini: 1000 uncached, 200 cached, 300 output per call; haiku: 4 kinds
    assert len(focus) == 3 * 3 + 4
    assert validate_focus(focus_file) == []
    csv_text, csv_total = export_text(ledger_url, "csv")
    jsonl_text, jsonl_total = export_text(ledger_url, "jsonl")
    assert csv_total == jsonl_total == ledger_total
    assert total(csv_rows(csv_text), "actual_usd") == ledger_total
    assert sum(D(json.loads(line)["actual_usd"]) for line in jsonl_text.splitlines()) == \
        ledger_total
    for text in (csv_text, jsonl_text, focus_file.read_text()):
        assert SECRET_KEY not in text and "SECRETKEY" not in text
        assert SECRET_PROMPT not in text and "launch code" not in text


def test_prompt_text_stored_in_the_ledger_is_never_exported(ledger_url: str) -> None:
    ledger = open_ledger(ledger_url)
    from spendguard._budget.budget import CallInfo
    from spendguard._budget.reservations import reserve_call

    info = CallInfo(provider="openai", model="gpt-4o-mini", endpoint="chat",
                    prompt_text=SECRET_PROMPT)
    reservation = reserve_call(budget(ledger_url), D("0.01"), call=info)
    reservation.settle(actual_usd=D("0.001"), tokens={"input": 10}, usage_estimated=False,
                       table_version="t", latency_s=0.1)
    assert next(iter(ledger.records())).prompt_text == SECRET_PROMPT
    for fmt in ("csv", "jsonl", "focus"):
        assert SECRET_PROMPT not in export_text(ledger_url, fmt)[0]


def test_the_ledger_csv_has_every_column_and_exact_money(ledger_url: str) -> None:
    b = budget(ledger_url)
    book(b, "gpt-4o-mini", {"input": 1, "output": 0}, actual_usd="0.00000015")
    text, _ = export_text(ledger_url, "csv")
    assert text.splitlines()[0] == ",".join(LEDGER_COLUMNS)
    (row,) = csv_rows(text)
    assert row["actual_usd"] == "0.00000015"  # never 1.5E-7, never a float
    assert row["scopes"] == '["project:acme"]'
    assert row["time"] == "2031-01-31T23:00:00.000000Z"


def test_csv_cells_that_would_run_as_formulas_are_neutralised_and_nothing_is_truncated(
        ledger_url: str) -> None:
    dangerous = {"a": "=HYPERLINK(\"http://evil\")", "b": "+1+2", "c": "-2+3", "d": "@SUM(1)",
                 "e": "\tx", "f": "\ry", "long": "z" * 200}
    b = budget(ledger_url, scope="=cmd|' /C calc'!A0")
    with spendguard.tags(**dangerous):
        book(b, "gpt-4o-mini", {"input": 100, "output": 10})
    note = "=" + "n" * 5000
    open_ledger(ledger_url).adjust([ScopeClaim(b.scope, "all")], D("-0.25"), time=START,
                                   note=note, provider="openai", model="gpt-4o-mini")
    text, _ = export_text(ledger_url, "csv")
    call, adjustment = sorted(csv_rows(text), key=lambda row: row["status"] == "adjustment")
    assert call["tags"].startswith("{")  # JSON text cannot start a formula
    assert adjustment["note"] == "'" + note  # neutralised, all 5,001 characters kept
    assert adjustment["actual_usd"] == "-0.25"  # a plain number stays a number
    focus = csv_rows(export_text(ledger_url, "focus")[0])
    assert {row["ResourceId"] for row in focus} == {"'" + b.scope}
    assert any(row["ChargeDescription"] == "'" + note for row in focus)
    assert any(row["BilledCost"] == "-0.25" for row in focus)
    tags = json.loads(next(row for row in focus if row["x_Status"] == "ok")["Tags"])
    assert tags["long"] == "z" * 200 and tags["a"] == dangerous["a"]


def test_focus_has_one_row_per_call_and_billed_token_kind(ledger_url: str) -> None:
    b = budget(ledger_url)
    tokens = {"input": 800, "cache_read": 200, "cache_write_5m": 0, "output": 500,
              "reasoning": 300}
    book(b, "gpt-4o-mini", tokens)
    rows = csv_rows(export_text(ledger_url, "focus")[0])
    assert [(r["x_TokenKind"], r["ConsumedQuantity"], r["PricingQuantity"], r["ListUnitPrice"],
             r["BilledCost"]) for r in rows] == [
        ("input", "800", "0.0008", "0.15", "0.00012"),
        ("cache_read", "200", "0.0002", "0.075", "0.000015"),
        ("output", "500", "0.0005", "0.6", "0.0003"),  # reasoning is part of output
    ]
    first = rows[0]
    assert (first["ChargeCategory"], first["ServiceCategory"], first["ConsumedUnit"],
            first["PricingUnit"], first["SkuId"], first["SkuPriceId"], first["ProviderName"],
            first["ServiceProviderName"], first["HostProviderName"]) == (
        "Usage", "AI and Machine Learning", "Tokens", "1000000 Tokens", "gpt-4o-mini",
        "gpt-4o-mini:input", "OpenAI", "OpenAI", "OpenAI")
    assert (first["ChargePeriodStart"], first["ChargePeriodEnd"], first["BillingPeriodStart"],
            first["BillingPeriodEnd"]) == ("2031-01-31T23:00:00Z", "2031-02-01T00:00:00Z",
                                           "2031-01-01T00:00:00Z", "2031-02-01T00:00:00Z")
    assert json.loads(first["Tags"]) == {"spendguard/scope": "project:acme",
                                         "spendguard/scope/project:acme": True}
    assert [c.name for c in FOCUS_COLUMNS] == list(rows[0])


@pytest.mark.parametrize(("endpoint", "tags"), [
    ("chat.completions", {"batch_job": "job_1"}),  # as spendguard.batch records a request
    ("batch", {}), ("chat.completions", {"batch": "true"})])
def test_a_batch_call_is_listed_at_the_batch_rate(ledger_url: str, endpoint: str,
                                                  tags: dict[str, str]) -> None:
    tokens = {"input": 1_000_000, "output": 1_000_000}
    with spendguard.tags(**tags):
        book(budget(ledger_url), "gpt-4o-mini", tokens, endpoint=endpoint,
             actual_usd=list_cost("gpt-4o-mini", tokens, batch=True))
    rows = csv_rows(export_text(ledger_url, "focus")[0])
    assert [(r["ListUnitPrice"], r["BilledCost"], r["SkuPriceId"]) for r in rows] == [
        ("0.075", "0.075", "gpt-4o-mini:input:batch"), ("0.3", "0.3", "gpt-4o-mini:output:batch")]


def test_calls_of_one_model_at_different_rates_each_export_at_their_own(
        ledger_url: str) -> None:
    """Within one export, a model's rates found for one call are not another's: a call above
    the long-context tier, a batch call and one with cache writes each keep theirs, and the
    plain call after them the plain rates."""
    model = "claude-haiku-5-5"
    calls: list[tuple[dict[str, int], dict[str, str]]] = [
        ({"input": 1_000, "output": 100}, {}),
        ({"input": 150_000, "output": 100}, {}),  # above the 100K tier
        ({"input": 1_000, "output": 100}, {"batch": "true"}),
        ({"input": 1_000, "cache_write_1h": 2_000, "output": 100}, {}),
        ({"input": 1_000, "output": 100}, {}),
    ]
    ledger_budget = budget(ledger_url)
    expected = []
    for tokens, tags in calls:
        batch = bool(tags)
        with spendguard.tags(**tags):
            book(ledger_budget, model, tokens,
                 actual_usd=list_cost(model, tokens, batch=batch))
        priced = spendguard.cost(model, usage_of(tokens), batch=batch)
        expected += [(line.kind, str(line.usd_per_million.normalize())) for line in priced.lines
                     if line.tokens]
    rows = csv_rows(export_text(ledger_url, "focus")[0])
    assert [(r["x_TokenKind"], r["ListUnitPrice"]) for r in rows] == expected
    assert [r["SkuPriceId"] for r in rows if r["x_TokenKind"] == "input"] == [
        f"{model}:input", f"{model}:input:above-100000", f"{model}:input:batch",
        f"{model}:input", f"{model}:input"]
    assert total(rows, "BilledCost") == total(rows, "ListCost")


def test_a_discount_the_table_does_not_know_is_shared_over_the_kinds_exactly(
        ledger_url: str, tmp_path: Path) -> None:
    book(budget(ledger_url), "gpt-4o", {"input": 333, "cache_read": 777, "output": 101},
         actual_usd="0.0012345678901")
    path = tmp_path / "f.csv"
    export_spend(path, format="focus", ledger=ledger_url)
    rows = read_csv(path)
    assert total(rows, "BilledCost") == D("0.0012345678901")
    assert total(rows, "ListCost") == list_cost("gpt-4o", {"input": 333, "cache_read": 777,
                                                           "output": 101})
    assert validate_focus(path) == []


def test_a_model_without_a_price_today_is_one_request_row_at_the_ledgers_amount(
        ledger_url: str, tmp_path: Path) -> None:
    from spendguard._budget.budget import CallInfo
    from spendguard._budget.reservations import reserve_call

    info = CallInfo(provider="openai", model="gpt-retired-1", endpoint="chat")
    reserve_call(budget(ledger_url), D("1"), call=info).settle(
        actual_usd=D("0.5"), tokens={"input": 10, "output": 20}, usage_estimated=False,
        table_version="old", latency_s=1.0)
    path = tmp_path / "f.csv"
    export_spend(path, format="focus", ledger=ledger_url)
    (row,) = read_csv(path)
    assert (row["PricingQuantity"], row["PricingUnit"], row["ListUnitPrice"], row["ListCost"],
            row["ConsumedQuantity"], row["ConsumedUnit"]) == ("1", "Requests", "0.5", "0.5",
                                                              "30", "Tokens")
    assert validate_focus(path) == []


def test_totals_equal_the_ledger_after_a_crash_is_recovered_and_a_late_settle(
        ledger_url: str, tmp_path: Path) -> None:
    clock = FakeClock()
    b = budget(ledger_url, clock=clock)
    book(b, "claude-haiku-4-5", {"input": 1000, "output": 200})
    abandoned = reserve_call(b, D("0.4321"), call=CallInfo(
        provider="anthropic", model="claude-haiku-4-5", endpoint="messages",
        estimated_input_tokens=1000, estimated_output_tokens=8000))
    lost = reserve_call(b, D("0.25"), call=CallInfo(
        provider="anthropic", model="claude-haiku-4-5", endpoint="messages"))
    clock.advance(minutes=20)  # past the reservation expiry: their process is gone
    ledger = open_ledger(ledger_url)
    assert sorted(ledger.recover_expired(clock())) == sorted([abandoned.id, lost.id])
    lost.settle(actual_usd=D("0.01"), tokens={"input": 10, "output": 10}, usage_estimated=False,
                table_version="t", latency_s=1200.0)  # the owner came back: corrected
    spent = b.spent
    assert spent == sum((r.actual_usd for r in ledger.records()), D(0))
    for aggregate in ("call", "day"):
        path = tmp_path / f"{aggregate}.csv"
        result = export_spend(path, format="focus", ledger=ledger_url,
                              aggregate=aggregate)
        rows = read_csv(path)
        assert total(rows, "BilledCost") == total(rows, "EffectiveCost") == spent
        assert result.total_usd == spent
        assert validate_focus(path) == []
    statuses = {row["x_Status"] for row in read_csv(tmp_path / "call.csv")}
    assert statuses == {"ok", "recovered", "adjustment"}
    assert export_text(ledger_url, "csv")[1] == spent


def test_per_day_rows_add_up_calls_of_the_same_price_point(ledger_url: str) -> None:
    clock = FakeClock()
    b = budget(ledger_url, clock=clock)
    for _ in range(3):
        book(b, "gpt-4o-mini", {"input": 100, "output": 10})
        clock.advance(minutes=30)
    text, total_usd = export_text(ledger_url, "focus", aggregate="day")
    rows = csv_rows(text)
    assert [(r["ChargePeriodStart"], r["x_TokenKind"], r["x_CallCount"], r["ConsumedQuantity"])
            for r in rows] == [
        ("2031-01-31T00:00:00Z", "input", "2", "200"),
        ("2031-01-31T00:00:00Z", "output", "2", "20"),
        ("2031-02-01T00:00:00Z", "input", "1", "100"),
        ("2031-02-01T00:00:00Z", "output", "1", "10"),
    ]
    assert total(rows, "BilledCost") == total_usd == b.ledger.totals(b.scope, "all").spent_usd


def test_filters_choose_the_records(ledger_url: str) -> None:
    clock = FakeClock()
    acme = budget(ledger_url, clock=clock)
    other = budget(ledger_url, scope="project:other", clock=clock)
    book(acme, "gpt-4o-mini", {"input": 100})
    clock.advance(days=1)
    with spendguard.tags(team="search"):
        book(other, "gpt-4o", {"input": 100})

    def ids(**options: Any) -> list[str]:
        return [row["model"] for row in csv_rows(export_text(ledger_url, "csv", **options)[0])]

    assert ids() == ["gpt-4o-mini", "gpt-4o"]
    assert ids(until="2031-01-31") == ["gpt-4o-mini"]  # a day is included whole
    assert ids(since="2031-02") == ["gpt-4o"]
    assert ids(scope="project:acme") == ["gpt-4o-mini"]
    assert ids(tag="team=search") == ids(tag="team") == ["gpt-4o"]
    assert ids(model="gpt-4o") == ["gpt-4o"]


@pytest.mark.parametrize(("options", "field"), [
    ({"format": "xml"}, "format"),
    ({"since": "last tuesday"}, "since"),
    ({"until": "2031-01-01", "since": "2031-02-01"}, "until"),
    ({"tag": "no spaces"}, "tag"),
    ({"aggregate": "week"}, "aggregate"),
    ({"format": "csv", "aggregate": "day"}, "aggregate"),
    ({"ledger": "mysql://x"}, "ledger"),
])
def test_bad_arguments_name_the_field_and_the_fix(options: dict[str, Any], field: str) -> None:
    with pytest.raises(ConfigError, match=rf"^{field}: .*(use|write|swap|is not)"):
        export_spend(io.StringIO(), **options)


def test_exports_are_in_the_public_api() -> None:
    assert spendguard.export_spend is export_spend
    assert spendguard.validate_focus is validate_focus


def test_the_docs_list_every_column_as_it_is_written() -> None:
    docs = (REPO / "docs" / "finance.md").read_text()
    for column in FOCUS_COLUMNS:
        assert f"| `{column.name}` |" in docs, column.name
    for name in LEDGER_COLUMNS:
        assert f"`{name}`" in docs, name


def test_requests_sent_by_spendguard_batch_export_at_the_batch_rate(tmp_path: Path) -> None:
    from tests.batching_helpers import World, chat, message

    world = World(ledger=f"sqlite:///{tmp_path / 'ledger.db'}")
    openai_deferred = world.openai().deferred(polling=world.polling)
    anthropic_deferred = world.anthropic().deferred(polling=world.polling)
    handles = [openai_deferred.chat.completions.create(**chat(f"q{i}")) for i in range(3)]
    handles.append(anthropic_deferred.messages.create(**message("hi")))
    for handle in handles:
        handle.result()
    path = tmp_path / "focus.csv"
    export_spend(path, format="focus", ledger=world.budget.ledger)
    rows = read_csv(path)
    assert rows and all(row["SkuPriceId"].endswith(":batch") for row in rows)
    assert total(rows, "BilledCost") == total(rows, "ListCost") == world.budget.spent > 0
    assert validate_focus(path) == []
    assert spendguard.report_spend(world.budget.ledger).batch_share == 1.0
