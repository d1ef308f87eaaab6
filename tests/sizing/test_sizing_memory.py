"""Memory, spec mode: the formulas F1-F6 and the figures of seeds 001 and 003."""

from __future__ import annotations

import math

import pytest
from hypothesis import given
from hypothesis import strategies as st

from spendguard import ConfigError, size_model
from spendguard._sizing import default_models
from spendguard._sizing.memory import GB, GIB, activation_bytes

K3_PARAMS = 2_800_000_000_000  # the seed's round figure; the catalogue counts 2,779 B


@pytest.mark.parametrize(("precision", "terabytes"), [
    ("bf16", 5.6), ("fp8", 2.8), ("int4", 1.4), ("int2", 0.7),
])
def test_kimi_k3_weights_match_the_seed_table(precision: str, terabytes: float) -> None:
    result = size_model("kimi-k3", precision=precision, params=K3_PARAMS)
    assert result.weights_gb == pytest.approx(terabytes * 1000)


@pytest.mark.parametrize(("precision", "terabytes"), [
    ("bf16", 5.6), ("fp8", 2.8), ("int4", 1.4), ("int2", 0.7),
])
def test_catalogued_kimi_k3_rounds_to_the_seed_table(precision: str, terabytes: float) -> None:
    result = size_model("kimi-k3", precision=precision)
    assert round(result.weights_gb / 1000, 1) == terabytes


def test_mxfp4_block_scales_add_a_sixteenth_to_4_bit_weights() -> None:
    plain = size_model("kimi-k3", precision="int4", params=K3_PARAMS).weights_gb
    mxfp4 = size_model("kimi-k3", precision="mxfp4", params=K3_PARAMS).weights_gb
    assert mxfp4 == pytest.approx(plain * 1.0625)  # "≈ 6 % more" -> close to 1.5 TB
    assert round(mxfp4 / 1000, 1) == 1.5


def test_kimi_k3_as_shipped_keeps_attention_and_embeddings_in_bf16() -> None:
    result = size_model("kimi-k3", precision="bf16,experts=mxfp4")
    arch = default_models().get("kimi-k3")
    expected = (arch.expert_params * 4.25 / 8 + (arch.params - arch.expert_params) * 2) / GB
    assert result.weights_gb == pytest.approx(expected)
    assert result.weights_gb == pytest.approx(1560, rel=0.002)  # research §3b: 1,560 GB


def test_seed_001_example_70b_at_fp16_is_140_gb() -> None:
    result = size_model(None, params=70_000_000_000, precision="fp16")
    assert result.weights_gb == pytest.approx(140.0)


@pytest.mark.parametrize(("context", "gib"), [
    (8 * 1024, 1), (32 * 1024, 4), (128 * 1024, 16), (1024 * 1024, 128),
])
def test_kv_example_of_seed_003_is_128_kib_a_token(context: int, gib: int) -> None:
    # 64 layers, 8 KV heads, head dim 128, fp8: Qwen3-32B has exactly that shape.
    result = size_model("qwen3-32b", precision="bf16", kv_precision="fp8", context=context)
    assert result.memory.kv_bytes_per_token == 2 * 64 * 8 * 128 * 1 == 131_072
    assert result.kv_gb * GB / GIB == pytest.approx(gib)


@pytest.mark.parametrize(("weights", "kv"), [
    ("bf16", "bf16"), ("fp16", "fp16"), ("int8", "bf16"), ("int4", "bf16"), ("fp8", "fp8"),
    ("fp32", "fp32"), ("mxfp4", "bf16"),
])
def test_kv_cache_format_follows_f2_rule(weights: str, kv: str) -> None:
    assert size_model("llama-3.1-8b", precision=weights).inputs.kv_precision == kv


def test_kv_precision_can_be_set_on_its_own() -> None:
    result = size_model("llama-3.1-8b", precision="bf16", kv_precision="fp8", context=1000)
    assert result.memory.kv_bytes_per_token == 2 * 32 * 8 * 128 * 1
    assert result.kv_gb == pytest.approx(65_536 * 1000 / GB)


def test_f2_multiplies_by_context_and_concurrency() -> None:
    result = size_model("llama-3.1-70b", precision="bf16", context=4096, concurrency=8)
    assert result.kv_gb == pytest.approx(80 * 2 * 8 * 128 * 4096 * 8 * 2 / GB)


def test_deepseek_v3_caches_its_576_value_mla_latent() -> None:
    result = size_model("deepseek-v3", precision="bf16", context=1000)
    assert result.memory.kv_bytes_per_token == 61 * 576 * 2
    assert result.kv_gb == pytest.approx(61 * 576 * 2 * 1000 / GB)


def test_sliding_window_layers_stop_growing_at_the_window() -> None:
    short = size_model("gpt-oss-120b", precision="bf16", context=100)
    long = size_model("gpt-oss-120b", precision="bf16", context=100_000)
    per_layer = 2 * 8 * 64 * 2
    assert short.memory.kv_bytes_per_token == 36 * per_layer
    assert long.kv_gb == pytest.approx((18 * per_layer * 100_000 + 18 * per_layer * 128) / GB)


def test_linear_attention_layers_keep_a_fixed_state_per_sequence() -> None:
    one = size_model("qwen3-next-80b-a3b", precision="bf16", context=1000)
    ten = size_model("qwen3-next-80b-a3b", precision="bf16", context=10_000)
    state = 36 * (32 * 128 * 128 + 8192 * 3) * 2
    assert one.memory.kv_state_bytes_per_sequence == state
    assert one.memory.kv_bytes_per_token == 12 * 2 * 2 * 256 * 2  # only the 12 full layers
    assert ten.kv_gb - one.kv_gb == pytest.approx(12 * 2 * 2 * 256 * 2 * 9000 / GB)


