"""One emulated generation, shared by every endpoint that produces text (and by batches).

Counting the prompt, consulting the prompt cache and rendering the reply happen here once;
the endpoint modules only spell the result in their provider's wire format.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from spendguard.testing.counting import input_tokens
from spendguard.testing.prompt_cache import CacheUse
from spendguard.testing.replies import Prompt, Rendered, render
from spendguard.testing.state import State
from spendguard.testing.wire import EmulatedError

__all__ = ["Generation", "generate", "output_cap", "require_model"]


@dataclass(frozen=True, slots=True)
class Generation:
    """A finished generation: prompt tokens, cache split and the reply (one per choice)."""

    id: str
    created_s: float
    model: str
    prompt_tokens: int
    """Every input token, cached or not."""
    cache: CacheUse
    choices: tuple[Rendered, ...]
    call_ids: tuple[tuple[str, ...], ...]
    """An id per tool call, per choice."""

    @property
    def uncached_tokens(self) -> int:
        return max(self.prompt_tokens - self.cache.read_tokens - self.cache.write_tokens, 0)

    @property
    def output_tokens(self) -> int:
        return sum(choice.output_tokens for choice in self.choices)

    @property
    def reasoning_tokens(self) -> int:
        return sum(choice.reasoning_tokens for choice in self.choices)


def require_model(body: dict[str, Any]) -> str:
    model = body.get("model")
    if not isinstance(model, str) or not model:
        raise EmulatedError(400, "Missing required parameter: 'model'.", param="model",
                            code="missing_required_parameter")
    return model


def output_cap(body: dict[str, Any], *names: str) -> int | None:
    """The first output cap set in the body (``max_tokens`` and friends), validated."""
    for name in names:
        value = body.get(name)
        if value is None:
            continue
        if isinstance(value, bool) or not isinstance(value, int) or value < 0:
            raise EmulatedError(400, f"Invalid '{name}': expected an integer >= 0, got "
                                     f"{value!r}.", param=name)
        return value
    return None


def generate(state: State, *, provider: str, endpoint: str, body: dict[str, Any],
             counted_body: dict[str, Any] | None = None, model: str, cap: int | None,
             cache: Callable[[int], CacheUse], now_s: float, id_prefix: str,
             call_prefix: str, choices: int = 1) -> Generation:
    """Count, cache and render one request (``counted_body``: the prompt as the model sees it)."""
    prompt_tokens = input_tokens(provider, endpoint, counted_body or body)
    if provider == "anthropic":  # billed as the configured tokenizer ratio says
        prompt_tokens = state.config.anthropic_tokens(body, prompt_tokens)
    cache_use = cache(prompt_tokens)
    prompt = Prompt(provider, endpoint, model, body)
    config = state.config
    rendered = tuple(render(prompt, respond=config.respond, output_cap=cap,
                            reply_tokens=config.reply_tokens, seed=config.seed + index)
                     for index in range(choices))
    call_ids = tuple(tuple(state.ids.new(call_prefix) for _ in choice.tool_calls)
                     for choice in rendered)
    return Generation(state.ids.new(id_prefix), now_s, model, prompt_tokens, cache_use,
                      rendered, call_ids)
