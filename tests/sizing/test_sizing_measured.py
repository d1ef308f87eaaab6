"""Measured mode: fine-tuning memory and single-stream speed fitted to published measurements.

The published cases themselves are held in ``test_sizing_validation.py`` (each within the error
docs/sizing.md states); these tests pin what the output says and that formula mode is untouched.
"""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

from spendguard import size_model
from spendguard.cli import main


def _run(*args: str) -> tuple[int, str]:
    result = CliRunner().invoke(main, list(args))
    return result.exit_code, result.output


def test_measured_qlora_holds_dequantisation_buffers_formula_mode_leaves_out() -> None:
    spec = size_model("llama-3.1-8b", precision="int4", task="qlora", context=512,
                      concurrency=2, gpu="a10g")
    measured = size_model("llama-3.1-8b", precision="int4", task="qlora", context=512,
                          concurrency=2, gpu="a10g", mode="measured")
    # LitGPT measured 17.41 GB for this run; the seed's F4 gives 6.15 GB.
    assert spec.total_gb == pytest.approx(6.15, abs=0.01)
    assert measured.total_gb == pytest.approx(17.41, rel=0.15)
    # 0.34 × the 16-bit weights (16.06 GB) + the 0.5 GB CUDA context.
    assert measured.memory.overhead_gb == pytest.approx(0.34 * 16.06 + 0.5, abs=0.01)
    assert measured.weights_gb == spec.weights_gb


def test_the_result_says_which_mode_sized_the_memory_and_its_expected_error() -> None:
    measured = size_model("mistral-7b", precision="bf16", task="lora", context=512,
                          concurrency=2, mode="measured")
    assert measured.memory_basis.startswith("measured")
    assert measured.memory_error_pct == 15
    spec = size_model("mistral-7b", precision="bf16", task="lora", context=512, concurrency=2)
    assert spec.memory_basis == "formula: F4 + F6"
    assert spec.memory_error_pct is None
    data = measured.to_dict()
    assert data["memory_expected_error_pct"] == 15
    assert data["memory_basis"] == measured.memory_basis


def test_full_fine_tuning_in_measured_mode_says_it_fell_back_to_the_formula() -> None:
    full = size_model("llama-3.1-8b", precision="bf16", task="full", context=2048,
                      mode="measured")
    assert full.memory_basis == "formula: F5 + F6"
    assert full.memory_error_pct is None
    assert full.total_gb == size_model("llama-3.1-8b", precision="bf16", task="full",
                                       context=2048).total_gb


@pytest.mark.parametrize(("gpu", "share", "low", "high"), [
    ("h100", 0.59, 0.50, 0.68), ("b200", 0.50, 0.42, 0.58), ("rtx-4090", 0.70, 0.62, 0.80),
    ("a100", 0.70, 0.45, 0.85),
])
def test_single_stream_speed_uses_the_card_class_share_and_states_its_range(
        gpu: str, share: float, low: float, high: float) -> None:
    result = size_model("llama-3.1-8b", precision="fp8", context=2048, gpu=gpu,
                        mode="measured")
    option = result.best
    assert option is not None
    bandwidth = option.count * option.bandwidth_tb_s * 1e12
    # active weights + one embedding row (4096 × 1 B at FP8) + the stream's KV.
    read = result.active_weights_gb * 1e9 + 4096 + result.sequence_kv_gb * 1e9
    assert option.single_stream_tok_s == pytest.approx(bandwidth * share / read)
    assert option.single_stream_low_tok_s == pytest.approx(bandwidth * low / read)
    assert option.single_stream_high_tok_s == pytest.approx(bandwidth * high / read)
    assert option.decode_class


def test_formula_mode_keeps_the_seed_single_stream_estimate_and_states_no_range() -> None:
    result = size_model("llama-3.1-8b", precision="bf16", context=4096, gpu="h100")
    option = result.best
    assert option is not None
    read = result.active_weights_gb * 1e9 + result.sequence_kv_gb * 1e9
    assert option.single_stream_tok_s == pytest.approx(3.35e12 * 0.7 / read)
    assert option.decode_tok_s_ceiling == pytest.approx(3.35e12 / (result.active_weights_gb * 1e9))
    assert option.single_stream_low_tok_s is None
    assert option.decode_class is None


def test_measured_mode_leaves_serving_memory_as_the_formulas_give_it() -> None:
    spec = size_model("qwen3-32b", precision="bf16", context=8192, concurrency=4)
    measured = size_model("qwen3-32b", precision="bf16", context=8192, concurrency=4,
                          mode="measured")
    assert measured.memory == spec.memory
    assert [o.count for o in measured.options] == [o.count for o in spec.options]


def test_cli_measured_mode_prints_the_basis_the_error_and_the_speed_range() -> None:
    code, out = _run("size", "--model", "llama-3.1-8b", "--precision", "int4", "--task",
                     "qlora", "--context", "512", "--concurrency", "2", "--gpu", "a10g",
                     "--mode", "measured")
    assert code == 0, out
    assert "measured mode: fitted to published measurements" in out
    assert "dequantisation 0.34 × 16-bit weights + CUDA context" in out
    assert "expected error ±15 % of the measured peak" in out
    code, out = _run("size", "--model", "llama-3.1-8b", "--precision", "bf16", "--context",
                     "4k", "--concurrency", "1", "--gpu", "h100", "--mode", "measured")
    assert code == 0, out
    assert "1 stream on h100 (measured, Hopper (H100 / H200 / H800 / H20)): expect 108-147" in out


def test_cli_measured_mode_json_carries_the_range() -> None:
    code, out = _run("size", "--model", "llama-3.1-8b", "--precision", "bf16", "--context",
                     "4k", "--concurrency", "1", "--gpu", "b200", "--mode", "measured", "--json")
    assert code == 0, out
    option = json.loads(out)["options"][0]
    assert option["single_stream_low_tok_s"] < option["single_stream_tok_s"] \
        < option["single_stream_high_tok_s"]
    assert option["decode_class"].startswith("Blackwell")


def test_measured_mode_is_refused_nowhere_calibrated_is_still_serving_only() -> None:
    code, out = _run("size", "--model", "llama-3.1-8b", "--precision", "bf16", "--task",
                     "lora", "--context", "512", "--concurrency", "1", "--mode", "calibrated")
    assert code == 2
    assert "use mode spec" in out


def test_formula_mode_text_is_the_seed_output_and_measured_serving_names_its_formulas() -> None:
    args = ("size", "--model", "llama-3.1-8b", "--precision", "bf16", "--context", "4k",
            "--concurrency", "1", "--gpu", "h100")
    code, spec = _run(*args)
    assert code == 0, spec
    assert "memory by" not in spec
    assert "expect" not in spec
    code, measured = _run(*args, "--mode", "measured")
    assert code == 0, measured
    assert "memory by formula: F1-F3" in measured
