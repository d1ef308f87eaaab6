"""A self-hosted vLLM endpoint next to the hosted API, both guarded, compared on one ledger.

The deployment (2 × H100 at $1.80/GPU-hour, measured throughput) becomes per-token rates; its
calls are budgeted like any API call. `spendguard breakeven --from-ledger --self-hosted` then
says what the traffic really cost at the utilisation achieved, what the same tokens cost on
the Kimi K3 API, and the utilisation at which the two cross. Runs offline (the emulator plays
both the vLLM server and the API).

    .venv/bin/python examples/self_hosted_vs_api.py
"""

from __future__ import annotations

import tempfile
from datetime import UTC, datetime
from pathlib import Path

import httpx2
from _client import ledger_url

import spendguard
from spendguard import open_ledger
from spendguard.sizing import self_hosted_from_ledger
from spendguard.testing import Emulator

PRICES = """schema = 1
[self_hosted.vllm]
base_url = "http://vllm.spendguard.invalid/v1"   # your server, e.g. http://10.0.0.5:8000/v1
model = "meta-llama/Llama-3.1-8B-Instruct"
gpu = "h100"
gpu_count = 2
usd_per_gpu_hour = 1.80
output_tok_s = 1000      # measured at full load (all sequences together)
input_tok_s = 10000      # prefill, measured the same way
context_window = 131072
max_output_tokens = 8192
as_of = 2026-12-01
"""
price_file = Path(tempfile.mkdtemp(prefix="spendguard-prices-")) / "vllm.toml"
price_file.write_text(PRICES)
table = spendguard.PriceTable.bundled().with_overrides(price_file)
entry = table.get("vllm/meta-llama/Llama-3.1-8B-Instruct")
print(f"self-hosted rates: ${entry.input_usd_per_million} in / "
      f"${entry.output_usd_per_million} out per million tokens "
      "(2 × $1.80/h ÷ tokens per hour)")

ledger = ledger_url()
transport = Emulator(seed=1, reply_tokens=200).transport()
budget = spendguard.Budget("1.00", ledger=ledger)
local = spendguard.OpenAI(api_key="none", base_url="http://vllm.spendguard.invalid/v1",
                          prices=table, budget=budget,
                          http_client=httpx2.Client(transport=transport))
hosted = spendguard.OpenAI(api_key="emulated", base_url="https://api.moonshot.ai/v1",
                           prices=table, budget=budget,
                           http_client=httpx2.Client(transport=transport))
question = [{"role": "user", "content": "Draft a two-line status update."}]
for _ in range(3):
    local.chat.completions.create(model="meta-llama/Llama-3.1-8B-Instruct",
                                  messages=question, max_tokens=300)
hosted.chat.completions.create(model="kimi-k3", messages=question, max_tokens=300)
for record in budget.ledger.records():
    hourly = record.tags.get("deployment_usd_per_hour")
    print(f"  {record.model:<40} ${record.actual_usd}"
          + (f"  (deployment ${hourly}/h)" if hourly else ""))

# The same comparison as `SPENDGUARD_PRICES=vllm.toml spendguard breakeven --from-ledger
#   --self-hosted vllm --api-model moonshot/kimi-k3 --ledger <url>` prints:
comparison = self_hosted_from_ledger(open_ledger(ledger), deployment="vllm", table=table,
                                     api_model="moonshot/kimi-k3", now=datetime.now(UTC))
print(comparison.render())
