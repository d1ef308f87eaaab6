"""How a call that reached the provider is charged when its usage is not simply read: the rules.

Once a request was handed to the provider it may have been billed, so it always ends in one
ledger record. These pure functions say what that record charges when the response does not
give a usable answer; :mod:`spendguard._guard.metering` applies them.

- **Unreadable usage** (no usage, malformed fields, a label or counter the price table lacks, a
  body spendguard cannot decode): charged the reserved worst case, or what the usage that could
  be read costs at base rates when that is more; status ``usage_unreadable``, the reason in
  ``note``.
- **Implausible usage** (counts above :data:`MAX_READABLE_TOKENS`) is unreadable too: no
  provider bills that, and no ledger could hold its price.
- **Overrun** (priced above the reserved worst case, or more tokens than the model's context
  window plus its maximum output): charged as reported, status ``overrun``, reported to
  ``on_warn``.
- **Abandoned or broken streams**: the input, the output received, plus up to
  :data:`STREAM_TAIL_TOKENS` more output that the provider may generate before it notices the
  disconnect (never more than the request allowed, never less than received); estimated.
"""

from __future__ import annotations

import logging
import threading
from dataclasses import replace
from decimal import Decimal

from spendguard._costing.prices import ModelPrice
from spendguard._costing.usage import Usage

__all__ = ["MAX_READABLE_TOKENS", "STREAM_TAIL_TOKENS", "base_rate_usage", "check_readable",
           "describe", "log_once", "overrun_note", "stream_output_tokens", "text_token_bound"]

log = logging.getLogger("spendguard")

MAX_READABLE_TOKENS = 10**10
"""Ten billion tokens in one bucket of one call: about ten thousand times the largest context
window in the bundled price tables (1,050,000). A count above it is not usage but a broken
response."""

STREAM_TAIL_TOKENS = 1024
"""Output tokens a provider may still generate after a client disconnects, before it notices.
A chosen bound, not a measured one: ten seconds at 100 tokens/s. Added to what an abandoned
or broken stream received; reconciliation with the provider's report corrects it."""

_MAX_CAUSES = 1000  # beyond this many distinct causes, a flood: the rest go to DEBUG
_logged: set[tuple[str, ...]] = set()
_logged_lock = threading.Lock()


def log_once(cause: tuple[str, ...], message: str) -> None:
    """Log ``message`` at WARNING the first time ``cause`` is seen in this process, then DEBUG.

    A malformed response tends to repeat on every call; one warning per cause is enough to act
    on, and never a Python warning: ``-W error`` would turn it into the caller's exception.
    """
    with _logged_lock:
        first = cause not in _logged and len(_logged) < _MAX_CAUSES
        if first:
            _logged.add(cause)
    log.log(logging.WARNING if first else logging.DEBUG, "%s", message)


def describe(exc: BaseException) -> str:
    """A short reason for the ledger's ``note``: the error's type and first line."""
    text = str(exc).splitlines()[0] if str(exc) else ""
    return f"{type(exc).__name__}: {text}"[:300] if text else type(exc).__name__


def check_readable(usage: Usage) -> None:
    """Raise ``ValueError`` when a token count is beyond :data:`MAX_READABLE_TOKENS`."""
    if (usage.input_tokens <= MAX_READABLE_TOKENS and usage.cache_read_tokens
            <= MAX_READABLE_TOKENS and usage.output_tokens <= MAX_READABLE_TOKENS
            and not usage.cache_write_tokens and not usage.tool_requests):
        return  # every call's usual usage, with no call; the names are spelled out for errors
    if max(usage.input_tokens, usage.cache_read_tokens, usage.output_tokens,
           *usage.cache_write_tokens.values(), *usage.tool_requests.values()) \
            <= MAX_READABLE_TOKENS:
        return
    counts = {"input_tokens": usage.input_tokens, "cache_read_tokens": usage.cache_read_tokens,
              "output_tokens": usage.output_tokens,
              **{f"cache_write_tokens[{ttl}]": n for ttl, n in usage.cache_write_tokens.items()},
              **{f"tool_requests[{name}]": n for name, n in usage.tool_requests.items()}}
    for name, count in counts.items():
        if count > MAX_READABLE_TOKENS:
            raise ValueError(f"usage {name} is {count}, above the {MAX_READABLE_TOKENS:,} a "
                             "single call can plausibly use")


def base_rate_usage(usage: Usage) -> Usage:
    """The same token counts without tier, region, speed or tool labels: what base rates price
    when a label is what could not be priced."""
    return replace(usage, service_tier=None, speed=None, inference_geo=None, tool_requests={},
                   estimated=True)


def overrun_note(usage: Usage, actual_usd: Decimal, worst_usd: Decimal,
                 model_price: ModelPrice, choices: int) -> str | None:
    """Why a priced usage is an overrun, or None when it is within what was reserved."""
    if actual_usd > worst_usd:
        return (f"reported usage costs {actual_usd} USD, above the reserved worst case "
                f"{worst_usd} USD")
    window = model_price.context_window
    if window is None:
        return None
    most_output = model_price.max_output_tokens or 0
    # usage.total_tokens, added up here: every settled call asks, and the properties nest.
    total = usage.input_tokens + usage.cache_read_tokens + usage.output_tokens
    if usage.cache_write_tokens:
        total += sum(usage.cache_write_tokens.values())
    if total > (window + most_output) * (choices if choices > 1 else 1):
        return (f"reported usage of {usage.total_tokens} tokens is above the model's context "
                f"window {window} plus its maximum output {most_output}")
    return None


def stream_output_tokens(received: int, worst_output: int) -> int:
    """Output to charge for a stream cut short: what was received plus the tail bound, capped
    by what the request allowed, never less than what was received."""
    return max(received, min(received + STREAM_TAIL_TOKENS, worst_output))


def text_token_bound(text: str) -> int:
    """An upper bound on the tokens of ``text`` for any tokenizer: each token carries at least
    one byte of the text (for a model whose tokenizer spendguard does not know)."""
    return len(text.encode("utf-8"))
