"""``spendguard._costing.prices.check``: batch, service-tier, long-context and cache-write rates
compared."""

from __future__ import annotations

import json
import sys
from datetime import UTC, datetime
from decimal import Decimal
from pathlib import Path

import pytest
from click.testing import CliRunner

from spendguard import ConfigError, PriceTable, check_prices
from spendguard._costing.prices.check import (
    Disagreement,
    compare_genai_prices,
    compare_litellm,
    our_rate,
)
from spendguard.cli import main
from tests.paths import GENAI_PRICES_SNAPSHOT, LITELLM_SNAPSHOT

ON = datetime(2026, 11, 30, tzinfo=UTC)
TABLE = PriceTable.bundled()

LITELLM: dict[str, dict[str, float | str]] = {
    "gpt-5": {"input_cost_per_token": 1.25e-06, "output_cost_per_token": 1e-05,
              "input_cost_per_token_batches": 6.25e-07, "output_cost_per_token_flex": 5e-06,
              "input_cost_per_token_priority": 2.6e-06},
    "claude-sonnet-4-5": {"input_cost_per_token": 3e-06, "output_cost_per_token": 1.5e-05,
                          "input_cost_per_token_above_200k_tokens": 6e-06,
                          "output_cost_per_token_above_200k_tokens": 2.4e-05,
                          "cache_creation_input_token_cost": 3.75e-06,
                          "cache_creation_input_token_cost_above_1hr": 6e-06},
    "gpt-6.2-sol": {"cache_creation_input_token_cost_above_12hr": 5.5e-06},
    # Embeddings bill no output: LiteLLM writes 0 where spendguard has no rate.
    "text-embedding-3-small": {"input_cost_per_token": 2e-08, "output_cost_per_token": 0,
                               "mode": "embedding"},
}


def _file(tmp_path: Path, data: object = LITELLM) -> Path:
    path = tmp_path / "model_prices_and_context_window.json"
    path.write_text(json.dumps(data), encoding="utf-8")
    return path


def test_our_rate_applies_tiers_and_modifiers_as_costing_does() -> None:
    sonnet, gpt5 = TABLE.get("claude-sonnet-4-5"), TABLE.get("gpt-5")
    assert our_rate(sonnet, "output", above_tokens=200_000) == Decimal("22.5")
    assert our_rate(gpt5, "input", modifier="batch") == Decimal("0.625")
    assert our_rate(gpt5, "output", modifier="flex") == Decimal("5")
    assert our_rate(TABLE.get("text-embedding-3-small"), "output") is None


def test_litellm_batch_tier_long_context_and_cache_write_rates_are_compared(
        tmp_path: Path) -> None:
    found, _ = compare_litellm(TABLE, _file(tmp_path))
    assert {(d.model, d.kind, d.ours, d.theirs) for d in found} == {
        ("gpt-5", "input (priority)", Decimal("2.50"), Decimal("2.6")),
        ("claude-sonnet-4-5", "output >200000", Decimal("22.5"), Decimal("24")),
        ("gpt-6.2-sol", "cache_write_12h", Decimal("5"), Decimal("5.5")),
    }


def test_an_embedding_output_of_zero_is_no_disagreement(tmp_path: Path) -> None:
    found, missing = compare_litellm(TABLE, _file(tmp_path), provider="openai")
    assert "text-embedding-3-small" not in {d.model for d in found}
    assert "text-embedding-3-small" not in missing


def test_a_litellm_file_alone_is_checked_without_genai_prices(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "genai_prices", None)  # as if not installed
    agreeing = {"gpt-5": {**LITELLM["gpt-5"], "input_cost_per_token_priority": 2.5e-06}}
    result = check_prices(TABLE, when=ON, litellm=_file(tmp_path, agreeing))
    assert result.ok and "genai-prices" in result.skipped
    assert "spendguard-llm[prices]" in result.skipped["genai-prices"]
    cli = CliRunner().invoke(main, ["prices", "check", "--litellm",
                                    str(_file(tmp_path, agreeing)), "--json"])
    assert cli.exit_code == 0, cli.output
    assert json.loads(cli.output)["ok"] is True


def test_without_genai_prices_or_a_file_the_error_names_the_extra(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "genai_prices", None)
    with pytest.raises(ConfigError, match=r"spendguard-llm\[prices\]"):
        check_prices(TABLE, when=ON)
    cli = CliRunner().invoke(main, ["prices", "check"])
    assert cli.exit_code == 2 and "spendguard-llm[prices]" in cli.output
    assert "Traceback" not in cli.output


