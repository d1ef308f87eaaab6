"""``spendguard prices status``: the table's date and newest models, the fallback catalog, and
from the ledger the models priced by the fallback or refused for want of a price."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import respx
from click.testing import CliRunner

import spendguard
from spendguard import GenaiPricesCatalog, PriceTable
from spendguard.cli import main
from tests.paths import GENAI_PRICES_SNAPSHOT
from tests.provider_bodies import chat_completion

OPENAI_CHAT = "https://api.openai.com/v1/chat/completions"
MESSAGES: Any = [{"role": "user", "content": "Say hi"}]

pytestmark = pytest.mark.usefixtures("fresh_default_prices")


def _ledger_with_fallback_and_refused_calls(tmp_path: Path) -> str:
    ledger_url = f"sqlite:///{tmp_path / 'ledger.db'}"
    table = PriceTable.bundled().with_catalog(GenaiPricesCatalog.from_file(GENAI_PRICES_SNAPSHOT))
    budget = spendguard.Budget("10", ledger=ledger_url)
    with_catalog = spendguard.OpenAI(api_key="sk-test", prices=table, budget=budget)
    plain = spendguard.OpenAI(api_key="sk-test", budget=budget)
    with respx.mock:
        route = respx.post(OPENAI_CHAT).respond(200, json=chat_completion(
            "gpt-6-cyber", prompt_tokens=100, completion_tokens=10))
        for _ in range(2):
            with_catalog.chat.completions.create(model="gpt-6-cyber", messages=MESSAGES,
                                                 max_tokens=20)
        with pytest.raises(spendguard.UnknownModelError):
            plain.chat.completions.create(model="gpt-9-imaginary", messages=MESSAGES,
                                          max_tokens=20)
        assert route.call_count == 2  # the refused call was not sent
    assert budget.spent > 0
    return ledger_url


def test_status_lists_fallback_priced_and_refused_models_from_the_ledger(
        tmp_path: Path) -> None:
    ledger_url = _ledger_with_fallback_and_refused_calls(tmp_path)
    result = CliRunner().invoke(main, ["prices", "status", "--ledger", ledger_url, "--json"])
    assert result.exit_code == 0, result.output
    data = json.loads(result.output)
    assert data["bundled_table"] == PriceTable.bundled().version
    assert data["bundled_as_of"] == PriceTable.bundled().version.split(".")[0]
    assert "gpt-6.2-sol" in data["newest_models"]["openai"]
    assert data["fallback_catalog"] is None  # off for the default table
    assert data["priced_by_fallback"] == [{"model": "gpt-6-cyber", "calls": 2,
                                           "usd": "0.006",
                                           "catalog": "genai-prices 0.2.5@2026-12-06"}]
    assert [(r["model"], r["calls"]) for r in data["refused_unknown"]] == [
        ("gpt-9-imaginary", 1)]
    text = CliRunner().invoke(main, ["prices", "status", "--ledger", ledger_url]).output
    assert "priced by the fallback catalog" in text and "gpt-6-cyber" in text
    assert "refused for want of a price" in text and "gpt-9-imaginary" in text
    # the refusal's trace costs nothing and counts as no call
    [refused] = [r for r in spendguard.open_ledger(ledger_url).records()
                 if r.model == "gpt-9-imaginary"]
    assert refused.status == "released" and refused.actual_usd == 0
    assert "refused: no price" in (refused.note or "")


def test_status_shows_the_catalog_when_it_is_on(tmp_path: Path,
                                                monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SPENDGUARD_PRICE_CATALOG", "genai-prices")
    spendguard.open_ledger(f"sqlite:///{tmp_path / 'empty.db'}").close()
    result = CliRunner().invoke(main, ["prices", "status", "--json",
                                       "--ledger", f"sqlite:///{tmp_path / 'empty.db'}"])
    assert result.exit_code == 0, result.output
    data = json.loads(result.output)
    assert data["fallback_catalog"].startswith("genai-prices ")
    assert data["priced_by_fallback"] == [] and data["refused_unknown"] == []
    text = CliRunner().invoke(main, ["prices", "status", "--ledger",
                                     f"sqlite:///{tmp_path / 'empty.db'}"]).output
    assert "every call was priced by the table" in text