def test_kimi_k3_counts_only_its_24_mla_layers_per_token() -> None:
    result = size_model("kimi-k3", precision="native", context=4096)
    assert result.memory.kv_bytes_per_token == 24 * 576 * 2
    assert result.memory.kv_state_bytes_per_sequence > 0


def test_f3_adds_ten_percent_of_the_weights() -> None:
    m = size_model("llama-3.1-8b", precision="bf16", context=2048, concurrency=2).memory
    assert m.overhead_gb == pytest.approx(0.1 * m.weights_gb)
    assert m.total_gb == pytest.approx(m.weights_gb * 1.1 + m.kv_gb)
    assert m.activations_gb == 0


def test_custom_models_get_an_estimated_shape_with_8_kv_heads() -> None:
    result = size_model(None, params=13_000_000_000, precision="bf16", context=1000)
    assert result.inputs.estimated_shape
    assert result.memory.kv_bytes_per_token % (2 * 8 * 128 * 2) == 0
    assert result.weights_gb == pytest.approx(26.0)


def test_f6_activations_match_the_formula() -> None:
    arch = default_models().get("llama-3.1-8b")
    s, b, h, layers, vocab = 4096, 2, 4096, 32, 128_256
    assert activation_bytes(arch, s, b) == s * b * h * (2 * layers + 34) + s * b * vocab * 4


@pytest.mark.parametrize(("task", "precision"), [("lora", "bf16"), ("qlora", "int4")])
def test_f4_trains_half_a_percent_of_params_with_16_bytes(task: str, precision: str) -> None:
    result = size_model("llama-3.1-8b", precision=precision, task=task,  # type: ignore[arg-type]
                        context=4096, concurrency=2)
    arch = default_models().get("llama-3.1-8b")
    frozen = arch.params * (2 if precision == "bf16" else 0.5)
    adapters = 0.005 * arch.params * 16
    activations = activation_bytes(arch, 4096, 2)
    assert result.memory.training_state_gb == pytest.approx(adapters / GB)
    assert result.total_gb == pytest.approx((frozen + adapters + activations) * 1.1 / GB)


@pytest.mark.parametrize(("precision", "bytes_per_param"), [
    ("bf16", 16), ("fp32", 20), ("int8", 16), ("int4", 16),
])
def test_f5_full_training_counts_weights_gradients_and_adam(precision: str,
                                                            bytes_per_param: int) -> None:
    result = size_model("llama-3.1-8b", precision=precision, task="full", context=1024)
    arch = default_models().get("llama-3.1-8b")
    activations = activation_bytes(arch, 1024, 1)
    assert result.total_gb == pytest.approx(
        (arch.params * bytes_per_param + activations) * 1.1 / GB)


def test_qlora_refuses_a_16_bit_base() -> None:
    with pytest.raises(ConfigError, match="precision: QLoRA"):
        size_model("llama-3.1-8b", precision="bf16", task="qlora")


def test_calibrated_mode_refuses_training_tasks() -> None:
    with pytest.raises(ConfigError, match="mode: calibrated"):
        size_model("llama-3.1-8b", precision="bf16", task="full", mode="calibrated")


@pytest.mark.parametrize(("field", "kwargs"), [
    ("context", {"context": 0}),
    ("concurrency", {"concurrency": -1}),
    ("precision", {"precision": "int5"}),
    ("precision", {"precision": "bf16,shared=fp8"}),
    ("kv_precision", {"kv_precision": "fp7"}),
    ("memory_fraction", {"memory_fraction": 1.5}),
    ("usd_per_gpu_hour", {"usd_per_gpu_hour": 2.5}),
])
def test_bad_arguments_name_the_field(field: str, kwargs: dict[str, object]) -> None:
    arguments: dict[str, object] = {"precision": "bf16", **kwargs}
    with pytest.raises(ConfigError, match=f"^{field}:"):
        size_model("llama-3.1-8b", **arguments)  # type: ignore[arg-type]


@given(params=st.integers(min_value=10**8, max_value=10**13),
       precision=st.sampled_from(["fp32", "bf16", "fp8", "int4", "int2"]))
def test_weights_are_params_times_bytes(params: int, precision: str) -> None:
    per_param = {"fp32": 4, "bf16": 2, "fp8": 1, "int4": 0.5, "int2": 0.25}[precision]
    result = size_model("llama-3.1-70b", precision=precision, params=params)
    assert math.isclose(result.weights_gb, params * per_param / GB, rel_tol=1e-12)


@given(context=st.integers(min_value=1, max_value=2_000_000),
       concurrency=st.integers(min_value=1, max_value=512))
def test_full_attention_kv_is_linear_in_context_and_concurrency(context: int,
                                                                concurrency: int) -> None:
    result = size_model("qwen3-8b", precision="bf16", context=context, concurrency=concurrency)
    assert math.isclose(result.kv_gb, 36 * 2 * 8 * 128 * 2 * context * concurrency / GB,
                        rel_tol=1e-12)


def test_downloading_the_mxfp4_kimi_k3_at_1_gb_s_takes_about_25_minutes() -> None:
    result = size_model("kimi-k3", precision="mxfp4", params=K3_PARAMS)
    assert round(result.download_min()) == 25  # 1.5 TB at 1 GB/s, seed 003