def test_check_exits_1_on_a_disagreement_for_ci(tmp_path: Path) -> None:
    cli = CliRunner().invoke(main, ["prices", "check", "--date", "2026-11-30", "--json",
                                    "--litellm", str(_file(tmp_path)),
                                    "--genai-prices", str(GENAI_PRICES_SNAPSHOT)])
    assert cli.exit_code == 1
    data = json.loads(cli.output)
    assert data["ok"] is False
    assert len([d for d in data["disagreements"] if d["other"].startswith("litellm")]) == 3


# ---------------------------------------------------------------- against the stored snapshots

SNAPSHOT_DAY = datetime(2026, 12, 6, tzinfo=UTC)


def _kinds(found: list[Disagreement],
           model: str) -> dict[str, tuple[Decimal | None, Decimal | None]]:
    return {d.kind: (d.ours, d.theirs) for d in found if d.model == model}


def test_every_rate_kind_litellm_carries_is_compared_against_its_snapshot() -> None:
    table = TABLE.with_overrides({"models": {"gpt-5": {
        "modifiers": {"priority": "2.1"}, "source": "t", "as_of": "2026-12-06"}}})
    found, missing = compare_litellm(table, LITELLM_SNAPSHOT, when=SNAPSHOT_DAY)
    astra = _kinds(found, "gpt-6-astra")
    # LiteLLM already lists the 6x Ultrafast rate; spendguard bills 3x until 2027-03-01
    assert astra["input (ultrafast)"] == (Decimal(30), Decimal(60))
    assert astra["input >272000 (ultrafast)"] == (Decimal(60), Decimal(120))  # tier + tier
    assert astra["cache_write_12h (ultrafast)"] == (Decimal(75), Decimal(150))  # write by TTL
    assert _kinds(found, "gpt-5")["input (priority)"] == (Decimal("2.625"), Decimal("2.5"))
    assert _kinds(found, "gpt-5.4")["cache_read (batch)"] == (Decimal("0.125"), Decimal("0.13"))
    assert _kinds(found, "gpt-5.4")["cache_read (flex)"] == (Decimal("0.125"), Decimal("0.13"))
    assert _kinds(found, "moonshot/kimi-k3")["cache_write_1h"] == (Decimal(3), Decimal(6))
    assert _kinds(found, "bedrock/claude-sonnet-4-0")["input >200000"] == (Decimal(3), Decimal(6))
    # platform ids are matched through the id rules: LiteLLM's "us.anthropic.claude-opus-4-7"
    assert any(d.model == "bedrock-regional/claude-opus-4-7" for d in found)
    assert "gpt-5" not in missing and "deepseek/deepseek-chat" not in missing


def test_every_rate_kind_genai_prices_carries_is_compared_against_its_snapshot() -> None:
    table = TABLE.with_overrides({"models": {
        "gpt-5.6-sol": {"changes": [{"until": "2026-08-20", "usd_per_million": {"input": "5.5"},
                                     "source": "t"}], "source": "t", "as_of": "2026-12-06"},
        "gpt-5.5": {"modifiers": {"priority": "2"}, "source": "t", "as_of": "2026-12-06"},
    }})
    found, _ = compare_genai_prices(table, SNAPSHOT_DAY, snapshot_file=GENAI_PRICES_SNAPSHOT)
    sol = _kinds(found, "gpt-5.6-sol")
    # a date-conditional price, compared on the day before genai-prices' 2026-08-21 change
    assert sol["input on 2026-08-20"] == (Decimal("5.5"), Decimal(5))
    assert "input" not in sol  # today's rates agree
    assert _kinds(found, "gpt-5.5")["input (priority)"] == (Decimal(10), Decimal("12.5"))
    assert _kinds(found, "gpt-5.4")["cache_read (batch)"] == (Decimal("0.125"), Decimal("0.13"))


def test_check_lists_models_the_sources_price_and_spendguard_lacks_newest_first() -> None:
    result = check_prices(TABLE, when=SNAPSHOT_DAY, litellm=LITELLM_SNAPSHOT,
                          genai_prices=GENAI_PRICES_SNAPSHOT)
    lacking = result.lacking["litellm"]
    assert "gpt-5.6" in lacking and "gpt-6-cyber" in lacking
    assert lacking.index("gpt-6-cyber") < lacking.index("gpt-5.6")  # newest first
    assert "gpt-6.2-sol" not in lacking and "claude-opus-4-7-20260416" not in lacking
    assert "gpt-6-rosalind" in result.lacking["genai-prices"]
    cli = CliRunner().invoke(main, ["prices", "check", "--date", "2026-12-06",
                                    "--litellm", str(LITELLM_SNAPSHOT),
                                    "--genai-prices", str(GENAI_PRICES_SNAPSHOT)])
    assert cli.exit_code == 1
    assert "priced by litellm, not by spendguard (newest first" in cli.output
