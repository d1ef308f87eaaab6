"""The data tables (GPUs, model architectures) and reading a Hugging Face config.json."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from spendguard import ConfigError, PriceFileError, UnknownModelError, size_model
from spendguard.sizing import load_gpus, load_models, read_hf_config
from tests.paths import REPO

# The tables the package ships (``pricing/`` in a checkout).
BUNDLED_MODELS = REPO / "pricing" / "open_models.toml"
BUNDLED_GPUS = REPO / "pricing" / "gpus.toml"
LLAMA_31_8B = {
    "architectures": ["LlamaForCausalLM"], "model_type": "llama", "hidden_size": 4096,
    "intermediate_size": 14336, "num_attention_heads": 32, "num_hidden_layers": 32,
    "num_key_value_heads": 8, "vocab_size": 128256, "tie_word_embeddings": False,
    "torch_dtype": "bfloat16", "max_position_embeddings": 131072,
}
DEEPSEEK_V3 = {
    "model_type": "deepseek_v3", "hidden_size": 7168, "intermediate_size": 18432,
    "moe_intermediate_size": 2048, "num_hidden_layers": 61, "num_attention_heads": 128,
    "num_key_value_heads": 128, "n_shared_experts": 1, "n_routed_experts": 256,
    "num_experts_per_tok": 8, "first_k_dense_replace": 3, "moe_layer_freq": 1,
    "q_lora_rank": 1536, "kv_lora_rank": 512, "qk_nope_head_dim": 128, "qk_rope_head_dim": 64,
    "v_head_dim": 128, "vocab_size": 129280, "tie_word_embeddings": False,
    "quantization_config": {"quant_method": "fp8", "weight_block_size": [128, 128]},
}
GPT_OSS_20B = {
    "model_type": "gpt_oss", "hidden_size": 2880, "intermediate_size": 2880,
    "num_hidden_layers": 24, "num_attention_heads": 64, "num_key_value_heads": 8,
    "head_dim": 64, "num_local_experts": 32, "num_experts_per_tok": 4, "vocab_size": 201088,
    "sliding_window": 128, "tie_word_embeddings": False,
    "layer_types": ["sliding_attention", "full_attention"] * 12,
    "quantization_config": {"quant_method": "mxfp4"},
}
QWEN3_NEXT = {
    "model_type": "qwen3_next", "hidden_size": 2048, "intermediate_size": 5120,
    "moe_intermediate_size": 512, "shared_expert_intermediate_size": 512, "num_experts": 512,
    "num_experts_per_tok": 10, "decoder_sparse_step": 1, "num_hidden_layers": 48,
    "num_attention_heads": 16, "num_key_value_heads": 2, "head_dim": 256,
    "full_attention_interval": 4, "linear_num_key_heads": 16, "linear_num_value_heads": 32,
    "linear_key_head_dim": 128, "linear_value_head_dim": 128, "linear_conv_kernel_dim": 4,
    "vocab_size": 151936, "tie_word_embeddings": False,
}
_MLA_LAYERS = [*range(4, 93, 4), 93]
KIMI_K3 = {
    "architectures": ["KimiK3ForConditionalGeneration"],
    "text_config": {
        "model_type": "kimi_k3", "hidden_size": 7168, "num_hidden_layers": 93,
        "num_attention_heads": 96, "num_key_value_heads": 96, "q_lora_rank": 1536,
        "kv_lora_rank": 512, "qk_nope_head_dim": 128, "qk_rope_head_dim": 64,
        "v_head_dim": 128, "num_experts": 896, "num_experts_per_token": 16,
        "num_shared_experts": 2, "moe_intermediate_size": 3072,
        "routed_expert_hidden_size": 3584, "first_k_dense_replace": 1,
        "intermediate_size": 33792, "vocab_size": 163840,
        "linear_attn_config": {"num_heads": 96, "head_dim": 128, "short_conv_kernel_size": 4,
                               "kda_layers": [i for i in range(1, 94) if i not in _MLA_LAYERS],
                               "full_attn_layers": _MLA_LAYERS},
    },
}


def _write(folder: Path, config: dict[str, Any], total_size: int | None = None) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "config.json").write_text(json.dumps(config))
    if total_size is not None:
        index = {"metadata": {"total_size": total_size}, "weight_map": {}}
        (folder / "model.safetensors.index.json").write_text(json.dumps(index))
    return folder


@pytest.mark.parametrize(("config", "catalogued"), [
    (LLAMA_31_8B, "llama-3.1-8b"), (DEEPSEEK_V3, "deepseek-v3"), (GPT_OSS_20B, "gpt-oss-20b"),
    (QWEN3_NEXT, "qwen3-next-80b-a3b"), (KIMI_K3, "kimi-k3"),
])
def test_config_json_counts_match_the_catalogue(tmp_path: Path, config: dict[str, Any],
                                                catalogued: str) -> None:
    arch = read_hf_config(_write(tmp_path / catalogued, config))
    known = load_models(BUNDLED_MODELS).get(catalogued)
    assert arch.params == pytest.approx(known.params, rel=0.02)
    assert arch.active_params == pytest.approx(known.active_params, rel=0.05)
    assert arch.attention.kinds == known.attention.kinds
    assert (arch.moe is None) == (known.moe is None)


def test_config_json_reads_the_attention_layout(tmp_path: Path) -> None:
    k3 = read_hf_config(_write(tmp_path / "k3", KIMI_K3)).attention
    assert (k3.mla_layers, k3.linear_layers, k3.kv_lora_rank, k3.rope_head_dim) == (24, 69, 512,
                                                                                    64)
    assert k3.linear_state_values == 96 * 128 * 128 + 3 * 96 * 128 * 3
    oss = read_hf_config(_write(tmp_path / "oss", GPT_OSS_20B)).attention
    assert (oss.full_layers, oss.sliding_layers, oss.sliding_window) == (12, 12, 128)


def test_config_json_native_precision_comes_from_its_quantisation(tmp_path: Path) -> None:
    assert read_hf_config(_write(tmp_path / "a", GPT_OSS_20B)).native_precision == (
        "bf16,experts=mxfp4")
    assert read_hf_config(_write(tmp_path / "b", DEEPSEEK_V3)).native_precision == (
        "fp8,embeddings=bf16")
    assert read_hf_config(_write(tmp_path / "c", LLAMA_31_8B)).native_precision == "bf16"


def test_a_config_folder_is_sized_from_its_checkpoint_size(tmp_path: Path) -> None:
    folder = _write(tmp_path / "Llama-3.1-8B", LLAMA_31_8B, total_size=16_060_522_496)
    result = size_model(folder, precision="native", context=1024)
    assert result.inputs.weights_from_checkpoint
    assert result.weights_gb == pytest.approx(16.060522496)
    assert result.memory.kv_bytes_per_token == 131_072
    assert size_model(folder / "config.json", precision="fp8").weights_gb == pytest.approx(
        8.03, rel=0.01)


def test_a_missing_or_broken_config_is_a_config_error(tmp_path: Path) -> None:
    (tmp_path / "config.json").write_text("{not json")
    with pytest.raises(ConfigError, match="model:"):
        read_hf_config(tmp_path)
    with pytest.raises(ConfigError, match="needs num_hidden_layers"):
        read_hf_config(_write(tmp_path / "empty", {"hidden_size": 8}))


def test_unknown_model_lists_close_matches() -> None:
    with pytest.raises(UnknownModelError) as info:
        size_model("llama-3.1-7b", precision="bf16")
    assert info.value.kind == "model"
    assert "llama-3.1-8b" in info.value.suggestions
    assert "config.json" in str(info.value)


def test_unknown_gpu_lists_close_matches() -> None:
    with pytest.raises(UnknownModelError) as info:
        size_model("llama-3.1-8b", precision="bf16", gpu="H1OO")
    assert info.value.kind == "gpu"
    assert info.value.suggestions


def test_models_are_found_by_hugging_face_id_in_any_case() -> None:
    models = load_models(BUNDLED_MODELS)
    assert models.get("Meta-Llama/Llama-3.3-70B-Instruct").id == "llama-3.1-70b"
    assert load_gpus(BUNDLED_GPUS).get("H100_SXM").id == "h100"


def test_every_gpu_has_a_source_and_a_date_and_priced_ones_say_where() -> None:
    for gpu in load_gpus(BUNDLED_GPUS):
        assert gpu.source and gpu.as_of
        if gpu.usd_per_hour_low is not None:
            assert gpu.price_source and gpu.price_as_of
            assert gpu.usd_per_hour_high is not None
            assert gpu.usd_per_hour_low <= gpu.usd_per_hour_high


def test_every_model_is_internally_consistent() -> None:
    for arch in load_models(BUNDLED_MODELS):
        layout = arch.attention
        assert layout.full_layers + layout.sliding_layers + layout.mla_layers + (
            layout.linear_layers) == arch.layers
        assert arch.active_params <= arch.params
        assert arch.source and arch.as_of


_GOOD_GPU = """
[gpu.test]
name = "Test"
kind = "datacenter"
memory_gb = 80
bandwidth_tb_s = 3
bf16_tflops = 900
source = "here"
as_of = "2026-09"
"""


@pytest.mark.parametrize(("text", "field"), [
    (_GOOD_GPU.replace('source = "here"\n', ""), "source"),
    (_GOOD_GPU.replace("memory_gb = 80", "memory_gb = -1"), "memory_gb"),
    (_GOOD_GPU + 'usd_per_hour = [2.5, 3.0]\nprice_source = "x"\nprice_as_of = "2026-09"\n',
     "usd_per_hour.0"),
    (_GOOD_GPU + 'usd_per_hour = ["2.5", "3.0"]\n', "usd_per_hour"),
    (_GOOD_GPU + "colour = 'green'\n", "colour"),
])
def test_a_bad_gpu_file_names_file_entry_and_field(tmp_path: Path, text: str,
                                                   field: str) -> None:
    path = tmp_path / "gpus.toml"
    path.write_text(text)
    with pytest.raises(PriceFileError) as info:
        load_gpus(path)
    assert (info.value.path, info.value.entry, info.value.field) == (str(path), "test", field)
    assert str(path) in str(info.value) and "[gpu.test]" in str(info.value)


def test_a_good_gpu_file_loads(tmp_path: Path) -> None:
    path = tmp_path / "gpus.toml"
    path.write_text(_GOOD_GPU)
    catalogue = load_gpus(path)
    result = size_model("llama-3.1-8b", precision="bf16", gpus=catalogue)
    assert [o.gpu for o in result.options] == ["test"]


def test_a_bad_model_file_names_file_entry_and_field(tmp_path: Path) -> None:
    path = tmp_path / "models.toml"
    path.write_text('[model.x]\nname = "x"\nfamily = "llama"\nparams = 10\nactive_params = 20\n'
                    'layers = 1\nhidden_size = 1\nattention_heads = 1\nkv_heads = 1\n'
                    'head_dim = 1\nvocab_size = 1\nsource = "s"\nas_of = "2026-09"\n')
    with pytest.raises(PriceFileError, match=r"\[model.x\]") as info:
        load_models(path)
    assert (info.value.entry, info.value.field) == ("x", "active_params")


def test_not_toml_is_a_price_file_error(tmp_path: Path) -> None:
    path = tmp_path / "gpus.toml"
    path.write_text("[gpu.x\n")
    with pytest.raises(PriceFileError, match="not valid TOML"):
        load_gpus(path)
