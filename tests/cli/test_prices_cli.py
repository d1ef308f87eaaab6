"""``spendguard prices`` and ``spendguard prices check``."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from decimal import Decimal
from pathlib import Path

import pytest
from click.testing import CliRunner

from spendguard import PriceTable, check_prices
from spendguard.cli import main
from tests.paths import GENAI_PRICES_SNAPSHOT

ON = datetime(2026, 11, 30, tzinfo=UTC)


pytestmark = pytest.mark.usefixtures("fresh_default_prices")


def test_prices_lists_rates_sources_and_dates() -> None:
    result = CliRunner().invoke(main, ["prices"])
    assert result.exit_code == 0, result.output
    assert PriceTable.bundled().version in result.output
    line = next(row for row in result.output.splitlines() if row.startswith("gpt-6.2-sol "))
    for cell in ("openai", "2", "0.1", "2.5 (30m) / 5 (12h)", "10", ">272000: x2 in, x1.5 out",
                 "2026-11-18", "https://developers.openai.com/api/docs/models/gpt-6.2-sol"):
        assert cell in line


def test_prices_can_show_one_provider_as_json() -> None:
    result = CliRunner().invoke(main, ["prices", "--json", "--provider", "anthropic"])
    assert result.exit_code == 0, result.output
    data = json.loads(result.output)
    models = {entry["model"]: entry for entry in data["models"]}
    # Claude on Bedrock and Vertex is priced under the platform's own ids
    assert all(name.startswith(("claude-", "bedrock/", "bedrock-regional/", "vertex/",
                                "vertex-regional/")) for name in models)
    sonnet = models["claude-sonnet-4-5"]
    assert sonnet["aliases"] == ["claude-sonnet-4-5-20250929"]
    assert sonnet["usd_per_million"] == {"input": "3", "cache_read": "0.30",
                                         "cache_write_5m": "3.75", "cache_write_1h": "6",
                                         "output": "15"}
    assert sonnet["table_version"] == data["table_version"]


def test_prices_include_environment_overrides(tmp_path: Path,
                                              monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "mine.toml"
    path.write_text('[models."house"]\nprovider = "openai"\n'
                    "usd_per_million = { input = 1, output = 2 }\n"
                    "context_window = 1000\nmax_output_tokens = 100\n"
                    'source = "rate card"\nas_of = 2026-11-01\n')
    monkeypatch.setenv("SPENDGUARD_PRICES", str(path))
    result = CliRunner().invoke(main, ["prices", "--provider", "openai"])
    assert "house " in result.output and "rate card" in result.output


def test_check_agrees_with_genai_prices_and_lists_what_it_lacks() -> None:
    # genai-prices' data as stored under tests/ (its version and date are in the file)
    result = CliRunner().invoke(main, ["prices", "check", "--date", "2026-11-30",
                                       "--genai-prices", str(GENAI_PRICES_SNAPSHOT)])
    # the only disagreements: OpenAI prints gpt-5.4's Batch / Flex cached rate rounded to
    # $0.13, and Google gemini-3.5-flash-lite's Batch cached rate rounded to $0.02, which
    # genai-prices copies; spendguard bills the exact halves (their notes)
    assert result.exit_code == 1, result.output
    assert "3 disagreement(s)" in result.output
    assert {line.split()[1] for line in result.output.splitlines()
            if line.startswith(("gpt-5.4 ", "gemini-3.5-flash-lite "))} == {"cache_read"}
    lacking = result.output.split("not in genai-prices:")[1].split("\n\n")[0]
    assert "bedrock-regional/claude-haiku-4-5" in lacking and "gpt-6.2-sol" not in lacking


def test_check_reports_a_changed_rate_and_a_changed_long_context_tier() -> None:
    table = PriceTable.bundled().with_overrides({"models": {
        "gpt-5": {"usd_per_million": {"input": "1.30"}, "source": "t", "as_of": "2026-11-30"},
        "gpt-5.5": {"tiers": [{"above_input_tokens": 272000, "input_multiplier": 3,
                               "output_multiplier": "1.5"}], "source": "t", "as_of": "2026-11-30"},
    }})
    found = check_prices(table, when=ON, genai_prices=GENAI_PRICES_SNAPSHOT).disagreements
    found_set = {(d.model, d.kind, str(d.ours), str(d.theirs)) for d in found}
    assert {
        ("gpt-5", "input", "1.30", "1.25"),
        ("gpt-5.5", "input >272000", "15", "10"),
        ("gpt-5.5", "cache_read >272000", "1.50", "1"),
        # the same rates through genai-prices' request variants (batch, flex, fast...)
        ("gpt-5.5", "input >272000 (batch)", "7.5", "5"),
        ("gpt-5", "input (flex)", "0.650", "0.625"),
    } <= found_set
    assert not {row for row in found_set
                if row[0] not in ("gpt-5", "gpt-5.5", "gpt-5.4", "gemini-3.5-flash-lite")}


def test_check_compares_a_litellm_file(tmp_path: Path) -> None:
    path = tmp_path / "model_prices_and_context_window.json"
    path.write_text(json.dumps({
        "gpt-5": {"input_cost_per_token": 1.25e-06, "output_cost_per_token": 1e-05,
                  "cache_read_input_token_cost": 1.25e-07},
        "claude-sonnet-4-5-20250929": {"input_cost_per_token": 3e-06,
                                       "output_cost_per_token": 1.6e-05,
                                       "cache_creation_input_token_cost": 3.75e-06,
                                       "cache_creation_input_token_cost_above_1hr": 6e-06},
    }))
    check = check_prices(PriceTable.bundled(), when=ON, litellm=path,
                         genai_prices=GENAI_PRICES_SNAPSHOT)
    found = [d for d in check.disagreements if d.other.startswith("litellm")]
    missing = check.missing["litellm"]
    assert [(d.model, d.kind, d.theirs) for d in found] == [
        ("claude-sonnet-4-5", "output", Decimal(16))]
    assert "gpt-4o" in missing and "gpt-5" not in missing
    result = CliRunner().invoke(main, ["prices", "check", "--date", "2026-11-30", "--json",
                                       "--litellm", str(path),
                                       "--genai-prices", str(GENAI_PRICES_SNAPSHOT)])
    assert result.exit_code == 1
    data = json.loads(result.output)
    assert [d for d in data["disagreements"] if d["other"].startswith("litellm")] == [
        {"model": "claude-sonnet-4-5", "kind": "output",
                                      "ours": "15", "theirs": "16",
                                      "other": "litellm (claude-sonnet-4-5-20250929)"}]


def test_check_refuses_an_unreadable_litellm_file(tmp_path: Path) -> None:
    path = tmp_path / "bad.json"
    path.write_text("{not json")
    result = CliRunner().invoke(main, ["prices", "check", "--litellm", str(path),
                                       "--genai-prices", str(GENAI_PRICES_SNAPSHOT)])
    assert result.exit_code != 0 and "cannot read a LiteLLM price file" in result.output


def test_prices_show_the_rates_of_a_day_and_the_dated_changes() -> None:
    before = CliRunner().invoke(main, ["prices", "--json", "--on", "2027-02-28"])
    after = CliRunner().invoke(main, ["prices", "--json", "--on", "2027-03-01"])
    assert before.exit_code == 0 and after.exit_code == 0, before.output + after.output
    sol = {data["on"]: next(m for m in data["models"] if m["model"] == "gpt-6.2-sol")
           for data in (json.loads(before.output), json.loads(after.output))}
    assert sol["2027-02-28"]["modifiers"]["ultrafast"]["multiplier"] == "3"
    assert sol["2027-03-01"]["modifiers"]["ultrafast"]["multiplier"] == "6"
    assert sol["2027-03-01"]["effective_from"] == "2027-03-01"
    assert [p["from"] for p in sol["2027-03-01"]["periods"]] == [None, "2027-03-01"]
    text = CliRunner().invoke(main, ["prices", "--provider", "openai"]).output
    changes = text.split("dated rates")[1]
    assert "2027-03-01" in changes and "Ultrafast is 3x Standard" in changes
    assert "price cut of 2025-06-10" in changes  # o3's earlier rates, kept for old calls
