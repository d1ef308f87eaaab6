"""``spendguard estimate FILE.jsonl``: a batch input file's plan, with a budget check."""

from __future__ import annotations

import json
from decimal import Decimal
from pathlib import Path

import pytest
from click.testing import CliRunner

from spendguard.cli import main
from tests.plan_helpers import anthropic_fanout, openai_fanout


def _run(*args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(main, list(args))
    return result.exit_code, result.stdout, result.stderr


@pytest.fixture
def openai_batch(tmp_path: Path) -> Path:
    path = tmp_path / "openai.jsonl"
    path.write_text("".join(json.dumps({"custom_id": f"q{i}", "method": "POST",
                                        "url": "/v1/chat/completions", "body": body}) + "\n"
                            for i, body in enumerate(openai_fanout(20))))
    return path


@pytest.fixture
def anthropic_batch(tmp_path: Path) -> Path:
    path = tmp_path / "anthropic.jsonl"
    path.write_text("".join(json.dumps({"custom_id": f"q{i}", "params": body}) + "\n"
                            for i, body in enumerate(anthropic_fanout(20))))
    return path


def test_estimate_is_a_registered_command() -> None:
    code, out, _ = _run("--help")
    assert code == 0 and "estimate" in out


def test_json_carries_the_documented_keys(openai_batch: Path) -> None:
    code, out, _ = _run("estimate", str(openai_batch), "--json")
    assert code == 0, out
    data = json.loads(out)
    assert data["requests"] == 20
    assert data["input_tokens"] > 20 * 5000
    assert Decimal(data["expected_usd"]) <= Decimal(data["worst_usd"])
    assert "over_budget" not in data


def test_an_anthropic_message_batch_file_with_cache_order(anthropic_batch: Path) -> None:
    code, out, _ = _run("estimate", str(anthropic_batch), "--json", "--cache-order",
                        "--per-request")
    data = json.loads(out)
    assert code == 0 and data["cache_ordered"] is True and data["expected_hit_rate"] > 0.9
    assert [row["custom_id"] for row in data["per_request"]][:2] == ["q0", "q1"]


def test_text_output_is_the_plan_summary(openai_batch: Path) -> None:
    code, out, _ = _run("estimate", str(openai_batch), "--concurrency", "4")
    assert code == 0
    assert "20 requests to gpt-4.1-mini" in out and "at concurrency 4" in out


def test_over_budget_exits_non_zero_and_says_so(openai_batch: Path) -> None:
    code, out, err = _run("estimate", str(openai_batch), "--budget", "0.001", "--json")
    assert code == 3
    assert json.loads(out)["over_budget"] is True
    assert "OVER BUDGET" in err and "exceed --budget $0.001" in err


def test_within_budget_exits_zero(openai_batch: Path) -> None:
    code, _, err = _run("estimate", str(openai_batch), "--budget", "100")
    assert code == 0 and err == ""


def test_a_bad_budget_names_the_option(openai_batch: Path) -> None:
    code, _, err = _run("estimate", str(openai_batch), "--budget", "lots")
    assert code == 2 and "--budget" in err


def test_a_bad_file_names_the_line(tmp_path: Path) -> None:
    path = tmp_path / "bad.jsonl"
    path.write_text('{"custom_id": "a"}\n')
    code, _, err = _run("estimate", str(path))
    assert code == 2 and "line 1: a request needs a 'model'" in err


def test_an_unpriced_model_is_a_clear_error(tmp_path: Path) -> None:
    path = tmp_path / "unknown.jsonl"
    path.write_text(json.dumps({"model": "gpt-unknown-9", "messages": []}) + "\n")
    code, _, err = _run("estimate", str(path))
    assert code == 1 and "gpt-unknown-9" in err
