"""Id resolution by declared rules: dated snapshots, Bedrock profiles, Vertex versions, Azure
snapshot names; each rule resolving, and a near miss of each refused."""

from __future__ import annotations

import re
from datetime import date
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest
import respx

import spendguard
from spendguard import PriceTable, UnknownModelError, open_ledger
from tests.provider_bodies import anthropic_message, chat_completion

TABLE = PriceTable.bundled()
TODAY = date(2026, 12, 6)
MESSAGES: Any = [{"role": "user", "content": "Say hi"}]


@pytest.mark.parametrize(("requested", "entry", "rule"), [
    ("claude-opus-4-7-20260416", "claude-opus-4-7", "dated:anthropic"),
    ("claude-opus-4-6-20260205", "claude-opus-4-6", "dated:anthropic"),
    ("gpt-5.5-2026-04-23", "gpt-5.5", "dated:openai"),
    ("gpt-6-astra-2026-09-03", "gpt-6-astra", "dated:openai"),
])
def test_a_dated_snapshot_prices_as_its_base_entry(requested: str, entry: str,
                                                   rule: str) -> None:
    resolved = TABLE.resolve(requested, TODAY)
    assert resolved is not None and (resolved.model, resolved.rule) == (entry, rule)
    assert resolved.source.startswith("https://")
    assert TABLE.get(requested, TODAY) is TABLE.get(entry, TODAY)
    assert spendguard.cost(requested, spendguard.Usage(input_tokens=1000), at=TODAY).model == entry


@pytest.mark.parametrize("near_miss", [
    "gpt-5-2099-01-01",             # dated after the call: no such snapshot yet
    "claude-opus-4-7-20261301",     # not a day
    "claude-opus-4-7-2026041",      # not a date
    "gpt-5x-2025-08-07",            # no base entry
    "gpt-4o-2025-01-01",            # gpt-4o declares that its snapshots bill differently
    "deepseek/deepseek-chat-2025-09-29",  # a host's model: no dated-snapshot rule
])
def test_a_near_miss_of_a_dated_snapshot_is_refused(near_miss: str) -> None:
    assert TABLE.resolve(near_miss, TODAY) is None
    with pytest.raises(UnknownModelError):
        TABLE.get(near_miss, TODAY)


def test_an_entry_can_opt_out_of_the_dated_snapshot_rule() -> None:
    table = TABLE.with_overrides({"models": {"gpt-5.5": {
        "dated_snapshots": False, "source": "t", "as_of": "2026-12-06"}}})
    assert table.resolve("gpt-5.5-2026-04-23", TODAY) is None
    assert TABLE.get("gpt-4o-2024-05-13").input_usd_per_million == Decimal(5)  # its own entry


@pytest.mark.parametrize(("requested", "entry"), [
    ("bedrock/global.anthropic.claude-opus-4-6-v1", "bedrock/claude-opus-4-6"),
    ("bedrock/global.anthropic.claude-opus-4-7", "bedrock/claude-opus-4-7"),
    ("bedrock/us.anthropic.claude-opus-4-7", "bedrock-regional/claude-opus-4-7"),
    ("bedrock/eu.anthropic.claude-sonnet-4-6", "bedrock-regional/claude-sonnet-4-6"),
    ("bedrock/apac.anthropic.claude-haiku-5-5", "bedrock-regional/claude-haiku-5-5"),
    ("bedrock/anthropic.claude-sonnet-4-5-20250929-v2:0", "bedrock-regional/claude-sonnet-4-5"),
    ("bedrock/global.anthropic.claude-opus-5-5", "bedrock/claude-opus-5-5"),
])
def test_bedrock_profiles_price_global_at_the_api_rate_and_regional_ten_percent_more(
        requested: str, entry: str) -> None:
    resolved = TABLE.resolve(requested, TODAY)
    assert resolved is not None and resolved.model == entry
    base = TABLE.get(entry.split("/", 1)[1], TODAY)
    expected = base.input_usd_per_million * (Decimal("1.1") if "regional" in entry else 1)
    assert TABLE.get(requested, TODAY).input_usd_per_million == expected


