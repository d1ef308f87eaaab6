"""spendguard's own bookkeeping tags (``spendguard.call_id``, ...) stay out of report groups,
FOCUS Tags and per-day aggregation keys unless asked for."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import respx
from click.testing import CliRunner

import spendguard
from spendguard import Budget, open_ledger
from spendguard.cli import main
from tests.finance_helpers import read_csv, total
from tests.ledger_helpers import FakeClock
from tests.provider_bodies import chat_completion


@pytest.fixture
def ledger_url(tmp_path: Path) -> str:
    """Six guarded calls over two UTC days: per day two tagged team=search, one untagged."""
    url = f"sqlite:///{tmp_path / 'ledger.db'}"
    clock = FakeClock()
    acme = Budget("5", ledger=url, scope="project:acme", clock=clock, runaway=None)
    client = spendguard.OpenAI(api_key="sk-test", budget=acme)
    messages: Any = [{"role": "user", "content": "hello"}]
    with respx.mock:
        respx.post("https://api.openai.com/v1/chat/completions").respond(
            200, json=chat_completion(prompt_tokens=10, completion_tokens=30))
        for _ in range(2):  # 23:00 on one day, then 01:00 on the next
            with spendguard.tags(team="search"):
                for _ in range(2):
                    client.chat.completions.create(model="gpt-4o-mini", messages=messages,
                                                   max_tokens=400)
            client.chat.completions.create(model="gpt-4o-mini", messages=messages,
                                           max_tokens=400)
            clock.advance(hours=2)
    return url


def test_every_guarded_call_carries_a_unique_internal_call_id(ledger_url: str) -> None:
    records = list(open_ledger(ledger_url).records())
    assert len(records) == 6
    assert len({record.tags["spendguard.call_id"] for record in records}) == 6


def test_focus_tags_leave_out_internal_tags_unless_asked(ledger_url: str,
                                                         tmp_path: Path) -> None:
    plain, internal = tmp_path / "plain.csv", tmp_path / "internal.csv"
    spendguard.export_spend(plain, format="focus", ledger=ledger_url)
    spendguard.export_spend(internal, format="focus", ledger=ledger_url, internal_tags=True)
    plain_tags = [json.loads(row["Tags"]) for row in read_csv(plain)]
    assert len(plain_tags) == 12  # 6 calls x (input, output)
    assert not any(key.startswith("spendguard.") for tags in plain_tags for key in tags)
    assert sum(tags.get("team") == "search" for tags in plain_tags) == 8
    assert all("spendguard.call_id" in json.loads(row["Tags"]) for row in read_csv(internal))


def test_aggregate_day_merges_calls_into_one_row_per_day_tags_and_token_kind(
        ledger_url: str, tmp_path: Path) -> None:
    daily, per_call = tmp_path / "daily.csv", tmp_path / "calls.csv"
    result = spendguard.export_spend(daily, format="focus", ledger=ledger_url,
                                     aggregate="day")
    spendguard.export_spend(per_call, format="focus", ledger=ledger_url)
    rows = read_csv(daily)
    # 2 days x (team=search, untagged) x (input, output)
    assert result.rows == len(rows) == 8
    assert sorted((r["ChargePeriodStart"][:10], r["Tags"], r["x_TokenKind"], r["x_CallCount"])
                  for r in rows) == sorted(
        (day, tags, kind, calls)
        for day in ("2031-01-31", "2031-02-01")
        for tags, calls in (('{"spendguard/scope":"project:acme","spendguard/scope/project:acme":'
                             'true,"team":"search"}', "2"),
                            ('{"spendguard/scope":"project:acme","spendguard/scope/project:acme":'
                             'true}', "1"))
        for kind in ("input", "output"))
    assert total(rows, "BilledCost") == total(read_csv(per_call), "BilledCost") == \
        result.total_usd
    assert spendguard.validate_focus(daily) == []
    kept = spendguard.export_spend(tmp_path / "kept.csv", format="focus", ledger=ledger_url,
                                   aggregate="day", internal_tags=True)
    assert kept.rows == 12  # each call's own id keeps it apart


def test_report_by_tag_groups_only_the_callers_tags(ledger_url: str) -> None:
    report = spendguard.report_spend(ledger_url, by="tag")
    assert {group.name: group.calls for group in report.groups} == {
        "team=search": 4, "(untagged)": 2}
    with_internal = spendguard.report_spend(ledger_url, by="tag", internal_tags=True)
    assert len(with_internal.groups) == 6 + 1  # one per call id, and team=search
    asked = spendguard.report_spend(ledger_url, by="tag:spendguard.call_id")
    assert len(asked.groups) == 6


def test_cli_aggregates_and_groups_without_internal_tags(ledger_url: str) -> None:
    runner = CliRunner()
    exported = runner.invoke(main, ["export", "--format", "focus", "--aggregate", "day",
                                    "--ledger", ledger_url])
    assert exported.exit_code == 0, exported.output
    assert len(exported.stdout.splitlines()) == 1 + 8
    reported = runner.invoke(main, ["report", "--by", "tag", "--json", "--ledger", ledger_url])
    assert reported.exit_code == 0, reported.output
    names = [group["name"] for group in json.loads(reported.stdout)["groups"]]
    assert sorted(names) == ["(untagged)", "team=search"]
    flagged = runner.invoke(main, ["report", "--by", "tag", "--internal-tags", "--json",
                                   "--ledger", ledger_url])
    assert len(json.loads(flagged.stdout)["groups"]) == 7
