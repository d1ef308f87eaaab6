"""Reading a Gemini request: the call it makes, and an upper bound on its input tokens.

No offline tokenizer ships for Gemini (the SDK's local tokenizer downloads a model at run
time, and ``countTokens`` is a remote call), so the input is bounded, not counted:

- text (parts, the system instruction, tool declarations and results as JSON): at most one
  token per UTF-8 byte (every token carries at least one byte of its text), plus 8 tokens per
  turn for the role markers; the central estimate is four characters a token;
- an inline image: 258 tokens per 768×768 tile (the Gemini 2.x rule; one tile up to 384×384),
  and never less than 1,120 (Gemini 3's high media resolution);
- anything that cannot be measured offline (audio, video, PDFs, ``fileData`` references, an
  explicit ``cachedContent``, an image whose size cannot be read): the whole context window;
- and never more than the context window (1,048,576 tokens on every Gemini text model): the
  API refuses a longer prompt.

The guard tightens the bound from the ledger's history of the model, as for Claude.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Any

from spendguard._core.errors import ConfigError
from spendguard._costing.calls import Call
from spendguard._costing.endpoints import Endpoint
from spendguard._costing.tokens.content import json_text
from spendguard._costing.tokens.count import TokenCount
from spendguard._costing.tokens.images import image_size_from_base64
from spendguard._providers.gemini import endpoints

__all__ = ["CONTEXT_BOUND", "DEFAULT_CACHE_TTL_S", "build_call", "cache_ttl_seconds",
           "count_input", "field", "with_output_cap"]

CONTEXT_BOUND = 1_048_576
"""The longest prompt any Gemini text model takes."""
TURN_TOKENS = 8
"""Role markers around one turn, at most (the central estimate takes half)."""
IMAGE_TILE_TOKENS = 258
IMAGE_TILE_PX = 768
IMAGE_SMALL_PX = 384
IMAGE_MIN_BOUND = 1120
THINKING_BUDGET_RANGE = (512, 24_576)
"""The thinking budgets every Gemini 2.5 model takes: 2.5 Pro 128-32,768, 2.5 Flash
0-24,576, 2.5 Flash-Lite 512-24,576 (ai.google.dev/gemini-api/docs/thinking)."""


def field(container: Mapping[str, Any] | None, camel: str) -> Any:
    """A field by its REST name (``maxOutputTokens``) or its Python SDK name
    (``max_output_tokens``): the SDK sends the first, a hand-written body may use either."""
    if not isinstance(container, Mapping):
        return None
    if camel in container:
        return container[camel]
    snake = "".join(f"_{c.lower()}" if c.isupper() else c for c in camel)
    return container.get(snake)


def _int(container: Mapping[str, Any] | None, name: str) -> int | None:
    value = field(container, name)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int):
        raise ConfigError(f"generationConfig.{name}: expected an integer, got {value!r}")
    return value


def build_call(endpoint: Endpoint, body: dict[str, Any]) -> Call:
    """A priced Gemini body (``model`` set from the path) read into a call.

    The output cap is ``maxOutputTokens`` plus the thinking budget: thinking tokens are billed
    as output, so a request that caps its answer but lets the model think (no
    ``thinkingBudget``, or ``-1`` for dynamic thinking) may produce up to the model's maximum.
    """
    model = body.get("model")
    if not isinstance(model, str) or not model:
        raise ConfigError(f"{endpoint.value} request names no model; spendguard cannot price it")
    if endpoint in (endpoints.EMBED, endpoints.CACHE, endpoints.CACHE_UPDATE):
        return Call(endpoints.PROVIDER, endpoint, model, body, 0, 1, False)
    config = field(body, "generationConfig")
    cap = _int(config, "maxOutputTokens")
    if cap is not None and cap < 0:
        raise ConfigError(f"generationConfig.maxOutputTokens: expected >= 0, got {cap}")
    thinking = _int(field(config, "thinkingConfig"), "thinkingBudget")
    if cap is not None and thinking is not None and thinking >= 0:
        output_cap: int | None = cap + thinking
    else:
        output_cap = None  # dynamic thinking (or no cap): up to the model's maximum
    choices = _int(config, "candidateCount") or 1
    return Call(endpoints.PROVIDER, endpoint, model, body, output_cap, max(choices, 1),
                bool(body.get("stream")))


def _key(container: Mapping[str, Any], camel: str) -> str:
    """The key a field is written under: the spelling the body already uses, else REST's."""
    snake = "".join(f"_{c.lower()}" if c.isupper() else c for c in camel)
    return snake if snake in container and camel not in container else camel