@pytest.mark.parametrize("near_miss", [
    "bedrock/us.anthropic.claude-sonnet-4-5-20240101-v1:0",  # not Sonnet 4.5's snapshot date
    "bedrock/us.anthropic.claude-opus-4-1-v1",  # no regional price for it: not the global one
    "bedrock/xx.anthropic.claude-opus-4-7",     # not an inference-profile prefix
    "bedrock/global.anthropic.claude-opus-9",   # no such model
    "bedrock/global.meta.llama4-maverick-v1",   # not Claude
])
def test_a_near_miss_of_a_bedrock_id_is_refused(near_miss: str) -> None:
    with pytest.raises(UnknownModelError):
        TABLE.get(near_miss, TODAY)


@pytest.mark.parametrize(("requested", "entry"), [
    ("vertex/claude-opus-4-7@default", "vertex/claude-opus-4-7"),
    ("vertex-regional/claude-sonnet-5-5@default", "vertex-regional/claude-sonnet-5-5"),
    ("vertex/claude-haiku-4-5@20251001", "vertex/claude-haiku-4-5"),
])
def test_vertex_versions_price_as_their_model(requested: str, entry: str) -> None:
    resolved = TABLE.resolve(requested, TODAY)
    assert resolved is not None and (resolved.model, resolved.rule) == (entry, "vertex")


@pytest.mark.parametrize("near_miss", [
    "vertex/claude-haiku-4-5@20250101",    # not Haiku 4.5's snapshot
    "vertex/claude-opus-4-7@latest",       # not a version Vertex documents
    "vertex/claude-opus-9@default",
])
def test_a_near_miss_of_a_vertex_id_is_refused(near_miss: str) -> None:
    with pytest.raises(UnknownModelError):
        TABLE.get(near_miss, TODAY)


def test_an_azure_deployment_of_a_snapshot_name_prices_as_its_base_model(
        tmp_path: Path) -> None:
    client = spendguard.AzureOpenAI(
        api_key="k", api_version="2025-04-01-preview",
        azure_endpoint="https://acme.openai.azure.com",
        deployments={"astra": "gpt-6-astra-2026-09-03"},
        budget=spendguard.Budget("1", ledger=f"sqlite:///{tmp_path / 'l.db'}"))
    url = re.compile(r"https://acme\.openai\.azure\.com/openai/deployments/astra/.*")
    with respx.mock:
        respx.post(url__regex=url).respond(200, json=chat_completion(
            "gpt-6-astra-2026-09-03", prompt_tokens=100, completion_tokens=10))
        client.chat.completions.create(model="astra", messages=MESSAGES, max_tokens=10)
    [record] = open_ledger(f"sqlite:///{tmp_path / 'l.db'}").records()
    # gpt-6-astra: $10 in, $50 out per million (Global Standard)
    assert record.actual_usd == Decimal("0.0015")


def test_a_bedrock_call_with_a_profile_id_is_priced_through_the_sdk(tmp_path: Path) -> None:
    ledger_url = f"sqlite:///{tmp_path / 'ledger.db'}"
    client = spendguard.AnthropicBedrock(api_key="bedrock-test", aws_region="us-east-1",
                                         budget=spendguard.Budget("1", ledger=ledger_url))
    model_id = "us.anthropic.claude-opus-4-7"
    url = re.compile(re.escape(
        f"https://bedrock-runtime.us-east-1.amazonaws.com/model/{model_id}/invoke"))
    with respx.mock:
        respx.post(url__regex=url).respond(200, json=anthropic_message(
            "claude-opus-4-7", input_tokens=100, output_tokens=10))
        client.messages.create(model=model_id, messages=MESSAGES, max_tokens=10)
    [record] = open_ledger(ledger_url).records()
    # claude-opus-4-7: $5 in, $25 out; a US profile is 10 % dearer
    assert record.actual_usd == Decimal("0.000825")


def test_an_azure_deployment_of_an_unpriced_snapshot_name_is_refused() -> None:
    with pytest.raises(spendguard.SpendguardError, match="gpt-6-astra-mini-2026-09-03"):
        spendguard.AzureOpenAI(api_key="k", api_version="2025-04-01-preview",
                               azure_endpoint="https://acme.openai.azure.com",
                               deployments={"mini": "gpt-6-astra-mini-2026-09-03"})
