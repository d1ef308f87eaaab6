"""Sizing cases pinned with hand-computed values: MoE speed, HF defaults, Kimi K3, B200."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from decimal import Decimal
from pathlib import Path

import pytest
from click.testing import CliRunner

from spendguard import open_ledger, size_model
from spendguard._budget.ledger.base import CallInfo, ScopeClaim, Settlement
from spendguard._sizing.arch import default_models, estimated_arch
from spendguard._sizing.hardware import default_gpus
from spendguard.cli import main
from spendguard.sizing import SizingRequest, serving_capacity, size

H100_BANDWIDTH = 3.35e12
# The estimated shape of a 1.5 T model is Llama 3.1 405B's: 126 layers, 8 KV heads of 128.
KV_PER_TOKEN_BF16 = 126 * 2 * 8 * 128 * 2  # 516,096 B


def _run(*args: str) -> tuple[int, str]:
    result = CliRunner().invoke(main, list(args))
    return result.exit_code, result.output


def test_moe_known_by_counts_decodes_at_its_active_weights() -> None:
    result = size_model(None, params=1_500_000_000_000, active_params=40_000_000_000,
                        precision="bf16", context=8192, concurrency=1, gpu="h100",
                        usd_per_gpu_hour="2.50")
    assert result.kv_gb * 1e9 == pytest.approx(KV_PER_TOKEN_BF16 * 8192)
    best = result.best
    assert best is not None and best.count == 48
    line = result.roofline
    assert line is not None
    # One sequence reads its 40 B active weights (80 GB at bf16), not all 3 TB.
    assert line.decode_bytes == pytest.approx(80e9 + KV_PER_TOKEN_BF16 * 8192)
    assert line.decode_tok_s == pytest.approx(48 * H100_BANDWIDTH / 84_227_858_432)
    assert line.decode_tok_s == pytest.approx(1909.1, abs=0.1)
    # $120 an hour ÷ (1,909.1 tok/s × 40 % × 3,600 s) per million.
    assert float(result.costs[0].usd_per_million_output) == pytest.approx(43.65, abs=0.01)
    assert result.inputs.moe


def test_moe_known_by_counts_reads_more_experts_as_the_batch_grows() -> None:
    result = size_model(None, params=1_500_000_000_000, active_params=40_000_000_000,
                        precision="bf16", context=8192, concurrency=8, gpu="h100")
    line = result.roofline
    assert line is not None
    routed_read = 3000e9 * (1 - (1 - 40 / 1500) ** 8)  # 582.4 GB of the 3 TB
    assert line.decode_bytes == pytest.approx(routed_read + 8 * KV_PER_TOKEN_BF16 * 8192)
    dense = size_model(None, params=1_500_000_000_000, precision="bf16", context=8192,
                       concurrency=8, gpu="h100").roofline
    assert dense is not None and line.decode_tok_s > 4 * dense.decode_tok_s


def test_serving_capacity_of_a_moe_follows_active_params() -> None:
    arch = estimated_arch(1_500_000_000_000, 40_000_000_000, default_models())
    capacity = serving_capacity(arch, gpu="h100", count=48, precision="bf16", context=4096)
    # 48 × 80 GB × 0.9 - 1.1 × 3,000 GB = 156 GB for sequences of 516,096 × 4,096 B.
    assert capacity.batch == 73
    read = 3000e9 * (1 - (1 - 40 / 1500) ** 73) + 73 * KV_PER_TOKEN_BF16 * 4096
    assert capacity.tok_s == pytest.approx(73 * 48 * H100_BANDWIDTH / read)


def test_size_output_says_how_an_expert_table_is_assumed() -> None:
    code, out = _run("size", "--params", "1.5T", "--active-params", "40B", "--precision",
                     "bf16", "--context", "8k", "--concurrency", "1", "--gpu", "h100")
    assert code == 0, out
    assert "MoE: memory follows total parameters, speed follows active ones." in out
    assert "No expert table: each weight counts as routed with probability active ÷ total" in out
    assert "≤ 1,909 tok/s" in out


def test_dense_catalogue_models_keep_reading_all_their_weights() -> None:
    result = size_model("llama-3.1-8b", precision="bf16", context=4096, gpu="h100")
    assert result.roofline is not None
    assert result.roofline.decode_bytes == pytest.approx(result.weights_gb * 1e9
                                                          + 131_072 * 4096)


def test_an_estimated_shape_is_said_once() -> None:
    code, out = _run("size", "--params", "13B", "--precision", "bf16", "--context", "4k",
                     "--concurrency", "1", "--gpu", "h100")
    assert code == 0, out
    assert out.count("shape estimated") == 1


# Gemma 2 9B's config.json as published: no tie_word_embeddings and no layer_types.
GEMMA2_9B = {
    "architectures": ["Gemma2ForCausalLM"], "attention_bias": False, "head_dim": 256,
    "hidden_activation": "gelu_pytorch_tanh", "hidden_size": 3584,
    "intermediate_size": 14336, "max_position_embeddings": 8192, "model_type": "gemma2",
    "num_attention_heads": 16, "num_hidden_layers": 42, "num_key_value_heads": 8,
    "query_pre_attn_scalar": 256, "sliding_window": 4096, "cache_implementation": "hybrid",
    "torch_dtype": "float32", "vocab_size": 256000,
}


def _config(tmp_path: Path, config: dict[str, object]) -> Path:
    (tmp_path / "config.json").write_text(json.dumps(config), encoding="utf-8")
    return tmp_path


def test_gemma2_config_gets_the_reference_defaults(tmp_path: Path) -> None:
    result = size_model(_config(tmp_path, GEMMA2_9B), precision="bf16", kv_precision="bf16",
                        context=8192, gpu="h100")
    # Per layer: attention 3584·16·256·2 + 3584·8·256·2 and MLP 3·3584·14336; one tied table.
    per_layer = 3584 * 16 * 256 * 2 + 3584 * 8 * 256 * 2 + 3 * 3584 * 14336
    assert result.inputs.params == 42 * per_layer + 256_000 * 3584 == 9_241_100_288
    assert result.inputs.layout == "21 full + 21 sliding"
    # 21 full layers hold 8,192 tokens, 21 sliding ones their 4,096-token window.
    per_layer_token = 2 * 8 * 256 * 2
    assert result.kv_gb * 1e9 == pytest.approx(21 * per_layer_token * (8192 + 4096))
    assert result.inputs.defaults == (
        "tie_word_embeddings = true (gemma2 default)",
        "layer_types = full attention every 2 layers, sliding otherwise (gemma2 default)")


def test_values_a_config_states_are_not_replaced_by_defaults(tmp_path: Path) -> None:
    config = {**GEMMA2_9B, "tie_word_embeddings": False,
              "layer_types": ["sliding_attention"] * 42}
    result = size_model(_config(tmp_path, config), precision="bf16", context=8192)
    assert result.inputs.params == 9_241_100_288 + 256_000 * 3584
    assert result.inputs.layout == "42 sliding"
    assert result.inputs.defaults == ()


def test_size_output_says_which_values_came_from_defaults(tmp_path: Path) -> None:
    code, out = _run("size", "--model", str(_config(tmp_path, GEMMA2_9B)), "--precision",
                     "bf16", "--context", "8k", "--concurrency", "1", "--gpu", "h100")
    assert code == 0, out
    assert "Defaults (config.json left these out): tie_word_embeddings = true" in out


@pytest.mark.parametrize(("gpu", "count"), [("h100", 18), ("h200", 10), ("b200", 8),
                                            ("gb300", 5)])
def test_kimi_k3_at_mxfp4_reproduces_the_pages_floor_table(gpu: str, count: int) -> None:
    result = size_model("kimi-k3", precision="mxfp4")
    values = result.values_only
    assert values is not None
    # 2.779 T weights × 0.5 B = 1,389.5 GB: the page's "≈ 1.4 TB", scales left out.
    assert values.weights_gb == pytest.approx(1389.5)
    assert values.floor[gpu] == count
    # With one 8-bit scale per 32 values: 2.779 T × 0.53125 B ≈ 1.48 TB, the page's "≈ 1.5 TB".
    assert result.weights_gb == pytest.approx(1476.34, abs=0.01)


def test_kimi_k3_output_explains_the_difference_from_native() -> None:
    code, out = _run("size", "--model", "kimi-k3", "--precision", "mxfp4", "--context", "4k",
                     "--concurrency", "1")
    assert code == 0, out
    assert ("block scales left out (4-bit values at 0.5 B, as model pages quote them):"
            " 1,389.50 GB → h100 ×18 · h200 ×10 · b200 ×8 · gb300 ×5") in out
    assert "1,476.34 GB on disk" in out
    assert "vs native (bf16,experts=mxfp4): 1,558.97 GB" in out
    assert "native keeps the 56.26 B non-expert weights in bf16" in out


def test_b200_uses_the_sourced_180_gb_figure_and_says_why() -> None:
    b200 = default_gpus().get("b200")
    assert (b200.memory_gb, b200.bandwidth_tb_s) == (180, 7.7)
    assert "1,440 GB" in b200.source
    code, out = _run("size", "--model", "llama-3.1-70b", "--precision", "bf16", "--context",
                     "4k", "--concurrency", "1", "--gpu", "b200", "--json")
    assert code == 0, out
    assert "192 GB / 8 TB/s" in json.loads(out)["options"][0]["figure_note"]
    code, out = _run("size", "--model", "llama-3.1-70b", "--precision", "bf16", "--context",
                     "4k", "--concurrency", "1", "--gpu", "b200")
    assert "Figures: B200: 180 GB and 7.7 TB/s" in out


def test_size_model_keywords_and_a_request_give_the_same_result() -> None:
    request = SizingRequest("llama-3.1-8b", precision="fp8", context=8192, concurrency=4)
    assert size(request) == size_model("llama-3.1-8b", precision="fp8", context=8192,
                                       concurrency=4)


def test_prefill_capacity_is_compute_bound_at_the_peak() -> None:
    capacity = serving_capacity("llama-3.1-8b", gpu="h100", count=1, precision="bf16",
                                context=4096)
    # 4,096 tokens × 2 × 7.5 B active FLOPs at 989.5 TFLOP/s take 62.1 ms: 65,967 tokens/s.
    assert capacity.roofline.prefill_bound == "compute"
    assert capacity.prefill_tok_s == pytest.approx(989.5e12 / (2 * 7.5e9))
    assert capacity.prefill_tok_s == pytest.approx(65_966.67, abs=0.01)


def _input_heavy_ledger(url: str) -> None:
    ledger = open_ledger(url)
    now = datetime.now(UTC)
    rid = ledger.reserve([ScopeClaim("global", "all")], Decimal("1"),
                         CallInfo("openai", "gpt-in", "/v1/chat/completions"),
                         time=now - timedelta(days=2), expires_at=now, tags={})
    ledger.settle(rid, Settlement(time=now - timedelta(days=2), actual_usd=Decimal("33"),
                                  tokens={"input": 10_800_000, "output": 28_000},
                                  usage_estimated=False, table_version="t", latency_s=1.0))


def test_breakeven_from_the_ledger_counts_input_at_the_prefill_rate() -> None:
    _input_heavy_ledger("memory://sizing-prefill")
    code, out = _run("breakeven", "--gpu", "h100", "--count", "1", "--usd-per-gpu-hour", "2.50",
                     "--hours-per-day", "1", "--capacity-tok-s", "10", "--prefill-tok-s", "100",
                     "--from-ledger", "--model", "gpt-in", "--ledger", "memory://sizing-prefill",
                     "--json")
    assert code == 0, out
    ledger = json.loads(out)["ledger"]
    # 30 days × 1 h = 108,000 rented seconds: 28,000 ÷ (10 × 108,000) decoding and
    # 10.8 M ÷ (100 × 108,000) prefilling.
    assert ledger["decode_busy"] == pytest.approx(28_000 / 1_080_000)
    assert ledger["prefill_busy"] == pytest.approx(1.0)
    assert ledger["utilisation"] == pytest.approx(1.0 + 28_000 / 1_080_000)


def test_breakeven_from_the_ledger_shows_decode_and_prefill_busy_shares() -> None:
    _input_heavy_ledger("memory://sizing-prefill-text")
    code, out = _run("breakeven", "--gpu", "h100", "--count", "1", "--usd-per-gpu-hour", "2.50",
                     "--candidate", "llama-3.1-8b", "--precision", "bf16", "--from-ledger",
                     "--model", "gpt-in", "--ledger", "memory://sizing-prefill-text")
    assert code == 0, out
    # 10.8 M input tokens ÷ (65,967 tokens/s × 2,592,000 s) = 0.0063 % prefilling.
    assert "prefill 0.0063 %" in out
    assert "Prefill (estimate): 65,967 prompt tokens/s at the roofline" in out


def test_b200_output_says_when_the_other_figure_changes_the_count() -> None:
    # 76 B at bf16: 152 GB + 15.2 GB overhead + KV ≈ 168.5 GB: over 0.9 × 180 = 162 GB, under
    # 0.9 × 192 = 172.8 GB.
    result = size_model(None, params=76_000_000_000, precision="bf16", gpu="b200")
    best = result.best
    assert best is not None and (best.count, best.count_at_other_memory) == (2, 1)
    code, out = _run("size", "--params", "76B", "--precision", "bf16", "--context", "4k",
                     "--concurrency", "1", "--gpu", "b200")
    assert code == 0, out
    assert "Here: 2 × b200 at 180 GB; 1 at the other figure." in out
