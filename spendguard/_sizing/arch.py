"""Open-weight model architectures: parameter counts, shapes and attention layout per layer kind."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, replace
from functools import cache
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field, ValidationInfo, field_validator, model_validator

from spendguard._core.errors import ConfigError
from spendguard._sizing._data import data_file, normalise, read_entries, unknown
from spendguard._sizing.precision import parse_precision

__all__ = [
    "AttentionLayout",
    "MoE",
    "ModelArch",
    "ModelCatalogue",
    "default_models",
    "estimated_arch",
    "load_models",
]


@dataclass(frozen=True)
class AttentionLayout:
    """How many layers of each attention kind a model has, and what each kind keeps per sequence.

    Full-attention layers grow with context. Sliding-window layers stop growing at the window.
    MLA layers cache one latent of ``kv_lora_rank + rope_head_dim`` values per token. Linear
    attention / recurrent layers keep a fixed state per sequence, whatever the context.
    """

    full_layers: int
    sliding_layers: int = 0
    sliding_window: int = 0
    mla_layers: int = 0
    kv_lora_rank: int = 0
    rope_head_dim: int = 0
    linear_layers: int = 0
    linear_heads: int = 0
    linear_key_head_dim: int = 0
    linear_value_head_dim: int = 0
    linear_conv_dim: int = 0
    linear_conv_kernel: int = 0

    @property
    def linear_state_values(self) -> int:
        """Values one linear-attention layer keeps per sequence: the recurrent state + conv tail."""
        recurrent = self.linear_heads * self.linear_key_head_dim * self.linear_value_head_dim
        conv = self.linear_conv_dim * max(self.linear_conv_kernel - 1, 0)
        return recurrent + conv

    @property
    def kinds(self) -> str:
        """A short description such as ``"24 MLA + 69 linear"``."""
        parts = [(self.full_layers, "full"), (self.sliding_layers, "sliding"),
                 (self.mla_layers, "MLA"), (self.linear_layers, "linear")]
        return " + ".join(f"{count} {kind}" for count, kind in parts if count)


@dataclass(frozen=True)
class MoE:
    """Mixture of experts: routed experts, how many run per token, their parameters (all layers)."""

    experts: int
    experts_per_token: int
    expert_params: int


@dataclass(frozen=True)
class ModelArch:
    """One model's architecture; ``active_params`` is what one token reads (no input embedding)."""

    id: str
    name: str
    family: str
    params: int
    active_params: int
    layers: int
    hidden_size: int
    attention_heads: int
    kv_heads: int
    head_dim: int
    vocab_size: int
    tied_embeddings: bool
    attention: AttentionLayout
    moe: MoE | None = None
    native_precision: str = "bf16"
    checkpoint_bytes: int | None = None
    estimated_shape: bool = False
    source: str = ""
    as_of: str = ""
    # Values a config.json left out and the reference implementation's defaults filled in,
    # e.g. ("tie_word_embeddings = true (gemma2 default)",).
    defaults: tuple[str, ...] = ()

    @property
    def embedding_params(self) -> int:
        """Input embedding plus output head (one shared table when tied)."""
        return self.vocab_size * self.hidden_size * (1 if self.tied_embeddings else 2)

    @property
    def expert_params(self) -> int:
        """Routed-expert parameters over all layers (0 for a dense model)."""
        return self.moe.expert_params if self.moe else 0

    @property
    def sparse_without_routing(self) -> bool:
        """A mixture of experts known only by its counts (``--active-params``, no expert table).

        A dense model's active parameters leave out at most its input embedding; fewer than
        ``params - embedding_params`` means most weights sit idle for any one token.
        """
        return self.moe is None and self.active_params < self.params - self.embedding_params

    @property
    def active_expert_params(self) -> float:
        """Routed-expert parameters one token reads: experts × the routed share."""
        if self.moe is None:
            return 0.0
        return self.moe.expert_params * self.moe.experts_per_token / self.moe.experts

    def with_params(self, params: int | None, active_params: int | None) -> ModelArch:
        """The same shape with other parameter counts; the active share is kept unless given."""
        if params is None and active_params is None:
            return self
        total = params if params is not None else self.params
        if active_params is None:
            active_params = round(total * self.active_params / self.params)
        moe = self.moe
        if moe is not None and params is not None:
            moe = replace(moe, expert_params=round(moe.expert_params * total / self.params))
        return replace(self, params=total, active_params=active_params, moe=moe,
                       checkpoint_bytes=None)


class _MoeEntry(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)
    experts: int = Field(ge=2)
    experts_per_token: int = Field(ge=1)
    expert_params: int = Field(gt=0)


class _AttentionEntry(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)
    sliding_layers: int = Field(default=0, ge=0)
    sliding_window: int = Field(default=0, ge=0)
    mla_layers: int = Field(default=0, ge=0)
    kv_lora_rank: int = Field(default=0, ge=0)
    rope_head_dim: int = Field(default=0, ge=0)
    linear_layers: int = Field(default=0, ge=0)
    linear_heads: int = Field(default=0, ge=0)
    linear_key_head_dim: int = Field(default=0, ge=0)
    linear_value_head_dim: int = Field(default=0, ge=0)
    linear_conv_dim: int = Field(default=0, ge=0)
    linear_conv_kernel: int = Field(default=0, ge=0)

    @model_validator(mode="after")
    def _complete(self) -> _AttentionEntry:
        if self.sliding_layers and not self.sliding_window:
            raise ValueError("sliding_layers needs sliding_window (tokens)")
        if self.mla_layers and not self.kv_lora_rank:
            raise ValueError("mla_layers needs kv_lora_rank (and rope_head_dim)")
        if self.linear_layers and not (self.linear_heads and self.linear_key_head_dim
                                       and self.linear_value_head_dim):
            raise ValueError("linear_layers needs linear_heads, linear_key_head_dim and "
                             "linear_value_head_dim")
        return self


