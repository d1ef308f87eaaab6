"""Reading a Hugging Face ``config.json`` (and ``model.safetensors.index.json``) from disk.

No network: the files must be local. Parameter totals are counted from the shapes (attention,
MLP or experts, embeddings; norms and biases are too small to count), and the index's
``total_size``, when present, gives the checkpoint's real bytes.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from spendguard._core.errors import ConfigError
from spendguard._sizing.arch import AttentionLayout, ModelArch, MoE
from spendguard._sizing.hf_defaults import with_defaults

__all__ = ["arch_from_config", "read_hf_config"]


def _int(config: Mapping[str, Any], *keys: str, default: int | None = None) -> int:
    for key in keys:
        value = config.get(key)
        if isinstance(value, int) and not isinstance(value, bool):
            return value
    if default is None:
        raise ConfigError(f"config.json: needs {' or '.join(keys)} (a whole number)")
    return default


# Layouts spendguard refuses, by model_type: the config field that shows it, and why.
_REFUSED = {
    "zamba": (("attn_layer_period",), "Zamba reuses one shared attention block at every "
              "attention position, so its parameters are not one set per layer"),
    "zamba2": (("hybrid_layer_ids", "layers_block_type", "num_mem_blocks"),
               "Zamba2 shares attention blocks (with per-position LoRA adapters) across its "
               "Mamba2 layers"),
    "falcon_h1": (("mamba_d_ssm",), "Falcon-H1 runs attention and a Mamba2 mixer side by side "
                  "in every layer"),
    "mamba": (("state_size",), "a pure state-space model: no attention layers to size"),
    "mamba2": (("state_size",), "a pure state-space model: no attention layers to size"),
    "falcon_mamba": (("state_size",), "a pure state-space model: no attention layers to size"),
}
# Fields that mark a state-space or hybrid layout. A config carrying one that is not read below
# is refused: sizing it as all-attention would give a wrong shape without a word.
_HYBRID_FIELDS = ("attn_layer_period", "attn_layer_offset", "hybrid_layer_ids",
                  "layers_block_type", "hybrid_override_pattern", "block_types")
_SSM_PREFIXES = ("mamba", "ssm_", "n_mamba")
_KNOWN_LAYER_TYPES = frozenset({"full_attention", "sliding_attention", "linear_attention"})


def _refuse(field: str, model_type: str, why: str) -> ConfigError:
    return ConfigError(
        f"model: config.json field {field} ({model_type or 'unknown model_type'}): {why}; "
        "spendguard does not size this layout. Pass --params N (and --active-params N) for an "
        "estimated shape instead")


def _check_understood(cfg: Mapping[str, Any]) -> None:
    """Refuse a layout spendguard would misread, naming the config field that shows it."""
    model_type = str(cfg.get("model_type", ""))
    if model_type in _REFUSED:
        fields, why = _REFUSED[model_type]
        field = next((f for f in fields if f in cfg), fields[0])
        raise _refuse(field, model_type, why)
    if model_type != "jamba":
        for key in cfg:
            if key in _HYBRID_FIELDS or key.startswith(_SSM_PREFIXES):
                raise _refuse(key, model_type, "a state-space / hybrid layer layout that "
                              "spendguard does not read")
    unknown = sorted({str(kind) for kind in cfg.get("layer_types") or ()} - _KNOWN_LAYER_TYPES)
    if unknown:
        raise _refuse("layer_types", model_type,
                      f"layer kind {', '.join(unknown)} is not one spendguard understands")


def _mamba(cfg: Mapping[str, Any], hidden: int) -> tuple[dict[str, int], int]:
    """Jamba's Mamba (v1) mixer: the state one layer keeps, and its parameters.

    State per sequence: the SSM state (d_inner × d_state) and the convolution tail
    (d_inner × (d_conv - 1)). Parameters: in_proj h → 2·d_inner, the depthwise convolution,
    x_proj d_inner → dt_rank + 2·d_state, dt_proj dt_rank → d_inner, A and D, out_proj.
    """
    inner = _int(cfg, "mamba_expand", default=2) * hidden
    state = _int(cfg, "mamba_d_state", default=16)
    kernel = _int(cfg, "mamba_d_conv", default=4)
    dt_rank = _int(cfg, "mamba_dt_rank", default=-(-hidden // 16))
    params = (hidden * 2 * inner + inner * kernel + inner * (dt_rank + 2 * state)
              + dt_rank * inner + inner * state + inner * hidden)
    layout = {"linear_heads": 1, "linear_key_head_dim": state, "linear_value_head_dim": inner,
              "linear_conv_dim": inner, "linear_conv_kernel": kernel}
    return layout, params


def _layer_kinds(cfg: Mapping[str, Any], layers: int) -> list[str]:
    """Each layer's attention kind, from ``layer_types`` or the keys that imply a pattern."""
    if cfg.get("model_type") == "jamba":
        # Jamba: attention at layer i when i % attn_layer_period == attn_layer_offset, Mamba else.
        period = _int(cfg, "attn_layer_period", default=8)
        offset = _int(cfg, "attn_layer_offset", default=4)
        return ["full_attention" if i % period == offset else "linear_attention"
                for i in range(layers)]
    linear_cfg = cfg.get("linear_attn_config") or {}
    if linear_cfg.get("kda_layers"):
        # Kimi: the 1-based indices of its Kimi Delta Attention layers.
        return ["linear_attention" if i + 1 in linear_cfg["kda_layers"] else "full_attention"
                for i in range(layers)]
    if cfg.get("layer_types"):
        return list(cfg["layer_types"])
    if cfg.get("full_attention_interval"):
        # Qwen3-Next: one full-attention layer every N, linear attention between.
        step = int(cfg["full_attention_interval"])
        return ["full_attention" if (i + 1) % step == 0 else "linear_attention"
                for i in range(layers)]
    if cfg.get("attention_chunk_size"):
        # Llama 4: chunked local attention on three layers of four (every fourth is global).
        return ["full_attention" if (i + 1) % 4 == 0 else "sliding_attention"
                for i in range(layers)]
    if cfg.get("sliding_window") and cfg.get("use_sliding_window", True):
        pattern = cfg.get("sliding_window_pattern")
        return ["full_attention" if pattern and (i + 1) % int(pattern) == 0
                else "sliding_attention" for i in range(layers)]
    return ["full_attention"] * layers


