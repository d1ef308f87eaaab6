"""Nested limits: project → user → run, with tags for reports. A call is charged to every
scope around it, and refused if any of them lacks room.

    .venv/bin/python examples/nested_scopes.py
"""

from __future__ import annotations

import _client

import spendguard


def main() -> None:
    print(f"calls go to: {_client.where()}")
    ledger = _client.ledger_url()
    project = spendguard.Budget("1", scope="project:acme", ledger=ledger, warn_at=None)
    alice = project.child("user:alice", limit_usd="0.0045")
    bob = project.child("user:bob", limit_usd="0.05")
    client = _client.anthropic_client(budget=project)

    for user, runs in ((alice, 3), (bob, 2)):
        for n in range(runs):
            run = user.child(f"run:{n}", limit_usd="0.005")
            with run, spendguard.tags(feature="summarise"):
                try:
                    client.messages.create(
                        model="claude-haiku-4-5", max_tokens=600,
                        messages=[{"role": "user", "content": "Summarise our Q3 notes."}])
                except spendguard.BudgetExceeded as refused:
                    print(f"{run.scope}: refused by {refused.scope}")
                    continue
            print(f"{run.scope}: ${run.spent:.5f}")

    for budget in (project, alice, bob):
        print(f"{budget.scope:<22} spent ${budget.spent:.5f} of ${budget.limit_usd}")
    records = list(spendguard.open_ledger(ledger).records(tag="feature=summarise"))
    print(f"{len(records)} calls tagged feature=summarise in the ledger")


if __name__ == "__main__":
    main()
