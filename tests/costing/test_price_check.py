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

from spendguard._core.errors import ConfigError
from spendguard._costing.prices import PriceTable
from spendguard._costing.prices.check import check_prices, compare_litellm, our_rate
from spendguard.cli import main

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
                                    "--litellm", str(_file(tmp_path))])
    assert cli.exit_code == 1
    data = json.loads(cli.output)
    assert data["ok"] is False and len(data["disagreements"]) == 3
