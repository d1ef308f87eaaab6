"""GPU fit (F7), the weights-only floor, speed (F8, single stream, roofline) and calibrated mode."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from spendguard import size_model
from spendguard._sizing import default_gpus, default_models
from spendguard._sizing.calibrated import engine_fit
from spendguard._sizing.fit import GpuCount, gpus_needed, round_to_rentable
from spendguard._sizing.memory import GB, GIB, kv_shape, weight_bytes
from spendguard._sizing.precision import parse_precision
from spendguard._sizing.speed import Roofline, roofline

K3_PARAMS = 2_800_000_000_000


@pytest.mark.parametrize(("gpu", "count"), [("h100", 18), ("h200", 10), ("b200", 8),
                                            ("gb300", 5)])
def test_kimi_k3_weights_only_floor_matches_the_seed_table(gpu: str, count: int) -> None:
    result = size_model("kimi-k3", precision="int4", params=K3_PARAMS)
    assert result.floor[gpu] == count


def test_the_floor_uses_the_seeds_192_gb_b200_too() -> None:
    # Seed 003 lists B200 at 192 GB; the catalogue holds the 180 GB HGX part. Both give 8.
    assert -(-1400 // 192) == 8
    assert size_model("kimi-k3", precision="int4", params=K3_PARAMS, gpu="b200").floor == {
        "b200": 8}


@pytest.mark.parametrize(("raw", "count"), [(1, 1), (2, 2), (3, 4), (5, 8), (8, 8), (9, 16),
                                            (17, 24), (33, 40)])
def test_f7_rounds_to_1_2_4_8_then_whole_nodes(raw: int, count: int) -> None:
    assert round_to_rentable(raw, 8) == count


def test_f7_keeps_ten_percent_headroom() -> None:
    h100 = default_gpus().get("h100")
    assert gpus_needed(72.0, h100) == 1  # exactly 90 % of 80 GB
    assert gpus_needed(72.01, h100) == 2


def test_consumer_cards_are_limited_to_one_node() -> None:
    rtx = default_gpus().get("rtx-4090")
    assert gpus_needed(8 * 24 * 0.9, rtx) == 8
    assert gpus_needed(8 * 24 * 0.9 + 1, rtx) is None
    result = size_model("llama-3.1-405b", precision="bf16", gpu="rtx-4090")
    assert result.options == ()


def test_options_rank_by_count_then_vram_then_bandwidth() -> None:
    options = size_model("llama-3.1-8b", precision="bf16", context=8192, concurrency=4).options
    keys = [(o.count, o.total_vram_gb, -o.bandwidth_tb_s / o.count) for o in options]
    assert keys == sorted(keys)
    # 17.7 GB of weights + 10 % and 4.3 GB of KV exceed 90 % of 24 GB: the first fit has 32 GB.
    assert options[0].gpu == "rtx-5090"


def test_ties_on_vram_go_to_the_higher_bandwidth() -> None:
    options = size_model("llama-3.1-8b", precision="int8", context=4096).options
    first_24 = [o.gpu for o in options if o.total_vram_gb == 24]
    assert first_24 == ["rtx-4090", "rtx-3090", "a10g", "l4"]


@pytest.mark.parametrize(("params", "gpu"), [
    (7e9, "rtx-4080-super"), (14e9, "rtx-4090"), (32e9, "l40s"), (70e9, "h100"),
])
def test_single_gpu_tier_of_seed_003_fits_one_card_at_4_bit(params: float, gpu: str) -> None:
    result = size_model(None, params=int(params), precision="int4", context=8192, gpu=gpu)
    assert result.best is not None and result.best.count == 1


def test_f8_decode_ceiling_is_aggregate_bandwidth_over_active_bytes() -> None:
    result = size_model("kimi-k3", precision="native", gpu="h200", context=4096)
    option = result.options[0]
    assert option.decode_tok_s_ceiling == pytest.approx(
        option.count * 4.8e12 / (result.active_weights_gb * GB))


def test_moe_speed_follows_active_parameters() -> None:
    moe = size_model("qwen3-235b-a22b", precision="bf16")
    assert moe.active_weights_gb == pytest.approx(21.6 * 2, rel=1e-9)
    assert moe.weights_gb == pytest.approx(235.09 * 2, rel=1e-9)


def test_single_stream_estimate_is_seventy_percent_of_bandwidth() -> None:
    result = size_model("llama-3.1-8b", precision="bf16", context=4096, gpu="h100")
    option = result.options[0]
    read = result.active_weights_gb * GB + 131_072 * 4096
    assert option.single_stream_tok_s == pytest.approx(3.35e12 * 0.7 / read)


def _gpu_math_roofline(model: str, params: float, precision: str, gpu: str, count: int,
                       batch: int) -> Roofline:
    arch = default_models().get(model).with_params(int(params), int(params))
    chosen = parse_precision(precision)
    return roofline(arch, weights_bytes=weight_bytes(arch, chosen), expert_bytes=0,
                    kv=kv_shape(arch, "fp8" if precision == "fp8" else "fp16"),
                    gpus=GpuCount(default_gpus().get(gpu), count),
                    compute="fp8" if precision == "fp8" else "bf16", context=4096, batch=batch)


def test_gpu_math_reference_llama_8b_fp8_on_h100() -> None:
    # seed 002, `--model llama-8b --gpu h100 --dtype fp8`, at the batch it fitted (274)
    r = _gpu_math_roofline("llama-3.1-8b", 8e9, "fp8", "h100", 1, 274)
    assert r.decode_bytes / GIB == pytest.approx(76.0, abs=0.05)
    assert r.decode_memory_s * 1e3 == pytest.approx(24.34, abs=0.005)
    assert r.decode_flops / 1e12 == pytest.approx(4.4, abs=0.05)
    assert r.decode_compute_s * 1e3 == pytest.approx(2.22, abs=0.005)
    assert round(r.decode_ratio, 1) == 11.0 and r.decode_bound == "memory"
    assert round(1 / r.decode_memory_s) == 41 and round(r.decode_tok_s) == 11_255
    assert r.prefill_flops / 1e12 == pytest.approx(65.5, abs=0.05)
    assert r.prefill_compute_s * 1e3 == pytest.approx(33.1, abs=0.05)
    assert r.prefill_memory_s * 1e3 == pytest.approx(2.4, abs=0.05)
    assert r.prefill_bound == "compute"


def test_gpu_math_reference_llama_405b_on_8_h200() -> None:
    r = _gpu_math_roofline("llama-3.1-405b", 405e9, "fp16", "h200", 8, 173)
    assert r.decode_bytes / GIB == pytest.approx(1095.0, abs=0.05)
    assert r.decode_memory_s * 1e3 == pytest.approx(30.62, abs=0.005)
    assert r.decode_flops / 1e12 == pytest.approx(140.1, abs=0.05)
    assert r.decode_compute_s * 1e3 == pytest.approx(17.70, abs=0.005)
    assert round(r.decode_ratio, 1) == 1.7 and r.decode_bound == "memory"
    assert round(r.decode_tok_s) == 5650
    assert r.prefill_flops / 1e12 == pytest.approx(3317.8, abs=0.05)
    assert r.prefill_compute_s * 1e3 == pytest.approx(419.1, abs=0.05)


@pytest.mark.parametrize(("model", "params", "precision", "weights_gib", "kv_per_token",
                          "per_sequence_gib"), [
    ("llama-3.1-70b", 70.6e9, "fp16", 131.5, 327_680, 1.250),
    ("llama-3.1-8b", 8.0e9, "fp8", 7.5, 65_536, 0.250),
    ("llama-3.1-405b", 405e9, "fp16", 754.4, 516_096, 1.969),
])
def test_gpu_math_reference_weights_and_kv(model: str, params: float, precision: str,
                                           weights_gib: float, kv_per_token: int,
                                           per_sequence_gib: float) -> None:
    result = size_model(model, precision=precision, params=int(params),
                        active_params=int(params), context=4096)
    assert result.weights_gb * GB / GIB == pytest.approx(weights_gib, abs=0.05)
    assert result.memory.kv_bytes_per_token == kv_per_token
    assert result.sequence_kv_gb * GB / GIB == pytest.approx(per_sequence_gib, abs=0.0005)


def test_gpu_math_reference_70b_needs_two_h100_for_the_weights() -> None:
    result = size_model("llama-3.1-70b", precision="fp16", params=70_600_000_000, gpu="h100")
    assert result.floor == {"h100": 2}


@pytest.mark.parametrize(("model", "params", "gpu", "count", "batch", "rate", "usd"), [
    ("llama-3.1-8b", 8e9, "h100", 1, 274, "2.50", "0.15"),
    ("llama-3.1-405b", 405e9, "h200", 8, 173, "3.80", "3.74"),
])
def test_gpu_math_reference_cost_per_million_at_40_percent(model: str, params: float, gpu: str,
                                                           count: int, batch: int, rate: str,
                                                           usd: str) -> None:
    from decimal import Decimal

    from spendguard._sizing.rent import cost_per_million_output_usd

    precision = "fp8" if params == 8e9 else "fp16"
    r = _gpu_math_roofline(model, params, precision, gpu, count, batch)
    cost = cost_per_million_output_usd(Decimal(rate) * count, r.decode_tok_s, 0.4)
    assert cost.quantize(Decimal("0.01")) == Decimal(usd)


def test_roofline_reports_prefill_compute_bound_and_small_batch_decode_memory_bound() -> None:
    result = size_model("llama-3.1-70b", precision="bf16", context=8192, concurrency=1)
    assert result.roofline is not None
    assert result.roofline.decode_bound == "memory"
    assert result.roofline.prefill_bound == "compute"


def test_cost_uses_the_gpus_catalogued_price_range_when_no_rate_is_given() -> None:
    result = size_model("llama-3.1-8b", precision="bf16", gpu="h100", concurrency=16)
    low, high = result.costs
    assert (low.usd_per_gpu_hour, high.usd_per_gpu_hour) == (
        default_gpus().get("h100").usd_per_hour_low, default_gpus().get("h100").usd_per_hour_high)
    assert low.usd_per_million_output < high.usd_per_million_output


def test_training_time_is_6_active_params_tokens_at_35_percent_of_peak() -> None:
    result = size_model("llama-3.1-8b", precision="bf16", task="full", context=2048,
                        gpu="h100", train_tokens=10**9)
    assert result.training is not None and result.best is not None
    seconds = 6 * 7.5e9 * 1e9 / (result.best.count * 989.5e12 * 0.35)
    assert result.training.hours == pytest.approx(seconds / 3600)


def test_lora_training_time_uses_4_times_active_params() -> None:
    full = size_model("llama-3.1-8b", precision="int4", task="qlora", gpu="h100",
                      train_tokens=10**9)
    assert full.training is not None
    assert full.training.flops == pytest.approx(4 * 7.5e9 * 1e9)


def test_calibrated_mode_closes_vllms_accounting_for_llama_8b_on_h100() -> None:
    result = size_model("llama-3.1-8b", precision="bf16", context=16_000, mode="calibrated",
                        gpu="h100")
    engine = result.engine
    assert engine is not None and engine.count == 1
    assert engine.budget_gib == pytest.approx(0.9 * 79.18)
    assert engine.kv_available_gib == pytest.approx(51.38, abs=0.05)  # llm-d measured 51.38
    assert engine.kv_capacity_tokens == pytest.approx(420_905, rel=0.002)


def test_calibrated_kv_defaults_to_the_activation_dtype_even_for_fp8_weights() -> None:
    result = size_model("llama-3.1-70b", precision="fp8", mode="calibrated")
    assert result.inputs.kv_precision == "bf16"


def test_calibrated_tensor_parallel_splits_kv_heads_but_replicates_mla() -> None:
    h100 = default_gpus().get("h100")
    llama = default_models().get("llama-3.1-70b")
    deepseek = default_models().get("deepseek-v3")
    one = engine_fit(llama, weights_bytes=1e9, kv_format="bf16", gpu=h100, count=1,
                     context=1000, concurrency=1)
    two = engine_fit(llama, weights_bytes=1e9, kv_format="bf16", gpu=h100, count=2,
                     context=1000, concurrency=1)
    assert two.request_kv_bytes == one.request_kv_bytes / 2
    mla_one = engine_fit(deepseek, weights_bytes=1e9, kv_format="bf16", gpu=h100, count=1,
                         context=1000, concurrency=1)
    mla_eight = engine_fit(deepseek, weights_bytes=1e9, kv_format="bf16", gpu=h100, count=8,
                           context=1000, concurrency=1)
    assert mla_eight.request_kv_bytes == mla_one.request_kv_bytes


def test_calibrated_mode_picks_more_gpus_when_concurrency_outgrows_kv_space() -> None:
    few = size_model("llama-3.1-8b", precision="bf16", context=16_384, concurrency=8,
                     mode="calibrated", gpu="h100")
    many = size_model("llama-3.1-8b", precision="bf16", context=131_072, concurrency=64,
                      mode="calibrated", gpu="h100")
    assert few.best is not None and many.best is not None
    assert few.best.count == 1 and many.best.count > 1
    assert many.engine is not None and many.engine.fits


@given(total=st.floats(min_value=0.1, max_value=50_000))
def test_f7_count_always_holds_the_workload(total: float) -> None:
    h200 = default_gpus().get("h200")
    count = gpus_needed(total, h200)
    assert count is not None
    assert count * 141 * 0.9 >= total - 1e-6
    assert count in (1, 2, 4, 8) or count % 8 == 0
