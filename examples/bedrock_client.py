"""Claude on Amazon Bedrock, budgeted: the model id in the URL path is priced, and the
streamed answer (AWS event-stream frames, not SSE) is metered as it flows.

Runs offline against the emulator's Bedrock paths; with AWS_BEARER_TOKEN_BEDROCK (or AWS
credentials) and AWS_REGION set it calls Bedrock for real (install spendguard-llm[bedrock]).

    .venv/bin/python examples/bedrock_client.py
"""

from __future__ import annotations

import os

import httpx2
from _client import ledger_url

import spendguard
from spendguard.testing import Emulator

real = bool(os.environ.get("AWS_REGION"))
options = {} if real else {
    "api_key": "emulated", "aws_region": "us-east-1",
    "base_url": "http://bedrock.spendguard.invalid",
    "http_client": httpx2.Client(transport=Emulator(seed=1, reply_tokens=120).transport())}
budget = spendguard.Budget("0.25", ledger=ledger_url())
client = spendguard.AnthropicBedrock(budget=budget, **options)
print("calls go to:", "Amazon Bedrock" if real else "offline emulator (not a provider)")

# A US cross-Region profile is a regional endpoint: 10 % above the global profile.
for model in ("us.anthropic.claude-sonnet-4-5-20250929-v1:0",
              "global.anthropic.claude-sonnet-4-5-20250929-v1:0"):
    message = client.messages.create(model=model, max_tokens=200, messages=[
        {"role": "user", "content": "Name three things a spend ledger should record."}])
    print(f"{model}: {message.usage.input_tokens} in / {message.usage.output_tokens} out")

with client.messages.stream(model="us.anthropic.claude-sonnet-4-5-20250929-v1:0",
                            max_tokens=200,
                            messages=[{"role": "user", "content": "And one more."}]) as stream:
    text = "".join(stream.text_stream)
print(f"streamed {len(text)} characters")

for record in budget.ledger.records():
    print(f"  {record.model:<56} ${record.actual_usd}")
print(f"spent ${budget.spent}, ${budget.remaining} left")
