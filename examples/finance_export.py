"""Spend logs for finance: FOCUS and CSV exports, a report page, and reconciling with a provider.

Two teams make calls under their budgets; then the ledger is exported (CSV, JSON Lines, FOCUS
1.2 per call and per day, validated), summarised (terminal table and an HTML page), and
reconciled against an OpenAI cost report. Offline by default (see ``_client.py``); the cost
report is a stand-in built here, shaped like the JSON of ``/v1/organization/costs``, with one
call the guard never saw.

    .venv/bin/python examples/finance_export.py     # writes ./finance-out/
"""

from __future__ import annotations

import json
from collections import defaultdict
from datetime import UTC, datetime, timedelta
from decimal import Decimal
from pathlib import Path
from typing import Literal

import _client

import spendguard
from spendguard import render_report_text, write_report_html

OUT = Path("finance-out")


def spend(ledger: str) -> None:
    """A morning of calls: search on gpt-4o-mini, support on Claude Haiku."""
    org = spendguard.Budget("5", scope="org:acme", ledger=ledger, period="monthly",
                            warn_at=None)
    search = org.child("team:search", limit_usd="1")
    support = org.child("team:support", limit_usd="0.5")
    openai_client = _client.openai_client(budget=search)
    anthropic_client = _client.anthropic_client(budget=support)
    for n in range(4):
        with spendguard.tags(feature="answers"):
            openai_client.chat.completions.create(
                model="gpt-4o-mini", max_tokens=300,
                messages=[{"role": "user", "content": f"Summarise search result {n}."}])
        with spendguard.tags(feature="triage"):
            anthropic_client.messages.create(
                model="claude-haiku-4-5", max_tokens=300,
                messages=[{"role": "user", "content": f"Triage support ticket {n}."}])


def stand_in_cost_report(ledger: str, path: Path) -> Path:
    """OpenAI's daily costs as the ledger saw them, plus $0.42 of gpt-4o-mini it never saw."""
    per_day: defaultdict[datetime, Decimal] = defaultdict(Decimal)
    for record in spendguard.open_ledger(ledger).records():
        if record.provider == "openai":
            day = record.time.astimezone(UTC).replace(hour=0, minute=0, second=0,
                                                      microsecond=0)
            per_day[day] += record.actual_usd
    first = min(per_day)
    per_day[first] += Decimal("0.42")
    path.write_text(json.dumps({"object": "page", "has_more": False, "next_page": None,
                                "data": [{
                                    "object": "bucket", "start_time": int(day.timestamp()),
                                    "end_time": int((day + timedelta(days=1)).timestamp()),
                                    "results": [{"object": "organization.costs.result",
                                                 "line_item": "gpt-4o-mini, input",
                                                 "amount": {"value": str(usd),
                                                            "currency": "usd"}}]}
                                    for day, usd in sorted(per_day.items())]}, indent=2))
    return path


def main() -> None:
    print(f"calls go to: {_client.where()}")
    ledger = _client.ledger_url()
    spend(ledger)
    OUT.mkdir(exist_ok=True)

    # 1. Exports: every format from the same records, each with the ledger's total.
    jobs: list[tuple[str, Literal["csv", "jsonl", "focus"], Literal["call", "day"]]] = [
        ("calls.csv", "csv", "call"), ("calls.jsonl", "jsonl", "call"),
        ("focus.csv", "focus", "call"), ("focus-daily.csv", "focus", "day")]
    for name, fmt, aggregate in jobs:
        done = spendguard.export_spend(OUT / name, format=fmt, ledger=ledger,
                                       aggregate=aggregate, accounts={"openai": "org-acme"})
        print(f"{done.path}: {done.rows} rows, ${done.total_usd:.6f} in all")
    problems = spendguard.validate_focus(OUT / "focus.csv")
    print(f"focus.csv: {len(problems)} FOCUS problems")

    # 2. The report, as a table and as a page to send to finance.
    report = spendguard.report_spend(ledger, by="scope")
    print()
    print(render_report_text(report))
    print(f"report page: {write_report_html(report, OUT / 'spend.html')}")
    for track in report.on_track:  # "are we on track this month?", per budget
        runs_out = f"runs out {track.runs_out_at:%Y-%m-%d}" if track.runs_out_at else "lasts"
        print(f"{track.scope} {track.period_key}: {spendguard.format_usd(track.spent_usd)} so "
              f"far, {spendguard.format_usd(track.forecast_usd)} forecast, {track.status}, "
              f"{runs_out}; {track.refused_calls} refused")

    # 3. Reconcile with the provider's cost report, then accept the difference.
    costs = stand_in_cost_report(ledger, OUT / "openai-costs.json")
    found = spendguard.reconcile_spend([costs], provider="openai", ledger=ledger)
    for row in found.to_accept:
        print(f"{row.day} {row.model}: ledger ${row.ledger_usd:.6f}, OpenAI "
              f"${row.provider_usd:.6f}, difference ${row.usd_difference:+.6f}")
    accepted = spendguard.reconcile_spend([costs], provider="openai", ledger=ledger,
                                          accept=True)
    print(f"accepted {len(accepted.accepted)} adjustment(s); left to accept now: "
          f"{len(spendguard.reconcile_spend([costs], provider='openai', ledger=ledger).to_accept)}")


if __name__ == "__main__":
    main()