def with_output_cap(endpoint: Endpoint, body: dict[str, Any],
                    tokens: int) -> dict[str, Any] | None:
    """``body`` with ``generationConfig`` set so that ``maxOutputTokens`` plus an explicit
    ``thinkingBudget`` (the worst case :func:`build_call` reads) is at most ``tokens``.

    A thinking budget the request set is kept while it leaves the answer a token; otherwise
    (dynamic thinking, or a budget too large) thinking gets half of ``tokens``, within
    :data:`THINKING_BUDGET_RANGE` and never more than the request's own budget. The answer
    gets the rest, never more than the request's ``maxOutputTokens``. None when not one
    answer token is left, and for a request that sets a ``thinkingLevel`` (Gemini 3), which
    the API refuses beside a ``thinkingBudget``.
    """
    if endpoint is not endpoints.GENERATE:
        return None
    config = field(body, "generationConfig")
    config = dict(config) if isinstance(config, Mapping) else {}
    thinking_config = field(config, "thinkingConfig")
    thinking_config = dict(thinking_config) if isinstance(thinking_config, Mapping) else {}
    if field(thinking_config, "thinkingLevel") is not None:
        return None
    cap = _int(config, "maxOutputTokens")
    budget = _int(thinking_config, "thinkingBudget")
    if budget is not None and 0 <= budget < tokens:
        thinking = budget
    else:
        low, high = THINKING_BUDGET_RANGE
        thinking = min(max(tokens // 2, low), high)
        if budget is not None and budget >= 0:
            thinking = min(thinking, budget)
    answer = tokens - thinking if cap is None else min(cap, tokens - thinking)
    if answer < 1:
        return None
    thinking_config[_key(thinking_config, "thinkingBudget")] = thinking
    config[_key(config, "thinkingConfig")] = thinking_config
    config[_key(config, "maxOutputTokens")] = answer
    return {**body, _key(body, "generationConfig"): config}


class _Bound:
    """The running bound and central estimate of one body."""

    def __init__(self) -> None:
        self.bound = 0
        self.central = 0
        self.unmeasured: list[str] = []

    def text(self, text: str) -> None:
        self.bound += len(text.encode("utf-8"))
        self.central += math.ceil(len(text) / 4)

    def value(self, value: Any) -> None:
        if value is not None:
            self.text(value if isinstance(value, str) else json_text(value))

    def turn(self) -> None:
        self.bound += TURN_TOKENS
        self.central += TURN_TOKENS // 2

    def unmeasurable(self, what: str, central: int = IMAGE_TILE_TOKENS) -> None:
        self.bound += CONTEXT_BOUND
        self.central += central
        if what not in self.unmeasured:
            self.unmeasured.append(what)

    def part(self, part: Any) -> None:
        if not isinstance(part, Mapping):
            self.value(part)
            return
        for key, value in part.items():
            name = key.replace("_", "").lower()
            if name == "text" and isinstance(value, str):
                self.text(value)
            elif name == "inlinedata":
                self.inline(value)
            elif name == "filedata":
                self.unmeasurable("fileData")
            elif name in ("thought", "thoughtsignature", "videometadata", "mediaresolution"):
                continue  # flags and opaque signatures, not content the model reads
            else:  # functionCall, functionResponse, executableCode, ...: their JSON
                self.value(value)

    def inline(self, data: Any) -> None:
        mime = str(field(data, "mimeType") or "")
        payload = field(data, "data")
        size = (image_size_from_base64(payload)
                if mime.startswith("image/") and isinstance(payload, str) else None)
        if size is None:
            self.unmeasurable(mime.partition("/")[0] or "inline data")
            return
        width, height = size
        tiles = (1 if width <= IMAGE_SMALL_PX and height <= IMAGE_SMALL_PX else
                 math.ceil(width / IMAGE_TILE_PX) * math.ceil(height / IMAGE_TILE_PX))
        self.central += IMAGE_TILE_TOKENS * tiles
        self.bound += max(IMAGE_TILE_TOKENS * tiles, IMAGE_MIN_BOUND)

    def content(self, content: Any) -> None:
        self.turn()
        if isinstance(content, str):
            self.text(content)
            return
        parts = field(content, "parts")
        if not isinstance(parts, list):
            self.value(content)
            return
        for part in parts:
            self.part(part)


def _walk(bound: _Bound, body: Mapping[str, Any]) -> None:
    for key, value in body.items():
        name = key.replace("_", "").lower()
        if name in ("model", "stream", "generationconfig", "safetysettings", "labels", "ttl",
                    "expiretime", "displayname", "name"):
            continue
        if name == "contents":
            for content in value if isinstance(value, list) else [value]:
                bound.content(content)
        elif name in ("systeminstruction", "content"):
            bound.content(value)
        elif name == "requests" and isinstance(value, list):  # batchEmbedContents
            for request in value:
                if isinstance(request, Mapping):
                    _walk(bound, request)
        elif name == "cachedcontent":
            bound.unmeasurable("cachedContent", central=0)
        else:  # tools, toolConfig, taskType, title ...: their JSON
            bound.value(value)


def count_input(endpoint: Endpoint | str, body: Mapping[str, Any]) -> TokenCount:
    """An upper bound on the input tokens of a Gemini body (see the module's rules); never
    raises on a body's shape. A cache's TTL update counts the cache's tokens, as noted when
    it was created."""
    if endpoint == endpoints.CACHE_UPDATE:
        from spendguard._providers.gemini.caches import term  # noqa: PLC0415

        known = term(str(body.get("name")))
        if known is not None:
            return TokenCount(known.tokens, exact=True, method="gemini cache: its noted size")
    bound = _Bound()
    try:
        _walk(bound, body)
    except (TypeError, ValueError, AttributeError, RecursionError):
        bound.text(json_text(body))
    value = min(bound.bound, CONTEXT_BOUND)
    central = min(bound.central, value)
    method = "gemini bound: UTF-8 bytes + 8 per turn, images by tile"
    if bound.unmeasured:
        method += f"; not measured offline: {', '.join(bound.unmeasured)}"
    return TokenCount(value, exact=False, method=method, expected=central)


DEFAULT_CACHE_TTL_S = 3600
"""An explicit cache's TTL when the request sets none (one hour)."""


def cache_ttl_seconds(body: Mapping[str, Any], now: datetime | None = None) -> int:
    """The seconds an explicit cache's create request keeps it: ``ttl`` ("3600s"),
    ``expireTime`` (RFC 3339) or the one-hour default; rounded up to a whole second."""
    ttl = field(body, "ttl")
    if ttl is not None:
        if not isinstance(ttl, str) or not ttl.endswith("s"):
            raise ConfigError(f"ttl: expected a duration such as '3600s', got {ttl!r}")
        try:
            return max(math.ceil(float(ttl[:-1])), 0)
        except ValueError as exc:
            raise ConfigError(f"ttl: expected a duration such as '3600s', got {ttl!r}") \
                from exc
    expire = field(body, "expireTime")
    if expire is not None:
        try:
            until = datetime.fromisoformat(str(expire).replace("Z", "+00:00"))
        except ValueError as exc:
            raise ConfigError(f"expireTime: expected an RFC 3339 time, got {expire!r}") from exc
        start = now or datetime.now(UTC)
        return max(math.ceil((until - start).total_seconds()), 0)
    return DEFAULT_CACHE_TTL_S