def _linear_state(cfg: Mapping[str, Any]) -> dict[str, int]:
    """The recurrent state and short convolution one linear-attention layer keeps."""
    linear_cfg = cfg.get("linear_attn_config") or {}
    value_heads = int(linear_cfg.get("num_heads") or cfg.get("linear_num_value_heads", 0))
    key_heads = int(linear_cfg.get("num_heads") or cfg.get("linear_num_key_heads", 0))
    key_dim = int(linear_cfg.get("head_dim") or cfg.get("linear_key_head_dim", 0))
    value_dim = int(linear_cfg.get("head_dim") or cfg.get("linear_value_head_dim", 0))
    kernel = linear_cfg.get("short_conv_kernel_size") or cfg.get("linear_conv_kernel_dim", 0)
    return {
        "linear_heads": value_heads, "linear_key_head_dim": key_dim,
        "linear_value_head_dim": value_dim,
        # The convolution runs over q, k and v together.
        "linear_conv_dim": 2 * key_heads * key_dim + value_heads * value_dim,
        "linear_conv_kernel": int(kernel),
    }


def _layout(cfg: Mapping[str, Any], layers: int) -> AttentionLayout:
    kinds = _layer_kinds(cfg, layers)
    sliding = sum(kind == "sliding_attention" for kind in kinds)
    linear = sum(kind == "linear_attention" for kind in kinds)
    attention = layers - sliding - linear
    # DeepSeek-style MLA replaces every attention layer that is not linear.
    mla = attention if cfg.get("kv_lora_rank") else 0
    window = cfg.get("attention_chunk_size") or cfg.get("sliding_window") or 0
    return AttentionLayout(
        full_layers=attention - mla, sliding_layers=sliding,
        sliding_window=int(window) if sliding else 0, mla_layers=mla,
        kv_lora_rank=int(cfg.get("kv_lora_rank") or 0),
        rope_head_dim=int(cfg.get("qk_rope_head_dim") or 0) if mla else 0,
        linear_layers=linear,
        **((_mamba(cfg, _int(cfg, "hidden_size"))[0] if cfg.get("model_type") == "jamba"
            else _linear_state(cfg)) if linear else {}),
    )


