"""Self-hosted endpoints priced by the GPU-hour, end to end against the emulator (vLLM-style)."""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import UTC, date, datetime, timedelta
from decimal import Decimal
from pathlib import Path
from typing import Any

import httpx2
import pytest
from click.testing import CliRunner

import spendguard
from spendguard import SelfHosted, open_ledger
from spendguard.cli import main
from spendguard.sizing import compare_self_hosted
from spendguard.testing import Emulator

VLLM = "http://vllm.spendguard.invalid/v1"
MODEL = "meta-llama/Llama-3.1-8B-Instruct"
PRICE_ID = f"vllm/{MODEL}"
MESSAGES: Any = [{"role": "user", "content": "Summarise the quarterly report in one line."}]
SECTION = f"""schema = 1
[self_hosted.vllm]
base_url = "{VLLM}"
model = "{MODEL}"
gpu = "h100"
gpu_count = 2
usd_per_gpu_hour = 1.80
output_tok_s = 1000
input_tok_s = 10000
context_window = 131072
max_output_tokens = 8192
as_of = 2026-12-01
"""


def deployment() -> SelfHosted:
    return SelfHosted.measured("vllm", base_url=VLLM, model=MODEL, gpu="h100", gpu_count=2,
                               usd_per_gpu_hour="1.80", output_tok_s=1000, input_tok_s=10000,
                               context_window=131072, max_output_tokens=8192,
                               as_of=date(2026, 12, 1))


def client(emulator: Emulator, ledger_url: str, **kwargs: Any) -> spendguard.OpenAI:
    return spendguard.OpenAI(api_key="local", base_url=VLLM,
                             http_client=httpx2.Client(transport=emulator.transport()),
                             budget=spendguard.Budget("5", ledger=ledger_url), **kwargs)


def test_the_per_token_price_is_derived_from_the_deployment() -> None:
    served = deployment()
    # 2 GPUs × $1.80 = $3.60/h; 1,000 output tok/s = 3.6 M tok/h → $1.00 per million;
    # 10,000 input tok/s = 36 M tok/h → $0.10 per million.
    assert served.usd_per_hour == Decimal("3.60")
    assert served.output_usd_per_million == Decimal("1")
    assert served.input_usd_per_million == Decimal("0.1")
    entry = spendguard.PriceTable.bundled().with_overrides(served.price_source()).get(PRICE_ID)
    assert entry.output_usd_per_million == Decimal("1")
    assert entry.self_hosted is not None and entry.self_hosted.gpu_count == 2


def test_a_price_file_section_declares_the_same_deployment(tmp_path: Path) -> None:
    path = tmp_path / "vllm.toml"
    path.write_text(SECTION)
    table = spendguard.PriceTable.bundled().with_overrides(path)
    assert table.get(PRICE_ID).input_usd_per_million == Decimal("0.1")
    assert table.host_for(f"{VLLM}/chat/completions") is not None


def test_a_deployment_without_throughput_is_refused_with_the_fix(tmp_path: Path) -> None:
    path = tmp_path / "bad.toml"
    path.write_text(SECTION.replace("output_tok_s = 1000\n", ""))
    with pytest.raises(spendguard.ConfigError, match=r"self_hosted.vllm.output_tok_s"):
        spendguard.PriceTable.bundled().with_overrides(path)


def test_the_sizing_estimate_can_stand_in_for_a_measurement() -> None:
    served = SelfHosted.estimated("vllm", base_url=VLLM, model="llama-3.1-8b", gpu="h100",
                                  gpu_count=1, usd_per_gpu_hour="2.50", context_window=131072,
                                  max_output_tokens=8192, as_of=date(2026, 12, 1))
    assert served.throughput == "estimated"
    # The roofline is a ceiling, so its rates are floors; prefill is far faster than decode.
    assert served.input_tok_s > served.output_tok_s > 0
    assert served.output_usd_per_million > served.input_usd_per_million > 0


def test_calls_to_the_endpoint_are_guarded_and_record_both_costs(tmp_path: Path) -> None:
    ledger_url = f"sqlite:///{tmp_path / 'ledger.db'}"
    table = spendguard.PriceTable.bundled().with_overrides(deployment().price_source())
    emulator = Emulator(reply_tokens=500)
    guarded = client(emulator, ledger_url, prices=table)
    reply = guarded.chat.completions.create(model=MODEL, messages=MESSAGES, max_tokens=600)
    assert reply.usage is not None
    [record] = list(open_ledger(ledger_url).records())
    assert record.model == PRICE_ID
    assert record.tokens["output"] == 500
    prompt = reply.usage.prompt_tokens
    # allocated: prompt × $0.10 + 500 × $1.00, per million tokens
    assert record.actual_usd == (Decimal(prompt) * Decimal("0.1") + 500) / 1_000_000
    assert record.tags["deployment_usd_per_hour"] == "3.60"


