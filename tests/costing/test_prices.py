"""Price look-up: exact ids and declared aliases only, overrides, the table version."""

from __future__ import annotations

import json
import re
from decimal import Decimal
from pathlib import Path
from typing import get_args

import anthropic.types
import openai.types
import pytest

from spendguard import (
    PriceFileError,
    PriceTable,
    UnknownModelError,
    load_price_file,
    price,
    register_prices,
)
from spendguard._costing.prices import default_table

CUSTOM = """
[models."my-finetune"]
provider = "openai"
usd_per_million = { input = 3, cache_read = 0.3, output = 12 }
context_window = 128000
max_output_tokens = 16384
source = "our contract with OpenAI, 2026"
as_of = 2026-11-01
"""


pytestmark = pytest.mark.usefixtures("fresh_default_prices")


def test_bundled_table_prices_every_provider_with_source_and_date() -> None:
    table = PriceTable.bundled()
    assert {"gpt-4o", "gpt-5", "gpt-6.2-sol", "text-embedding-3-small"} <= set(
        table.models("openai"))
    assert {"claude-sonnet-4-5", "claude-opus-5-5", "claude-haiku-5-5"} <= set(
        table.models("anthropic"))
    for model in table.models():
        entry = table.get(model)
        assert entry.source and entry.as_of.year >= 2026
        # a rate with dated changes names the day it took effect after the table version
        suffix = f"@{entry.effective_from}" if entry.effective_from else ""
        assert entry.table_version == table.version + suffix


def test_table_version_is_the_latest_date_and_a_content_hash_and_is_stable() -> None:
    first, second = PriceTable.bundled(), PriceTable.bundled()
    assert re.fullmatch(r"\d{4}-\d{2}-\d{2}\.[0-9a-f]{8}", first.version)
    assert first.version == second.version
    latest = max(first.get(m).as_of for m in first.models())
    assert first.version.startswith(latest.isoformat())


def test_dated_snapshots_resolve_through_declared_aliases() -> None:
    assert price("gpt-4o-2024-08-06").model == "gpt-4o"
    assert price("claude-sonnet-4-5-20250929").model == "claude-sonnet-4-5"
    assert price("claude-haiku-4-5-20251001").input_usd_per_million == Decimal("1")


def test_a_separately_priced_snapshot_is_its_own_entry() -> None:
    assert price("gpt-4o-2024-05-13").input_usd_per_million == Decimal("5")
    assert price("gpt-4o").input_usd_per_million == Decimal("2.50")


def test_unknown_model_is_an_error_with_suggestions_and_how_to_add_it() -> None:
    with pytest.raises(UnknownModelError) as caught:
        price("gpt-4-o")
    error = caught.value
    assert isinstance(error, KeyError)
    assert error.name == "gpt-4-o"
    assert "gpt-4o" in error.suggestions
    for hint in ("SPENDGUARD_PRICES", "register_prices", 'usd_per_million', "as_of"):
        assert hint in str(error)


def test_lookup_never_guesses_by_prefix() -> None:
    for name in ("gpt-5-2099-01-01", "claude-sonnet-4-5-20990101", "gpt-6.2-sol-mini", "GPT-5"):
        with pytest.raises(UnknownModelError):
            price(name)


def test_openai_dated_snapshots_of_priced_models_are_declared() -> None:
    # OpenAI answers with dated names (e.g. "gpt-4o-2024-08-06"): each one whose base model we
    # price must be priced too, never left to guesswork.
    table = default_table()
    names = [*get_args(openai.types.ChatModel), *get_args(openai.types.shared.ResponsesModel)]
    for name in names:
        if not isinstance(name, str):
            continue
        match = re.fullmatch(r"(.+)-\d{4}-\d{2}-\d{2}", name)
        if match and match.group(1) in table:
            assert name in table, name


def test_every_current_anthropic_model_is_priced() -> None:
    retired = {"claude-mythos-preview"}
    for name in get_args(anthropic.types.Model):
        if isinstance(name, str) and name not in retired:
            assert name in default_table(), name


