"""Hybrid attention / state-space layouts: read from their config.json fields, or refused.

Each fixture types in the published config.json fields sizing reads (no download at run time);
the source of each is named above it.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from spendguard import ConfigError, size_model
from spendguard.cli import main
from spendguard.sizing import read_hf_config
from tests.sizing.test_sizing_data import QWEN3_NEXT

# huggingface.co/ai21labs/Jamba-v0.1/blob/main/config.json (the fields sizing reads).
JAMBA_V01 = {
    "architectures": ["JambaForCausalLM"], "model_type": "jamba", "hidden_size": 4096,
    "intermediate_size": 14336, "num_hidden_layers": 32, "num_attention_heads": 32,
    "num_key_value_heads": 8, "attn_layer_offset": 4, "attn_layer_period": 8,
    "expert_layer_offset": 1, "expert_layer_period": 2, "num_experts": 16,
    "num_experts_per_tok": 2, "mamba_d_conv": 4, "mamba_d_state": 16, "mamba_dt_rank": 256,
    "mamba_expand": 2, "vocab_size": 65536, "tie_word_embeddings": False,
    "max_position_embeddings": 262144, "torch_dtype": "bfloat16",
}
# huggingface.co/Zyphra/Zamba2-7B/blob/main/config.json (trimmed).
ZAMBA2_7B = {
    "model_type": "zamba2", "num_hidden_layers": 81, "num_attention_heads": 32,
    "num_key_value_heads": 32, "num_mem_blocks": 2, "mamba_headdim": 64, "mamba_ngroups": 2,
    "layers_block_type": (["mamba"] * 6 + ["hybrid"]) * 11 + ["mamba"] * 4, "vocab_size": 32000,
}
# huggingface.co/tiiuae/Falcon-H1-7B-Instruct/blob/main/config.json (trimmed).
FALCON_H1_7B = {
    "model_type": "falcon_h1", "num_hidden_layers": 44, "hidden_size": 3072,
    "num_attention_heads": 12, "num_key_value_heads": 2, "head_dim": 128, "mamba_d_conv": 4,
    "mamba_d_head": 128, "mamba_d_ssm": 3072, "mamba_d_state": 256, "mamba_expand": 2,
    "mamba_n_groups": 1, "mamba_n_heads": 24, "max_position_embeddings": 262144,
}
# huggingface.co/nvidia/Nemotron-H-8B-Base-8K/blob/main/config.json (trimmed): a layout no
# reader in spendguard knows, refused by its pattern field.
NEMOTRON_H = {
    "model_type": "nemotron_h", "num_hidden_layers": 52, "hidden_size": 4096,
    "hybrid_override_pattern": "M-M-M-M*-M-M-M-M-M*-M-M-M-M-M*-M-M-M-M-M*-M-M-M-M-M-",
    "num_attention_heads": 32, "num_key_value_heads": 8, "ssm_state_size": 128,
    "vocab_size": 131072,
}
# huggingface.co/state-spaces/mamba-130m-hf/blob/main/config.json (trimmed).
MAMBA_130M = {
    "model_type": "mamba", "hidden_size": 768, "num_hidden_layers": 24, "state_size": 16,
    "expand": 2, "conv_kernel": 4, "vocab_size": 50280,
}


def _write(tmp_path: Path, config: dict[str, Any]) -> Path:
    path = tmp_path / "config.json"
    path.write_text(json.dumps(config), encoding="utf-8")
    return path


def test_jamba_is_read_with_attention_every_eighth_layer_and_experts_every_second(
        tmp_path: Path) -> None:
    arch = read_hf_config(_write(tmp_path, JAMBA_V01))
    # Published: 51.6 B parameters, 12 B active (AI21's Jamba announcement and model card).
    assert arch.params == pytest.approx(51.6e9, rel=0.005)
    assert arch.active_params == pytest.approx(12e9, rel=0.03)
    assert arch.attention.kinds == "4 full + 28 linear"
    assert arch.moe is not None
    assert (arch.moe.experts, arch.moe.experts_per_token) == (16, 2)
    # 16 expert layers of 16 experts, each a SwiGLU MLP of 3 × 4096 × 14336.
    assert arch.moe.expert_params == 16 * 16 * 3 * 4096 * 14336


def test_jamba_keeps_kv_for_its_four_attention_layers_and_a_mamba_state_for_the_rest(
        tmp_path: Path) -> None:
    result = size_model(_write(tmp_path, JAMBA_V01), precision="bf16", context=4096,
                        gpu="h200")
    assert result.memory.kv_bytes_per_token == 4 * 2 * 8 * 128 * 2
    # 28 Mamba layers × (SSM state 8192 × 16 + convolution tail 8192 × 3) values, BF16.
    assert result.memory.kv_state_bytes_per_sequence == 28 * (8192 * 16 + 8192 * 3) * 2
    assert result.weights_gb == pytest.approx(103.1, abs=0.1)
    assert result.best is not None
    assert result.best.count == 1


def test_qwen3_next_is_read_with_a_full_attention_layer_every_fourth(tmp_path: Path) -> None:
    arch = read_hf_config(_write(tmp_path, QWEN3_NEXT))
    assert arch.attention.kinds == "12 full + 36 linear"
    assert arch.params == pytest.approx(79.7e9, rel=0.01)
    assert arch.moe is not None
    assert (arch.moe.experts, arch.moe.experts_per_token) == (512, 10)


@pytest.mark.parametrize(("config", "field"), [
    (ZAMBA2_7B, "layers_block_type"),
    (FALCON_H1_7B, "mamba_d_ssm"),
    (NEMOTRON_H, "hybrid_override_pattern"),
    ({**JAMBA_V01, "model_type": "zamba", "num_hidden_layers": 76}, "attn_layer_period"),
    ({**QWEN3_NEXT, "layer_types": ["mamba"] * 48}, "layer_types"),
    (MAMBA_130M, "state_size"),
], ids=["zamba2", "falcon-h1", "nemotron-h", "zamba", "unknown-layer-type", "mamba"])
def test_a_hybrid_layout_spendguard_does_not_read_is_refused_naming_its_field(
        tmp_path: Path, config: dict[str, Any], field: str) -> None:
    with pytest.raises(ConfigError, match=f"config.json field {field}"):
        read_hf_config(_write(tmp_path, config))


def test_the_cli_refuses_a_parallel_hybrid_without_a_traceback(tmp_path: Path) -> None:
    path = _write(tmp_path, FALCON_H1_7B)
    result = CliRunner().invoke(main, ["size", "--model", str(path), "--precision", "bf16",
                                       "--context", "4k", "--concurrency", "1"])
    assert result.exit_code == 2
    assert "mamba_d_ssm" in result.output
    assert "--params" in result.output
    assert "Traceback" not in result.output
