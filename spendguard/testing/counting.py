"""Token counts for emulated usage, from the same counters spendguard's estimates use.

``spendguard._costing.tokens`` counts offline (tiktoken for OpenAI models, a bounded estimate for
Claude, a loose bound for unknown models). Where a count is a bounded estimate, the emulator
reports its central value (``TokenCount.expected``): a provider lands near it, not at the
bound spendguard reserves. Text for a model with no known tokenizer falls back to a stated
rule of thumb, four characters per token, so any model name still works.
"""

from __future__ import annotations

import math
from typing import Any

from spendguard._core.errors import UnknownModelError
from spendguard._costing.tokens import TokenCount, count_request_tokens, count_tokens

__all__ = ["input_tokens", "text_tokens"]


def _central(count: TokenCount) -> int:
    return count.expected


def input_tokens(provider: str, endpoint: str, body: dict[str, Any]) -> int:
    """Prompt tokens of a request body (``endpoint`` is the API path, ``/v1/messages``)."""
    return _central(count_request_tokens(provider, endpoint, body))


def text_tokens(model: str, text: str) -> int:
    """Tokens of generated text for ``model``."""
    if not text:
        return 0
    try:
        return _central(count_tokens(model, text=text))
    except UnknownModelError:
        return math.ceil(len(text) / 4)
