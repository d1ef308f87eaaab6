"""Emulated prompt caches: Anthropic's explicit breakpoints and OpenAI's automatic prefixes.

A request's prompt is cut into ordered blocks (tools, system / instructions, message blocks);
each block position gets a hash chained over everything before it, so two requests share a
cache entry exactly when they share that whole prefix. Entries live for their TTL on the
emulator's clock and are refreshed when read, as both providers do. Token counts of a prefix
come from counting the request cut at that block with the same counter as the full request.
Matching is per block, not per token: a prefix that diverges inside a block misses from there.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from spendguard.testing.wire import EmulatedError

__all__ = ["CacheUse", "PromptCache", "anthropic_cache_use", "cut_messages", "message_segments",
           "openai_cached_tokens"]

ANTHROPIC_TTL_S = {"5m": 300.0, "1h": 3600.0}
ANTHROPIC_MAX_BREAKPOINTS = 4
ANTHROPIC_LOOKBACK_BLOCKS = 20
OPENAI_MIN_CACHED_TOKENS = 1024
OPENAI_CACHE_INCREMENT = 128

PrefixCounter = Callable[[int], int]
"""Tokens of the prompt up to and including block ``i``."""


@dataclass(frozen=True, slots=True)
class CacheUse:
    """How one request's prompt tokens split between cache reads, writes (by TTL) and the rest."""

    read_tokens: int = 0
    write_5m_tokens: int = 0
    write_1h_tokens: int = 0

    @property
    def write_tokens(self) -> int:
        return self.write_5m_tokens + self.write_1h_tokens


class PromptCache:
    """Prefix hashes and when they expire (epoch seconds on the emulator's clock)."""

    def __init__(self) -> None:
        self._entries: dict[str, tuple[float, float]] = {}  # hash -> (expires_at_s, ttl_s)

    def read(self, key: str, now_s: float) -> bool:
        """Whether ``key`` is live; a hit refreshes its TTL."""
        entry = self._entries.get(key)
        if entry is None or entry[0] <= now_s:
            return False
        self._entries[key] = (now_s + entry[1], entry[1])
        return True

    def write(self, key: str, now_s: float, ttl_s: float) -> None:
        if len(self._entries) > 50_000:  # keep a long-running emulator's memory bounded
            self._entries = {k: v for k, v in self._entries.items() if v[0] > now_s}
        old = self._entries.get(key)
        self._entries[key] = (now_s + max(ttl_s, old[1] if old else 0.0), max(ttl_s, 0.0))

    def clear(self) -> None:
        self._entries.clear()


def chain_hashes(root: str, blocks: Sequence[Any]) -> list[str]:
    """One hash per block position, each covering every block up to it."""
    hashes, state = [], hashlib.sha256(root.encode()).hexdigest()
    for block in blocks:
        canonical = json.dumps(block, sort_keys=True, separators=(",", ":"), default=str)
        state = hashlib.sha256((state + canonical).encode()).hexdigest()
        hashes.append(state)
    return hashes


def _ttl_name(cache_control: Any) -> str:
    ttl = cache_control.get("ttl", "5m") if isinstance(cache_control, dict) else "5m"
    if ttl not in ANTHROPIC_TTL_S:
        raise EmulatedError(400, f"cache_control.ttl: Input should be '5m' or '1h' (got {ttl!r})")
    return str(ttl)


def anthropic_breakpoints(body: dict[str, Any], blocks: Sequence[dict[str, Any]]
                          ) -> list[tuple[int, str]]:
    """(block position, TTL) of every cache breakpoint, validated as the API does."""
    points = [(index, _ttl_name(block["cache_control"]))
              for index, block in enumerate(blocks) if block.get("cache_control")]
    automatic = body.get("cache_control")
    if automatic and blocks and (not points or points[-1][0] != len(blocks) - 1):
        points.append((len(blocks) - 1, _ttl_name(automatic)))
    if len(points) > ANTHROPIC_MAX_BREAKPOINTS:
        raise EmulatedError(400, "A maximum of 4 blocks with cache_control may be provided. "
                                 f"Found {len(points)}.")
    seen_5m = False
    for _, ttl in points:
        if ttl == "1h" and seen_5m:
            raise EmulatedError(400, "cache_control: a ttl='1h' cache entry must come before "
                                     "any ttl='5m' entry in the prompt")
        seen_5m = seen_5m or ttl == "5m"
    return points