def _attention_params(cfg: Mapping[str, Any], layout: AttentionLayout, *, hidden: int,
                      heads: int, kv_heads: int, head_dim: int) -> int:
    gqa = hidden * heads * head_dim * 2 + hidden * kv_heads * head_dim * 2
    per_kind = (layout.full_layers + layout.sliding_layers) * gqa
    if layout.mla_layers:
        nope = _int(cfg, "qk_nope_head_dim", default=head_dim)
        rope, rank = layout.rope_head_dim, layout.kv_lora_rank
        v_dim = _int(cfg, "v_head_dim", default=head_dim)
        q_rank = cfg.get("q_lora_rank")
        query = (hidden * q_rank + q_rank * heads * (nope + rope) if q_rank
                 else hidden * heads * (nope + rope))
        mla = (query + hidden * (rank + rope) + rank * heads * (nope + v_dim)
               + heads * v_dim * hidden)
        per_kind += layout.mla_layers * mla
    if layout.linear_layers and cfg.get("model_type") == "jamba":
        per_kind += layout.linear_layers * _mamba(cfg, hidden)[1]
    elif layout.linear_layers:
        # q, k, v and output gate in, output out: the gates' small projections are not counted.
        width = layout.linear_conv_dim + layout.linear_heads * layout.linear_value_head_dim
        per_kind += layout.linear_layers * (hidden * width
                                            + layout.linear_heads * layout.linear_value_head_dim
                                            * hidden)
    return per_kind


def _mlp_params(cfg: Mapping[str, Any], layers: int, hidden: int) -> tuple[int, MoE | None]:
    dense = 3 * hidden * _int(cfg, "intermediate_size_mlp", "intermediate_size", "ffn_dim",
                              default=4 * hidden)
    experts = _int(cfg, "n_routed_experts", "num_local_experts", "num_experts", default=0)
    if experts < 2:
        return layers * dense, None
    top_k = _int(cfg, "num_experts_per_tok", "num_experts_per_token", "experts_per_token",
                 default=1)
    expert_in = _int(cfg, "routed_expert_hidden_size", default=hidden)
    expert_mid = _int(cfg, "moe_intermediate_size", "intermediate_size")
    shared_mid = _int(cfg, "shared_expert_intermediate_size", default=0) or (
        _int(cfg, "n_shared_experts", "num_shared_experts", default=0) * expert_mid)
    first_dense = _int(cfg, "first_k_dense_replace", default=0)
    step = _int(cfg, "interleave_moe_layer_step", "decoder_sparse_step", "moe_layer_freq",
                default=1)
    if "expert_layer_period" in cfg:
        # Jamba: experts at layer i when i % expert_layer_period == expert_layer_offset.
        period = _int(cfg, "expert_layer_period")
        offset = _int(cfg, "expert_layer_offset", default=1)
        moe_layers = sum(1 for i in range(layers) if i % period == offset)
    else:
        moe_layers = sum(1 for i in range(first_dense, layers)
                         if (i - first_dense + 1) % step == 0)
    routed = moe_layers * experts * 3 * expert_in * expert_mid
    latent = 2 * hidden * expert_in if expert_in != hidden else 0
    per_moe_layer = 3 * hidden * shared_mid + hidden * experts + latent
    total = routed + moe_layers * per_moe_layer + (layers - moe_layers) * dense
    return total, MoE(experts=experts, experts_per_token=top_k, expert_params=routed)