def test_price_data_keeps_the_published_ratios() -> None:
    table = default_table()
    for model in table.models("anthropic"):
        entry = table.get(model)
        writes = entry.cache_write_usd_per_million
        if model != "claude-3-haiku-20240307":  # Anthropic prints $0.30, not $0.3125
            assert writes["5m"] == entry.input_usd_per_million * Decimal("1.25"), model
        assert writes["1h"] == entry.input_usd_per_million * 2, model
        assert entry.modifier("batch").multiplier == Decimal("0.5")
    hosted = {host.price_id("") for host in table.hosts.values()}
    for model in table.models("openai"):
        if model.startswith(tuple(hosted)):
            continue  # other hosts' prices keep their own ratios (and have no batch API)
        entry = table.get(model)
        if "30m" in entry.cache_write_usd_per_million:
            assert entry.cache_write_usd_per_million["30m"] == (
                entry.input_usd_per_million * Decimal("1.25")), model
        assert entry.modifier("batch").multiplier == Decimal("0.5")


def test_environment_file_is_read_when_the_default_table_is_first_built(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    custom = tmp_path / "prices.toml"
    custom.write_text(CUSTOM)
    bundled_version = PriceTable.bundled().version
    monkeypatch.setenv("SPENDGUARD_PRICES", str(custom))
    entry = price("my-finetune")
    assert entry.output_usd_per_million == Decimal("12")
    assert entry.table_version != bundled_version
    assert price("gpt-5").table_version == entry.table_version


def test_environment_naming_a_missing_file_is_an_error(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SPENDGUARD_PRICES", "/nowhere/prices.toml")
    PriceTable.bundled()  # the environment plays no part until the default table is built
    with pytest.raises(PriceFileError, match="SPENDGUARD_PRICES"):
        default_table()


def test_register_prices_adds_models_to_the_default_table() -> None:
    before = default_table().version
    table = register_prices({"models": {"house-model": {
        "provider": "anthropic",
        "usd_per_million": {"input": "1", "cache_read": "0.1", "cache_write_5m": "1.25",
                            "cache_write_1h": "2", "output": "5"},
        "context_window": 200000, "max_output_tokens": 8192,
        "source": "internal gateway rate card", "as_of": "2026-11-01"}}})
    assert table is default_table()
    assert price("house-model").provider == "anthropic"
    assert table.version != before


def test_override_replaces_only_the_fields_it_names_and_keeps_aliases() -> None:
    table = PriceTable.bundled().with_overrides({"models": {"gpt-4o": {
        "usd_per_million": {"input": "2.00"},
        "source": "negotiated discount", "as_of": "2026-11-15"}}})
    entry = table.get("gpt-4o-2024-08-06")
    assert entry.input_usd_per_million == Decimal("2.00")
    assert entry.output_usd_per_million == Decimal("10")
    assert entry.source == "negotiated discount"
    assert PriceTable.bundled().get("gpt-4o").input_usd_per_million == Decimal("2.50")


def test_override_must_say_where_its_price_comes_from() -> None:
    with pytest.raises(PriceFileError, match="source") as caught:
        PriceTable.bundled().with_overrides(
            {"models": {"gpt-4o": {"usd_per_million": {"input": "2"}, "as_of": "2026-11-15"}}})
    assert caught.value.entry == "gpt-4o"
    assert caught.value.field == "source"


def test_a_later_entry_takes_over_a_name_that_was_an_alias() -> None:
    table = PriceTable.bundled().with_overrides({"models": {"gpt-4o-2024-11-20": {
        "provider": "openai", "usd_per_million": {"input": "3", "output": "12"},
        "context_window": 128000, "max_output_tokens": 16384,
        "source": "test", "as_of": "2026-11-15"}}})
    assert table.get("gpt-4o-2024-11-20").model == "gpt-4o-2024-11-20"
    assert table.get("gpt-4o-2024-08-06").model == "gpt-4o"


def test_load_price_file_reads_only_that_file(tmp_path: Path) -> None:
    path = tmp_path / "prices.toml"
    path.write_text(CUSTOM)
    table = load_price_file(path)
    assert table.models() == ["my-finetune"]
    with pytest.raises(UnknownModelError):
        table.get("gpt-5")


def test_json_price_files_are_read_with_exact_decimals(tmp_path: Path) -> None:
    path = tmp_path / "prices.json"
    path.write_text(json.dumps({"models": {"j": {
        "provider": "openai", "usd_per_million": {"input": 0.1, "output": 0.3},
        "context_window": 1000, "max_output_tokens": 100, "source": "s", "as_of": "2026-01-01"}}}))
    assert load_price_file(path).get("j").input_usd_per_million == Decimal("0.1")


def test_float_prices_in_code_are_refused() -> None:
    with pytest.raises(PriceFileError, match="float"):
        PriceTable.bundled().with_overrides({"models": {"gpt-4o": {
            "usd_per_million": {"input": 2.1}, "source": "s", "as_of": "2026-11-15"}}})
