"""A runaway loop nobody wrapped, stopped by the default detection; and degrading before refusing.

The "framework" below retries a failing tool call forever, sending the same request each time
with a fresh timestamp in it — the kind of loop that runs all night. Nothing in it knows about
spendguard except the client it was handed. spendguard's default runaway rule (20 identical
requests within a minute, volatile values masked) cools that request down; the refusal is a
``BudgetExceeded``, so the framework's ordinary error handling ends the loop.

The second part gives a budget a degrade policy: past 50 % of the limit, calls for gpt-4o go
to gpt-4o-mini; the ledger names both models.
"""

from __future__ import annotations

import itertools
from datetime import UTC, datetime

import _client

import spendguard


def framework_agent(client: object) -> int:
    """A tool-retrying agent loop from code we do not own: it never gives up by itself."""
    for attempt in itertools.count(1):
        stamp = datetime.now(UTC).isoformat(timespec="milliseconds")
        try:
            client.chat.completions.create(  # type: ignore[attr-defined]
                model="gpt-4o-mini", max_tokens=50,
                messages=[{"role": "system", "content": "You call tools."},
                          {"role": "user", "content": f"[{stamp}] The search tool failed "
                                                      "with a timeout. Try it again."}])
        except spendguard.BudgetExceeded as refused:
            print(f"  attempt {attempt}: refused before sending")
            print(f"  {refused}")
            return attempt
    return 0  # pragma: no cover - the loop above only ends by a refusal


def main() -> None:
    print(f"calls go to: {_client.where()}")
    ledger = _client.ledger_url()

    print("1. A framework loop retrying one tool call, under the default runaway rules")
    budget = spendguard.Budget("5", scope="agent:nightly", ledger=ledger)
    stopped_at = framework_agent(_client.openai_client(budget=budget))
    print(f"  stopped at attempt {stopped_at}; spent ${budget.spent:.4f}")

    print("2. Degrade before refusing: gpt-4o until 50 % of $0.02, then gpt-4o-mini")
    degrading = spendguard.Budget(
        "0.02", scope="app:support", ledger=ledger, warn_at=None,
        degrade=spendguard.Degrade({"gpt-4o": ["gpt-4o-mini"]}, at=0.5))
    client = _client.openai_client(budget=degrading)
    previous = ""
    for ticket in range(1, 40):
        try:
            reply = client.chat.completions.create(
                model="gpt-4o", max_tokens=300,
                messages=[{"role": "user", "content": f"Draft a reply to ticket {ticket}."}])
        except spendguard.BudgetExceeded:
            print(f"  ticket {ticket}: refused, even gpt-4o-mini no longer fits")
            break
        if reply.model != previous:
            print(f"  ticket {ticket}: answered by {reply.model} "
                  f"(${degrading.spent:.4f} of $0.02 spent)")
            previous = reply.model
    records = [r for r in degrading.ledger.records(scope="app:support") if r.status == "ok"]
    by_model = {model: sum(1 for r in records if r.model == model)
                for model in sorted({r.model for r in records})}
    print(f"  calls by model: {by_model}; spent ${degrading.spent:.4f}")
    degraded = [r for r in records if "spendguard.requested_model" in r.tags]
    if degraded:
        print(f"  {len(degraded)} records say requested_model="
              f"{degraded[0].tags['spendguard.requested_model']}, used {degraded[0].model}")


if __name__ == "__main__":
    main()