def test_a_call_the_budget_cannot_cover_never_reaches_the_endpoint(tmp_path: Path) -> None:
    table = spendguard.PriceTable.bundled().with_overrides(deployment().price_source())
    emulator = Emulator(reply_tokens=5)
    guarded = spendguard.OpenAI(
        api_key="local", base_url=VLLM, prices=table,
        http_client=httpx2.Client(transport=emulator.transport()),
        budget=spendguard.Budget("0.000001", ledger=f"sqlite:///{tmp_path / 'l.db'}"))
    with pytest.raises(spendguard.BudgetExceeded):
        guarded.chat.completions.create(model=MODEL, messages=MESSAGES, max_tokens=8000)
    assert emulator.requests == []


def test_the_comparison_is_pure_arithmetic_over_records() -> None:
    table = spendguard.PriceTable.bundled().with_overrides(deployment().price_source())

    @dataclass(frozen=True)
    class Record:
        model: str = PRICE_ID
        time: datetime = datetime(2026, 11, 15, tzinfo=UTC)
        tokens: Mapping[str, int] = field(
            default_factory=lambda: {"input": 1_000_000, "output": 200_000})
        actual_usd: Decimal = Decimal("0.3")  # 1 M × $0.10 + 0.2 M × $1.00

    since = datetime(2026, 11, 1, tzinfo=UTC)
    result = compare_self_hosted([Record(), Record()], deployment="vllm", table=table,
                                 api_model="moonshot/kimi-k3", since=since,
                                 until=since + timedelta(days=30), hours_per_day=24)
    # rent: $3.60 × 720 h = $2,592; the API: 2 × (1 M × $3.00 + 0.2 M × $15.00) = $12
    assert result.rent_usd == Decimal("2592.00")
    assert result.api_usd == Decimal("12")
    assert result.allocated_usd == Decimal("0.6")
    assert result.utilisation == Decimal("0.6") / Decimal("2592.00")
    assert result.crossover_utilisation == Decimal("0.05")  # $0.60 / $12
    data = result.to_dict()
    assert data["self_hosted_usd_per_million_tokens"] == "1080.00"  # $2,592 / 2.4 M tokens
    assert data["api_usd_per_million_tokens"] == "5.00"


@pytest.mark.usefixtures("fresh_default_prices")
def test_breakeven_from_ledger_compares_the_recorded_traffic(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    prices = tmp_path / "vllm.toml"
    prices.write_text(SECTION)
    monkeypatch.setenv("SPENDGUARD_PRICES", str(prices))
    ledger_url = f"sqlite:///{tmp_path / 'ledger.db'}"
    guarded = client(Emulator(reply_tokens=500), ledger_url)
    prompts = [guarded.chat.completions.create(model=MODEL, messages=MESSAGES,
                                               max_tokens=600).usage
               for _ in range(2)]
    prompt = sum(usage.prompt_tokens for usage in prompts if usage is not None)
    result = CliRunner().invoke(main, [
        "breakeven", "--from-ledger", "--self-hosted", "vllm", "--api-model",
        "moonshot/kimi-k3", "--ledger", ledger_url, "--json"])
    text = CliRunner().invoke(main, [
        "breakeven", "--from-ledger", "--self-hosted", "vllm", "--api-model",
        "moonshot/kimi-k3", "--ledger", ledger_url])
    assert result.exit_code == 0, result.output
    data = json.loads(result.output)
    assert prompt == 2 * 20  # the emulator counts this prompt as 20 tokens
    assert data["calls"] == 2
    assert (data["input_tokens"], data["output_tokens"]) == (40, 1000)
    assert data["rent_usd"] == "2592.00"  # 2 × $1.80 × 24 h × 30 days
    # allocated: 40 × $0.10 + 1,000 × $1.00 per million; API: 40 × $3 + 1,000 × $15 per million
    assert Decimal(data["allocated_usd"]) == Decimal("0.001004")
    assert Decimal(data["api_usd"]) == Decimal("0.01512")
    assert data["crossover_utilisation"] == "0.0664"  # 0.001004 / 0.01512 = 0.06640…
    assert data["utilisation"] == "0.0000"
    assert text.exit_code == 0, text.output
    assert "Crossover at 6.64% utilisation; at 0.00% the API is cheaper." in text.output


def test_breakeven_names_an_unknown_deployment() -> None:
    result = CliRunner().invoke(main, ["breakeven", "--from-ledger", "--self-hosted", "nope",
                                       "--api-model", "gpt-4o", "--ledger", "memory://x"])
    assert result.exit_code == 2
    assert "[self_hosted.<name>]" in result.output
    assert "Traceback" not in result.output
