"""The living catalog: genai-prices as an opted-in fallback for models the table lacks, read
from the snapshot stored under tests/ (never the installed package's data)."""

from __future__ import annotations

import json
from datetime import date
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest
import respx

import spendguard
from spendguard import ConfigError, GenaiPricesCatalog, PriceTable, UnknownModelError
from spendguard._costing.prices import default_table
from tests.paths import GENAI_PRICES_SNAPSHOT
from tests.provider_bodies import chat_completion

OPENAI_CHAT = "https://api.openai.com/v1/chat/completions"
MESSAGES: Any = [{"role": "user", "content": "Say hi"}]
TODAY = date(2026, 12, 6)


@pytest.fixture(scope="module")
def catalog() -> GenaiPricesCatalog:
    """Read once for the module (parsing genai-prices' data takes a moment); not refreshed."""
    return GenaiPricesCatalog.from_file(GENAI_PRICES_SNAPSHOT)


def _client(tmp_path: Path, table: PriceTable) -> tuple[spendguard.OpenAI, str]:
    ledger_url = f"sqlite:///{tmp_path / 'ledger.db'}"
    return spendguard.OpenAI(api_key="sk-test", prices=table,
                             budget=spendguard.Budget("10", ledger=ledger_url)), ledger_url


def test_the_catalog_is_off_by_default() -> None:
    assert PriceTable.bundled().catalog is None
    with pytest.raises(UnknownModelError, match="gpt-6-cyber"):
        PriceTable.bundled().get("gpt-6-cyber", TODAY)


def test_the_catalog_prices_a_model_the_table_lacks_and_says_so(
        catalog: GenaiPricesCatalog) -> None:
    table = PriceTable.bundled().with_catalog(catalog)
    entry = table.get("gpt-6-cyber", TODAY)
    assert entry.price_source == "catalog"
    assert entry.table_version == "genai-prices 0.2.5@2026-12-06"
    assert (entry.input_usd_per_million, entry.output_usd_per_million) == (Decimal(20),
                                                                           Decimal(100))
    assert entry.max_output_tokens is None and "not reviewed" in entry.source
    # tiered genai-prices rates become a whole-request tier
    rosalind = table.get("gpt-6-rosalind", TODAY)
    assert [(t.above_input_tokens, t.input_multiplier, t.output_multiplier)
            for t in rosalind.tiers] == [(272000, Decimal(2), Decimal("1.5"))]
    # the bundled table always wins
    assert table.get("gpt-6.2-sol", TODAY).price_source == "table"


def test_a_call_priced_by_the_catalog_is_recorded_with_its_source_and_version(
        tmp_path: Path, catalog: GenaiPricesCatalog) -> None:
    client, ledger_url = _client(tmp_path, PriceTable.bundled().with_catalog(catalog))
    with respx.mock:
        respx.post(OPENAI_CHAT).respond(200, json=chat_completion(
            "gpt-6-cyber", prompt_tokens=100, completion_tokens=10))
        client.chat.completions.create(model="gpt-6-cyber", messages=MESSAGES, max_tokens=50)
    [record] = spendguard.open_ledger(ledger_url).records()
    assert record.table_version == "genai-prices 0.2.5@2026-12-06"
    assert record.actual_usd == Decimal("0.003")  # 100 x $20 + 10 x $100, per million


def test_without_an_output_cap_a_catalog_priced_call_is_refused_with_the_reason(
        tmp_path: Path, catalog: GenaiPricesCatalog) -> None:
    client, ledger_url = _client(tmp_path, PriceTable.bundled().with_catalog(catalog))
    with respx.mock:
        route = respx.post(OPENAI_CHAT).respond(200, json=chat_completion("gpt-6-cyber"))
        with pytest.raises(ConfigError, match=r"publishes no maximum output.*set max_tokens"):
            client.chat.completions.create(model="gpt-6-cyber", messages=MESSAGES)
        assert not route.called
    assert list(spendguard.open_ledger(ledger_url).records()) == []


def test_a_model_neither_prices_is_refused_naming_both(catalog: GenaiPricesCatalog) -> None:
    table = PriceTable.bundled().with_catalog(catalog)
    with pytest.raises(UnknownModelError, match=r"nor in the fallback catalog \(genai-prices"):
        table.get("gpt-9-imaginary", TODAY)


def test_one_setting_turns_it_on_for_the_default_table(monkeypatch: pytest.MonkeyPatch,
                                                       fresh_default_prices: None) -> None:
    monkeypatch.setenv("SPENDGUARD_PRICE_CATALOG", "genai-prices")
    assert default_table().catalog is not None
    assert default_table().catalog.version.startswith("genai-prices ")  # type: ignore[union-attr]


def test_an_unknown_catalog_setting_is_refused_with_the_fix(monkeypatch: pytest.MonkeyPatch,
                                                            fresh_default_prices: None) -> None:
    monkeypatch.setenv("SPENDGUARD_PRICE_CATALOG", "litellm")
    with pytest.raises(ConfigError, match="SPENDGUARD_PRICE_CATALOG=genai-prices or unset it"):
        default_table()


def test_a_refresh_is_bounded_and_a_failed_one_keeps_the_last_good_snapshot() -> None:
    catalog = GenaiPricesCatalog.from_file(GENAI_PRICES_SNAPSHOT)
    asked: list[tuple[str, float]] = []

    def broken(url: str, timeout_s: float) -> bytes:
        asked.append((url, timeout_s))
        raise TimeoutError("no answer within the timeout")

    table = PriceTable.bundled().with_catalog(catalog)
    assert catalog.refresh(timeout_s=2.5, fetch=broken) is False
    assert asked[0][1] == 2.5 and "TimeoutError" in (catalog.last_error or "")
    assert table.get("gpt-6-cyber", TODAY).input_usd_per_million == 20  # still priced

    published = json.loads(GENAI_PRICES_SNAPSHOT.read_text())["providers"]
    for provider in published:
        for model in provider["models"]:
            if model["id"] == "gpt-6-cyber":
                model["prices"]["input_mtok"] = "22"

    def fresh(url: str, timeout_s: float) -> bytes:
        return json.dumps(published).encode()

    assert catalog.refresh(fetch=fresh) is True and catalog.last_error is None
    assert catalog.version.startswith("genai-prices 0.2.5@2026-12-06+")
    refreshed = table.get("gpt-6-cyber", TODAY)
    assert refreshed.input_usd_per_million == 22
    assert refreshed.table_version == catalog.version
