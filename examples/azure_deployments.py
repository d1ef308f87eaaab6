"""Azure OpenAI: requests name deployments, so tell spendguard which model each one runs.

The mapping prices every request BEFORE it is sent; a deployment you did not map is refused
with the fix spelled out. Runs offline against the emulator (its Azure path); with
AZURE_OPENAI_API_KEY and AZURE_OPENAI_ENDPOINT set it calls your real resource.

    .venv/bin/python examples/azure_deployments.py
"""

from __future__ import annotations

import os

import httpx2
from _client import ledger_url

import spendguard
from spendguard.testing import Emulator

real = bool(os.environ.get("AZURE_OPENAI_API_KEY") and os.environ.get("AZURE_OPENAI_ENDPOINT"))
options = {} if real else {
    "api_key": "emulated", "azure_endpoint": "http://azure.spendguard.invalid",
    "http_client": httpx2.Client(transport=Emulator(seed=1, reply_tokens=120).transport())}
budget = spendguard.Budget("0.50", ledger=ledger_url())
client = spendguard.AzureOpenAI(
    api_version="2024-10-21", budget=budget,
    deployments={
        "chat-prod": "gpt-4o",  # a Global Standard deployment: gpt-4o's own rates
        # Data Zone Standard costs 10 % more than Global (see docs/prices.md).
        "chat-eu": spendguard.AzureDeployment("gpt-4o-mini", deployment_type="data_zone"),
    },
    **options,
)
print("calls go to:", "your Azure resource" if real else "offline emulator (not a provider)")

for deployment in ("chat-prod", "chat-eu"):
    reply = client.chat.completions.create(
        model=deployment, max_tokens=150,
        messages=[{"role": "user", "content": "One sentence on why budgets matter."}])
    assert reply.usage is not None
    print(f"{deployment}: {reply.usage.prompt_tokens} in / {reply.usage.completion_tokens} out")

try:
    client.chat.completions.create(model="chat-unmapped", max_tokens=10,
                                   messages=[{"role": "user", "content": "hi"}])
except spendguard.UnknownModelError as refused:
    print("refused before sending:", str(refused).split(". ")[0])

for record in budget.ledger.records():
    print(f"  {record.model:<16} {record.status:<4} ${record.actual_usd}")
print(f"spent ${budget.spent}, ${budget.remaining} left")
