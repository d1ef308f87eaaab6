"""Deterministic prompt text for the benchmarks: seeded, varied, and the same on every run.

Each timed round gets its own user message so the token counter does real work every call
(spendguard remembers texts it has counted; a benchmark that sends one prompt over and over
would time only that memo). The shared system prompt stays the same, as it does in real use.
"""

from __future__ import annotations

import random
from typing import Any

__all__ = ["SYSTEM_PROMPT", "chat_messages", "text"]

_VOCABULARY = (
    "budget invoice ledger reserve settle token model prompt cache batch stream request "
    "latency provider estimate worst case usage output input system agent tool result plan "
    "fan out shared context deferrable cascade escalate check answer question summary report "
    "customer order refund policy contract clause section paragraph table figure chart value "
    "the a of to and in for on with by from at as is was are be this that it not or an"
)
_WORDS = _VOCABULARY.split()


def text(words: int, seed: int) -> str:
    """``words`` words of plausible English-like text, fixed by ``seed``."""
    rng = random.Random(seed)
    out = []
    for index in range(words):
        word = rng.choice(_WORDS)
        out.append(word.capitalize() + "." if index % 17 == 16 else word)
    return " ".join(out)


SYSTEM_PROMPT = ("You are a careful assistant for a finance team. " + text(300, seed=1))


def chat_messages(seed: int, user_words: int = 80) -> list[dict[str, Any]]:
    """A system prompt shared by every call plus a user message unique to ``seed``."""
    return [{"role": "system", "content": SYSTEM_PROMPT},
            {"role": "user", "content": f"Request {seed}: " + text(user_words, seed=seed + 1000)}]