def _native_precision(cfg: Mapping[str, Any]) -> str:
    quant = cfg.get("quantization_config") or {}
    method = str(quant.get("quant_method", "")).lower()
    algo = str(quant.get("quant_algo", "")).lower()
    if method == "mxfp4":
        return "bf16,experts=mxfp4"
    if "nvfp4" in (method, algo):
        return "nvfp4,embeddings=bf16"
    if method == "fp8" or "fp8" in algo:
        return "fp8,embeddings=bf16"
    if method in ("awq", "gptq"):
        return f"int{quant.get('bits', 4)},embeddings=bf16"
    dtype = str(cfg.get("torch_dtype") or cfg.get("dtype") or "bfloat16")
    return {"float32": "fp32", "float16": "fp16"}.get(dtype, "bf16")


def arch_from_config(config: Mapping[str, Any], *, name: str,
                     checkpoint_bytes: int | None = None) -> ModelArch:
    """A ``ModelArch`` from a parsed config.json (nested ``text_config`` is read when present)."""
    merged: Mapping[str, Any] = {**config, **(config.get("text_config") or {})}
    layers = _int(merged, "num_hidden_layers", "n_layer", "num_layers")
    cfg, defaults = with_defaults(merged, layers)
    _check_understood(cfg)
    hidden = _int(cfg, "hidden_size", "n_embd", "d_model")
    heads = _int(cfg, "num_attention_heads", "n_head")
    kv_heads = _int(cfg, "num_key_value_heads", default=heads)
    head_dim = _int(cfg, "head_dim", "v_head_dim", default=hidden // heads) or hidden // heads
    vocab = _int(cfg, "vocab_size")
    tied = bool(cfg.get("tie_word_embeddings", False))
    layout = _layout(cfg, layers)
    mlp, moe = _mlp_params(cfg, layers, hidden)
    embeddings = vocab * hidden * (1 if tied else 2)
    total = embeddings + mlp + _attention_params(cfg, layout, hidden=hidden, heads=heads,
                                                   kv_heads=kv_heads, head_dim=head_dim)
    routed_idle = moe.expert_params * (1 - moe.experts_per_token / moe.experts) if moe else 0
    input_embedding = 0 if tied else vocab * hidden
    return ModelArch(
        id=name, name=name, family=str(cfg.get("model_type", "unknown")), params=total,
        active_params=round(total - routed_idle - input_embedding), layers=layers,
        hidden_size=hidden, attention_heads=heads, kv_heads=kv_heads, head_dim=head_dim,
        vocab_size=vocab, tied_embeddings=tied, attention=layout, moe=moe,
        native_precision=_native_precision(cfg), checkpoint_bytes=checkpoint_bytes,
        source="config.json (parameter totals counted from its shapes: an estimate)",
        defaults=defaults,
    )


def read_hf_config(path: str | Path) -> ModelArch:
    """Read ``config.json`` (a file, or its folder) and the safetensors index beside it."""
    location = Path(path)
    config_path = location / "config.json" if location.is_dir() else location
    try:
        config = json.loads(config_path.read_text(encoding="utf-8"))
    except FileNotFoundError as exc:
        raise ConfigError(f"model: no config.json at {config_path}") from exc
    except (OSError, json.JSONDecodeError) as exc:
        raise ConfigError(f"model: {config_path} is not a readable JSON config ({exc})") from exc
    if not isinstance(config, dict):
        raise ConfigError(f"model: {config_path} does not hold a JSON object")
    checkpoint: int | None = None
    index_path = config_path.parent / "model.safetensors.index.json"
    if index_path.is_file():
        try:
            index = json.loads(index_path.read_text(encoding="utf-8"))
            checkpoint = int(index["metadata"]["total_size"])
        except (OSError, ValueError, KeyError, TypeError) as exc:
            raise ConfigError(f"model: {index_path} has no metadata.total_size ({exc})") from exc
    name = config_path.parent.name if config_path.parent.name else str(config_path)
    return arch_from_config(config, name=name, checkpoint_bytes=checkpoint)
