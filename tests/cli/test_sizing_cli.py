"""``spendguard size`` and ``spendguard breakeven``."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta

import pytest
from click.testing import CliRunner

from spendguard import Budget
from spendguard.cli import main
from tests.finance_helpers import book


def _run(*args: str) -> tuple[int, str]:
    result = CliRunner().invoke(main, list(args))
    return result.exit_code, result.output


def test_size_json_has_the_documented_keys() -> None:
    code, out = _run("size", "--model", "kimi-k3", "--precision", "int4", "--context", "4k",
                     "--concurrency", "1", "--json")
    assert code == 0, out
    data = json.loads(out)
    for key in ("weights_gb", "kv_gb", "kv_bytes_per_token", "activations_gb", "overhead_gb",
                "total_gb", "options", "floor"):
        assert key in data
    assert data["weights_gb"] == pytest.approx(1389.5)
    assert data["floor"]["h100"] == 18 and data["floor"]["gb300"] == 5
    first = data["options"][0]
    assert {"gpu", "count", "total_vram_gb", "decode_tok_s_ceiling"} <= first.keys()
    counts = [(o["count"], o["total_vram_gb"]) for o in data["options"]]
    assert counts == sorted(counts, key=lambda c: (c[0], c[1]))


def test_size_text_shows_the_math_once_with_units_and_estimates_labelled() -> None:
    code, out = _run("size", "--model", "llama-3.1-8b", "--precision", "bf16", "--context",
                     "8192", "--concurrency", "4", "--gpu", "h100", "--usd-per-gpu-hour", "2.50")
    assert code == 0, out
    assert "GB = 1e9 B" in out and "GiB" in out
    assert "F1  8.03 B params × 2 B" in out and "16.06 GB" in out
    assert "F2  131,072 B/token × 8,192 × 4" in out
    assert "F3  0.10 × weights" in out
    assert "NVIDIA H100 SXM 80GB" in out
    assert "Weights-only floor" in out and "h100 ×1" in out
    assert "decode memory-bound" in out and "prefill of 8,192 tokens compute-bound" in out
    assert "Cost per 1M output tokens (estimate)" in out and "40% utilisation" in out
    assert "(est.)" in out


def test_size_training_task_uses_context_as_sequence_and_concurrency_as_batch() -> None:
    code, out = _run("size", "--model", "llama-3.1-8b", "--precision", "int4", "--task",
                     "qlora", "--context", "4096", "--concurrency", "2", "--train-tokens", "1B",
                     "--json")
    assert code == 0, out
    data = json.loads(out)
    assert data["inputs"]["task"] == "qlora"
    assert data["activations_gb"] > 0 and data["kv_gb"] == 0
    assert data["training"]["tokens"] == 1_000_000_000


def test_size_calibrated_reports_the_engine_budget() -> None:
    code, out = _run("size", "--model", "llama-3.1-8b", "--precision", "bf16", "--context",
                     "16000", "--concurrency", "1", "--gpu", "h100", "--mode", "calibrated")
    assert code == 0, out
    assert "0.9 × 79.18 GiB = 71.26" in out and "51.35 GiB for KV" in out


def test_size_accepts_params_alone_for_an_estimated_shape() -> None:
    code, out = _run("size", "--params", "13B", "--precision", "int4", "--context", "8k",
                     "--concurrency", "1", "--json")
    assert code == 0, out
    data = json.loads(out)
    assert data["inputs"]["estimated_shape"] is True
    assert data["weights_gb"] == pytest.approx(6.5)


def test_size_lists_catalogues() -> None:
    code, out = _run("size", "--list")
    assert code == 0 and "h100" in out and "kimi-k3" in out


@pytest.mark.parametrize(("args", "option", "hint"), [
    (["--model", "kimi-k4"], "--model", "close matches: kimi-k3"),
    (["--model", "kimi-k3", "--gpu", "h1000"], "--gpu", "close matches: h100"),
    (["--model", "kimi-k3", "--precision", "int5"], "--precision", "use one of"),
    (["--model", "kimi-k3", "--context", "4q"], "--context", "8192 or 8k"),
    (["--model", "kimi-k3", "--concurrency", "0"], "--concurrency", "at least 1"),
    (["--model", "kimi-k3", "--kv-precision", "fp7"], "--kv-precision", "use one of"),
    (["--model", "llama-3.1-8b", "--task", "qlora"], "--precision", "pass int4"),
    (["--model", "llama-3.1-8b", "--usd-per-gpu-hour", "cheap"], "--usd-per-gpu-hour",
     "write it like"),
])
def test_bad_size_arguments_name_the_option_and_the_fix(args: list[str], option: str,
                                                         hint: str) -> None:
    defaults = {"--precision": "bf16", "--context": "4096", "--concurrency": "1"}
    given = dict(zip(args[::2], args[1::2], strict=True))
    argv = [item for pair in {**defaults, **given}.items() for item in pair]
    code, out = _run("size", *argv)
    assert code == 2
    assert f"'{option}'" in out and hint in out


def test_size_without_model_or_params_says_what_to_give() -> None:
    code, out = _run("size", "--precision", "bf16", "--context", "1", "--concurrency", "1")
    assert code == 2 and "--params N" in out


def test_breakeven_reproduces_the_960_million_token_figure() -> None:
    code, out = _run("breakeven", "--gpu", "h100", "--count", "8", "--usd-per-gpu-hour", "2.50",
                     "--api-output-usd-per-million", "15.00", "--json")
    assert code == 0, out
    data = json.loads(out)
    assert data["monthly_cost_usd"] == "14400.00"
    assert data["breakeven_output_tokens_per_month"] == 960_000_000


def test_breakeven_text_and_part_time_rental() -> None:
    code, out = _run("breakeven", "--gpu", "h100", "--count", "8", "--usd-per-gpu-hour", "2.50",
                     "--hours-per-day", "4", "--api-output-usd-per-million", "15")
    assert code == 0, out
    assert "960 GPU-h" in out and "$2,400.00 a month" in out and "160,000,000" in out


def test_breakeven_with_a_candidate_states_the_utilisation_needed() -> None:
    code, out = _run("breakeven", "--gpu", "h100", "--count", "8", "--usd-per-gpu-hour", "2.50",
                     "--api-output-usd-per-million", "15", "--candidate", "llama-3.1-70b",
                     "--precision", "fp8", "--json")
    assert code == 0, out
    data = json.loads(out)
    assert data["candidate"]["estimate"] is True
    assert 0 < data["utilisation_needed"] < 1


@pytest.mark.parametrize(("args", "option"), [
    (["--api-output-usd-per-million", "15", "--count", "0"], "--count"),
    (["--api-output-usd-per-million", "15", "--hours-per-day", "30"], "--hours-per-day"),
    (["--api-output-usd-per-million", "15", "--gpu", "h1000"], "--gpu"),
    ([], "--api-output-usd-per-million"),
    (["--from-ledger"], "--model"),
    (["--api-output-usd-per-million", "15", "--candidate", "kimi-k3"], "--count"),
])
def test_bad_breakeven_arguments_name_the_option(args: list[str], option: str) -> None:
    base = {"--gpu": "h100", "--count": "8", "--usd-per-gpu-hour": "2.5"}
    flags = [a for a in args if a == "--from-ledger"]
    pairs = [a for a in args if a != "--from-ledger"]
    given = dict(zip(pairs[::2], pairs[1::2], strict=True))
    argv = [item for pair in {**base, **given}.items() for item in pair] + flags
    code, out = _run("breakeven", *argv)
    assert code == 2, out
    assert f"'{option}'" in out


def test_breakeven_from_the_ledger_compares_real_spend() -> None:
    two_days_ago = datetime.now(UTC) - timedelta(days=2)
    budget = Budget("10000", ledger="memory://sizing-cli", warn_at=None,
                    clock=lambda: two_days_ago)
    book(budget, "gpt-4o-mini", {"input": 50_000_000, "output": 100_000_000},
         actual_usd="3000", worst_usd="3000")
    code, out = _run("breakeven", "--gpu", "h100", "--count", "1", "--usd-per-gpu-hour", "2.50",
                     "--from-ledger", "--model", "gpt-4o-mini", "--ledger", "memory://sizing-cli")
    assert code == 0, out
    assert "The last 30 days on gpt-4o-mini cost $3,000.00" in out
    assert "would cost $1,800.00" in out
    assert "60,000,000 output tokens" in out  # 1,800 USD at 30 USD per million


def test_size_text_for_training_shows_f4_f6_and_the_time_estimate() -> None:
    code, out = _run("size", "--model", "llama-3.1-8b", "--precision", "int8", "--task", "lora",
                     "--context", "4096", "--concurrency", "2", "--train-tokens", "1B",
                     "--gpu", "h100")
    assert code == 0, out
    assert "0.005 × params × 16 B adapters" in out and "F6  s=4,096 b=2" in out
    assert "Training (estimate)" in out and "1,000,000,000 tokens" in out


def test_size_text_says_when_nothing_fits() -> None:
    code, out = _run("size", "--model", "llama-3.1-405b", "--precision", "bf16", "--context",
                     "4096", "--concurrency", "1", "--gpu", "rtx-4090")
    assert code == 0, out
    assert "nothing fits" in out and "rtx-4090 ×" in out
