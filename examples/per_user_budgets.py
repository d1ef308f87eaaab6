"""Per-user budgets and budget shapes: every end user of an app gets their own limit — money
over a rolling hour and a call cap — made on first sight from the request's end-user field;
then a cap on how many users get a scope of their own, and a report that folds the rest.

    .venv/bin/python examples/per_user_budgets.py
"""

from __future__ import annotations

import _client

import spendguard
from spendguard import render_report_text


def main() -> None:
    print(f"calls go to: {_client.where()}")
    ledger = _client.ledger_url()
    app = spendguard.Budget("5", scope="app:helpdesk", period="monthly", ledger=ledger,
                            warn_at=None)
    # Each user: at most $0.004 and 4 calls in any rolling hour (the stricter refuses).
    users = app.per("user", limit_usd="0.004", period="1h", max_calls=4)
    client = _client.openai_client(budget=app, max_retries=0)

    # alice keeps asking; carol once asks for a long answer whose worst case is over her limit.
    traffic = [("alice", 1500)] * 6 + [("bob", 1500)] * 2 + [("carol", 16000), ("carol", 1500)]
    for user, max_tokens in traffic:
        try:
            client.chat.completions.create(
                model="gpt-4o-mini", max_tokens=max_tokens, safety_identifier=user,
                messages=[{"role": "user", "content": "Where is my parcel?"}])
        except spendguard.BudgetExceeded as refused:
            print(f"{user}: refused by {refused.scope} ({refused.refused_by})")
            continue
        mine = users.budget_for(user)
        print(f"{user}: ok, {mine.calls} calls and ${mine.spent:.5f} in the last hour")

    report = spendguard.report_spend(ledger, by="scope")
    print(render_report_text(report), end="")

    # A public demo page: at most 3 visitors a day get a scope of their own; later ones share
    # one overflow scope (with one visitor's allowance) instead of making a scope each.
    demo = spendguard.Budget("1", scope="app:demo", period="daily", ledger=ledger, warn_at=None)
    demo.per("user", limit_usd="0.01", max_children=3)
    client = _client.openai_client(budget=demo, max_retries=0)
    for visitor in ["v1", "v2", "v3", "v4", "v5", "v6", "v1"]:
        client.chat.completions.create(
            model="gpt-4o-mini", max_tokens=200, safety_identifier=visitor,
            messages=[{"role": "user", "content": "What can you do?"}])
    # The report keeps the 2 visitors that spent most and folds the others into one row.
    print(render_report_text(spendguard.report_spend(ledger, by="scope", scope="app:demo",
                                                     top=2)), end="")


if __name__ == "__main__":
    main()
