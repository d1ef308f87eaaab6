"""Prices that stay true: dated rates, ids resolved by declared rules, the opt-in catalog.

- A rate with a date: OpenAI's Ultrafast tier is 3x Standard through 2027-02-28 and 6x from
  2027-03-01; each call is priced at the rates of its own UTC day (here on an injected
  budget clock), and the ledger records which rate applied.
- Ids the way providers and platforms spell them (a dated snapshot, a Bedrock profile) are
  priced by declared rules; a near miss is refused.
- A model the table lacks is refused, unless the genai-prices fallback catalog is turned on
  (the `prices` extra); then the call is priced from it, recorded as such, and only when the
  request caps its output.

Runs offline against the emulator.

    .venv/bin/python examples/prices_over_time.py
"""

from __future__ import annotations

from datetime import UTC, datetime

from _client import ledger_url, openai_client

import spendguard

usage = spendguard.Usage(input_tokens=100_000, output_tokens=20_000, service_tier="ultrafast")
for day in (datetime(2027, 2, 28, tzinfo=UTC), datetime(2027, 3, 1, tzinfo=UTC)):
    bill = spendguard.cost("gpt-6.2-sol", usage, at=day)
    print(f"gpt-6.2-sol ultrafast on {day.date()}: ${bill.total} (prices {bill.table_version})")

for name in ("claude-opus-4-7-20260416", "bedrock/us.anthropic.claude-opus-4-7",
             "gpt-5-2099-01-01"):
    try:
        entry = spendguard.price(name)
        print(f"{name} -> {entry.model} (${entry.input_usd_per_million} per M input)")
    except spendguard.UnknownModelError:
        print(f"{name} -> refused: no price, and spendguard never guesses one")

# A guarded call on an injected clock: the ledger says which day's rates priced it.
march = datetime(2027, 3, 1, 12, tzinfo=UTC)
budget = spendguard.Budget("1", ledger=ledger_url(), clock=lambda: march)
client = openai_client(budget=budget)
client.chat.completions.create(model="o3", max_tokens=50,
                               messages=[{"role": "user", "content": "One word for thrift."}])

try:
    catalog = spendguard.GenaiPricesCatalog()  # the installed genai-prices data
except spendguard.ConfigError as missing:
    print("fallback catalog unavailable:", missing)
else:
    with_catalog = openai_client(budget=budget, prices=spendguard.PriceTable.bundled()
                                 .with_catalog(catalog))
    with_catalog.chat.completions.create(model="gpt-6-cyber", max_tokens=50,
                                         messages=[{"role": "user", "content": "Hi"}])
    try:
        with_catalog.chat.completions.create(model="gpt-6-cyber",
                                             messages=[{"role": "user", "content": "Hi"}])
    except spendguard.ConfigError as refused:
        print("refused without an output cap:", str(refused).split(";")[0])

for record in budget.ledger.records():
    print(f"  {record.model:<12} ${record.actual_usd:<10} priced by {record.table_version}")
print("see what the table lacked: spendguard prices status --ledger", budget.ledger.url)