class _ModelEntry(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)
    name: str
    aliases: list[str] = Field(default_factory=list)
    family: str
    params: int = Field(gt=0)
    active_params: int = Field(gt=0)
    layers: int = Field(gt=0)
    hidden_size: int = Field(gt=0)
    attention_heads: int = Field(gt=0)
    kv_heads: int = Field(gt=0)
    head_dim: int = Field(gt=0)
    vocab_size: int = Field(gt=0)
    tied_embeddings: bool = False
    native_precision: str = "bf16"
    checkpoint_gb: float | None = Field(default=None, gt=0)
    moe: _MoeEntry | None = None
    attention: _AttentionEntry = Field(default_factory=_AttentionEntry)
    source: str = Field(min_length=1)
    as_of: str = Field(min_length=7)

    @field_validator("active_params")
    @classmethod
    def _active_within_total(cls, value: int, info: ValidationInfo) -> int:
        if value > info.data.get("params", value):
            raise ValueError("is larger than params")
        return value

    @field_validator("native_precision")
    @classmethod
    def _known_precision(cls, value: str) -> str:
        try:
            parse_precision(value, field="native_precision")
        except ConfigError as exc:
            raise ValueError(str(exc)) from exc
        return value

    @field_validator("moe")
    @classmethod
    def _experts_within_total(cls, value: _MoeEntry | None,
                              info: ValidationInfo) -> _MoeEntry | None:
        if value is not None and value.expert_params >= info.data.get("params", 0):
            raise ValueError("expert_params must be smaller than params")
        return value

    @field_validator("attention")
    @classmethod
    def _layers_add_up(cls, value: _AttentionEntry, info: ValidationInfo) -> _AttentionEntry:
        if value.sliding_layers + value.mla_layers + value.linear_layers > info.data.get(
                "layers", 0):
            raise ValueError("sliding + MLA + linear layers exceed layers")
        return value


class ModelCatalogue:
    """Architectures by id or alias (Hugging Face ids included); a miss lists close matches."""

    def __init__(self, models: dict[str, ModelArch], aliases: dict[str, str]) -> None:
        self._models = models
        self._index = {**{key: key for key in models}, **aliases}

    def __iter__(self) -> Iterator[ModelArch]:
        return iter(self._models.values())

    def get(self, name: str) -> ModelArch:
        """The architecture called ``name`` (id or alias, any case)."""
        key = self._index.get(normalise(name))
        if key is None:
            raise unknown("model", name, self._index,
                          "Pass the path of its config.json (or its folder), or --params N "
                          "for an estimated shape.")
        return self._models[key]


def load_models(path: str | Path) -> ModelCatalogue:
    """Read a ``[model.ID]`` TOML file (the format of ``pricing/open_models.toml``)."""
    models: dict[str, ModelArch] = {}
    aliases: dict[str, str] = {}
    for key, entry in read_entries(Path(path), "model", _ModelEntry).items():
        a = entry.attention
        layout = AttentionLayout(
            full_layers=entry.layers - a.sliding_layers - a.mla_layers - a.linear_layers,
            **a.model_dump(),
        )
        moe = MoE(**entry.moe.model_dump()) if entry.moe else None
        checkpoint = round(entry.checkpoint_gb * 1e9) if entry.checkpoint_gb else None
        models[key] = ModelArch(
            id=key, name=entry.name, family=entry.family, params=entry.params,
            active_params=entry.active_params, layers=entry.layers,
            hidden_size=entry.hidden_size, attention_heads=entry.attention_heads,
            kv_heads=entry.kv_heads, head_dim=entry.head_dim, vocab_size=entry.vocab_size,
            tied_embeddings=entry.tied_embeddings, attention=layout, moe=moe,
            native_precision=entry.native_precision, checkpoint_bytes=checkpoint,
            source=entry.source, as_of=entry.as_of,
        )
        aliases.update({normalise(alias): key for alias in entry.aliases})
    return ModelCatalogue(models, aliases)


@cache
def default_models() -> ModelCatalogue:
    """The architectures shipped in ``pricing/open_models.toml`` (read once)."""
    return load_models(data_file("open_models.toml"))


def estimated_arch(params: int, active_params: int | None, catalogue: ModelCatalogue,
                   name: str = "custom") -> ModelArch:
    """A model known only by its size: the shape of the nearest dense model, 8 KV heads, dim 128.

    F2 prescribes the 8 KV heads; layers and width come from the catalogued dense model closest
    in parameter count. The result says it is an estimate.
    """
    dense = [m for m in catalogue if m.moe is None and m.attention.full_layers == m.layers]
    nearest = min(dense, key=lambda m: abs(m.params - params))
    shape = replace(
        nearest, id=name, name=f"{name} ({params / 1e9:g} B params)",
        kv_heads=8, head_dim=128, attention=AttentionLayout(full_layers=nearest.layers),
        estimated_shape=True, checkpoint_bytes=None,
        source=f"shape of {nearest.id} (nearest dense model by size), 8 KV heads per F2",
    )
    return shape.with_params(params, active_params if active_params is not None else params)