def anthropic_cache_use(cache: PromptCache, *, root: str, blocks: Sequence[dict[str, Any]],
                        breakpoints: Sequence[tuple[int, str]], prefix_tokens: PrefixCounter,
                        total_tokens: int, min_tokens: int, now_s: float) -> CacheUse:
    """Read the longest cached prefix within the look-back window, write the breakpoints after."""
    if not breakpoints:
        return CacheUse()
    hashes = chain_hashes(root, [{k: v for k, v in b.items() if k != "cache_control"}
                                 for b in blocks])
    read_at = -1
    for point, _ in breakpoints:
        for position in range(point, max(point - ANTHROPIC_LOOKBACK_BLOCKS, -1), -1):
            if position > read_at and cache.read(hashes[position], now_s):
                read_at = position
                break
    read = min(prefix_tokens(read_at), total_tokens) if read_at >= 0 else 0
    written = {"5m": 0, "1h": 0}
    covered = read
    for point, ttl in breakpoints:
        if point <= read_at:
            continue
        tokens = min(prefix_tokens(point), total_tokens)
        if tokens < min_tokens or tokens <= covered:
            continue  # below the model's minimum: silently not cached, as the API does
        written[ttl] += tokens - covered
        covered = tokens
        cache.write(hashes[point], now_s, ANTHROPIC_TTL_S[ttl])
    return CacheUse(read, written["5m"], written["1h"])


def message_segments(messages: Sequence[Any]) -> tuple[list[Any], list[tuple[int, int | None]]]:
    """OpenAI messages as cacheable segments, and where each one ends.

    OpenAI matches prefixes token by token, so a prefix may end inside a message: a message
    whose content is a list of parts is one segment per part (the first carries the role);
    any other message is one segment.
    """
    segments: list[Any] = []
    spots: list[tuple[int, int | None]] = []
    for index, message in enumerate(messages):
        content = message.get("content") if isinstance(message, dict) else None
        if not isinstance(content, list) or not content:
            segments.append(message)
            spots.append((index, None))
            continue
        head = {k: v for k, v in message.items() if k != "content"}
        for position, part in enumerate(content):
            segments.append({"message": head, "part": part} if position == 0 else part)
            spots.append((index, position))
    return segments, spots


def cut_messages(messages: Sequence[Any], spot: tuple[int, int | None]) -> list[Any]:
    """The messages up to and including the segment at ``spot``."""
    index, position = spot
    message = messages[index]
    if position is not None:
        message = {**message, "content": message["content"][:position + 1]}
    return [*messages[:index], message]


def openai_cached_tokens(cache: PromptCache, *, root: str, segments: Sequence[Any],
                         prefix_tokens: PrefixCounter, total_tokens: int, now_s: float,
                         ttl_s: float) -> int:
    """Cached prompt tokens: the longest live prefix, in 128-token steps from 1,024."""
    if total_tokens < OPENAI_MIN_CACHED_TOKENS or not segments:
        return 0
    hashes = chain_hashes(root, segments)
    cached = 0
    for position in range(len(hashes) - 1, -1, -1):
        if cache.read(hashes[position], now_s):
            tokens = min(prefix_tokens(position), total_tokens)
            if tokens >= OPENAI_MIN_CACHED_TOKENS:
                cached = tokens // OPENAI_CACHE_INCREMENT * OPENAI_CACHE_INCREMENT
            break
    for key in hashes:
        cache.write(key, now_s, ttl_s)
    return cached
