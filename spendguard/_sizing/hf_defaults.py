"""What a Hugging Face ``config.json`` means when it leaves a key out: per-``model_type`` defaults.

Published configs often omit values their config class defaults: Gemma 2 9B's config.json has
no ``tie_word_embeddings`` (Gemma2Config defaults it to true) and no ``layer_types``
(Gemma2Config alternates sliding and full attention, sliding first). Reading such a file with
generic defaults gets the KV cache and the parameter count wrong, so the defaults the reference
implementation (transformers' ``configuration_<model_type>.py``) applies are filled in here,
and each one filled in is named so that the output can say so.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

__all__ = ["MODEL_TYPE_DEFAULTS", "ConfigDefaults", "with_defaults"]


@dataclass(frozen=True)
class ConfigDefaults:
    """One config class's defaults for the keys sizing reads.

    ``sliding_every``: the layer pattern transformers builds when ``layer_types`` is absent:
    every ``sliding_every``-th layer is full attention, the others sliding (0: no pattern).
    """

    tie_word_embeddings: bool
    sliding_window: int | None = None
    sliding_every: int = 0


# transformers' config classes (src/transformers/models/<type>/configuration_<type>.py).
MODEL_TYPE_DEFAULTS: dict[str, ConfigDefaults] = {
    "gemma": ConfigDefaults(tie_word_embeddings=True),
    "gemma2": ConfigDefaults(tie_word_embeddings=True, sliding_window=4096, sliding_every=2),
    "gemma3": ConfigDefaults(tie_word_embeddings=True, sliding_window=4096, sliding_every=6),
    "gemma3_text": ConfigDefaults(tie_word_embeddings=True, sliding_window=4096,
                                  sliding_every=6),
    "llama": ConfigDefaults(tie_word_embeddings=False),
    "mistral": ConfigDefaults(tie_word_embeddings=False),
    "mixtral": ConfigDefaults(tie_word_embeddings=False),
    "qwen2": ConfigDefaults(tie_word_embeddings=False),
    "qwen3": ConfigDefaults(tie_word_embeddings=False),
    "qwen3_moe": ConfigDefaults(tie_word_embeddings=False),
    "deepseek_v3": ConfigDefaults(tie_word_embeddings=False),
}


def _layer_pattern(layers: int, every: int) -> list[str]:
    return ["full_attention" if (i + 1) % every == 0 else "sliding_attention"
            for i in range(layers)]


def with_defaults(cfg: Mapping[str, Any], layers: int) -> tuple[dict[str, Any], tuple[str, ...]]:
    """``cfg`` with the absent keys its ``model_type`` defaults, and a note for each one."""
    model_type = str(cfg.get("model_type", ""))
    filled = dict(cfg)
    defaults = MODEL_TYPE_DEFAULTS.get(model_type)
    if defaults is None:
        return filled, ()
    notes: list[str] = []
    if "tie_word_embeddings" not in cfg:
        filled["tie_word_embeddings"] = defaults.tie_word_embeddings
        notes.append(f"tie_word_embeddings = {str(defaults.tie_word_embeddings).lower()}"
                     f" ({model_type} default)")
    if defaults.sliding_window is not None and "sliding_window" not in cfg:
        filled["sliding_window"] = defaults.sliding_window
        notes.append(f"sliding_window = {defaults.sliding_window} ({model_type} default)")
    if (defaults.sliding_every and not cfg.get("layer_types")
            and not cfg.get("sliding_window_pattern")):
        filled["layer_types"] = _layer_pattern(layers, defaults.sliding_every)
        notes.append(f"layer_types = full attention every {defaults.sliding_every} layers, "
                     f"sliding otherwise ({model_type} default)")
    return filled, tuple(notes)
