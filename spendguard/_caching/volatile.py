"""Values that change from request to request and so break a cached prefix.

A timestamp, a UUID or a request id early in a prompt makes every request's prefix unique:
nothing after it can be read from the cache. These patterns find them in text; the caller
decides what to do (move the paragraph last, or tell the user). Plain dates are not flagged:
they change once a day, far less often than a cache entry (5 minutes to 1 hour) lives.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable
from dataclasses import dataclass

__all__ = ["END_OF_LAST_MESSAGE", "END_OF_SYSTEM", "VolatileValue", "find_volatile",
           "has_volatile", "mask_volatile", "split_paragraphs"]

_PATTERNS: tuple[tuple[str, re.Pattern[str]], ...] = (
    ("uuid", re.compile(r"\b[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-"
                        r"[0-9a-fA-F]{12}\b")),
    ("timestamp", re.compile(r"\b\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}(?::\d{2}(?:\.\d+)?)?"
                             r"(?:Z|[+-]\d{2}:?\d{2})?")),
    ("time of day", re.compile(r"(?<![\d:])\d{1,2}:\d{2}:\d{2}(?![\d:])")),
    # Epoch seconds or milliseconds between 2017 and 2033.
    ("epoch time", re.compile(r"(?<!\d)1[5-9]\d{8}(?:\d{3})?(?!\d)")),
    ("request id", re.compile(r"\b(?:req|msg|chatcmpl|resp|call|toolu|run|sess|session|trace|"
                              r"request)[_-][A-Za-z0-9]{8,}\b")),
    ("hex id", re.compile(r"\b[0-9a-f]{24,}\b")),
)
# Each pattern without the boundary test it opens with: re scans quickly for where a pattern
# can start only when it begins with characters, not with a test (about 15 ns per character
# against 1-2 ns), so the full pattern is tried only where its lead matches (see _search).
_LEADS: dict[str, re.Pattern[str]] = {
    "uuid": re.compile(r"[0-9a-fA-F][0-9a-fA-F]{7}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-"
                       r"[0-9a-fA-F]{4}-[0-9a-fA-F]{12}\b"),
    "timestamp": re.compile(r"\d\d{3}-\d{2}-\d{2}[T ]\d{2}:\d{2}(?::\d{2}(?:\.\d+)?)?"
                            r"(?:Z|[+-]\d{2}:?\d{2})?"),
    "time of day": re.compile(r"\d\d?:\d{2}:\d{2}(?![\d:])"),
    "epoch time": re.compile(r"1[5-9]\d{8}(?:\d{3})?(?!\d)"),
    "request id": re.compile(r"(?:req|msg|chatcmpl|resp|call|toolu|run|sess|session|trace|"
                             r"request)[_-][A-Za-z0-9]{8,}\b"),
    "hex id": re.compile(r"[0-9a-f][0-9a-f]{23,}\b"),
}
_BY_KIND = dict(_PATTERNS)
_MAX_SHOWN = 60
# What each pattern cannot match without, as byte strings found by C substring scans over
# the text with its digits mapped to "0" and its hex digits to "h" (a regex costs tens of µs
# per kB; a guarded call asks about every new message): a pattern runs only where its
# necessary part is there. Exact for ASCII text; other text runs every pattern (\d there
# also matches other scripts' digits).
_DIGITS = bytes.maketrans(b"0123456789", b"0" * 10)
_HEX = bytes.maketrans(b"0123456789abcdefABCDEF", b"h" * 22)
_NEEDS: dict[str, Callable[[str, bytes, bytes], bool]] = {
    "uuid": lambda text, digits, hexes: "-" in text and b"h" * 8 in hexes,
    "timestamp": lambda text, digits, hexes: b"0000-00-00" in digits,
    "time of day": lambda text, digits, hexes: b"0:00:00" in digits,
    "epoch time": lambda text, digits, hexes: b"0" * 10 in digits,
    "request id": lambda text, digits, hexes: "_" in text or "-" in text,
    "hex id": lambda text, digits, hexes: b"h" * 24 in hexes,
}


END_OF_SYSTEM = "the end of the system prompt"
END_OF_LAST_MESSAGE = "the end of the last user message"


@dataclass(frozen=True, slots=True)
class VolatileValue:
    """A value in a prompt that likely differs per request.

    ``where`` is a path in the body (``"system"``, ``"tools[2]"``, ``"messages[0].content[1]"``);
    ``kind`` is ``"uuid"``, ``"timestamp"``, ``"time of day"``, ``"epoch time"``,
    ``"request id"`` or ``"hex id"``; ``moved_to`` says where cache ordering moved its paragraph
    (``END_OF_SYSTEM`` or ``END_OF_LAST_MESSAGE``), None where it stayed and still breaks the
    prefix.
    """

    where: str
    kind: str
    value: str
    moved_to: str | None = None

    @property
    def moved(self) -> bool:
        """Whether cache ordering moved it out of the stable text."""
        return self.moved_to is not None

    def __str__(self) -> str:
        action = f"moved to {self.moved_to}" if self.moved_to else "breaks the cached prefix"
        return f"{self.kind} {self.value!r} in {self.where}: {action}"


@functools.lru_cache(maxsize=4096)
def _matches(text: str) -> tuple[tuple[str, str], ...]:
    # Scanning is slow (about 1 ms per pattern for 20 kB of text) and a plan shows the same
    # system prompt or document many times: each distinct text is scanned once.
    found: dict[str, str] = {}
    for kind, pattern in _PATTERNS:
        for match in pattern.finditer(text):
            value = match.group(0)[:_MAX_SHOWN]
            if not any(value in seen or seen in value for seen in found):
                found[value] = kind
    return tuple((kind, value) for value, kind in found.items())


def find_volatile(text: str, where: str) -> list[VolatileValue]:
    """Every volatile value in ``text`` (each distinct value once), located at ``where``."""
    return [VolatileValue(where, kind, value) for kind, value in _matches(text)]


def _search(kind: str, text: str, pos: int = 0) -> re.Match[str] | None:
    """``pattern.search(text, pos)`` for the pattern of ``kind``, tried in full only where its
    lead matches. The same match: wherever the pattern matches its lead matches too (the lead
    is the pattern less an opening test of the characters before it), so the first place the
    lead matches from ``pos`` on is at or before the pattern's first match; ``match`` there
    tests the boundary against the real text before it."""
    pattern, lead = _BY_KIND[kind], _LEADS[kind]
    while (found := lead.search(text, pos)) is not None:
        match = pattern.match(text, found.start())
        if match is not None:
            return match
        pos = found.start() + 1
    return None


def _masked(kind: str, text: str) -> str:
    """``pattern.sub(f"<{kind}>", text)`` for the pattern of ``kind``, by :func:`_search`."""
    pieces: list[str] = []
    end = 0
    while (match := _search(kind, text, end)) is not None:
        pieces += (text[end:match.start()], f"<{kind}>")
        end = match.end()
    if not pieces:
        return text
    pieces.append(text[end:])
    return "".join(pieces)


@functools.lru_cache(maxsize=4096)
def has_volatile(text: str) -> bool:
    """Whether ``text`` holds any volatile value (each distinct text is scanned once)."""
    if not text.isascii():
        return bool(_matches(text))
    raw = text.encode("ascii")
    digits, hexes = raw.translate(_DIGITS), raw.translate(_HEX)
    # _NEEDS written out, in _PATTERNS' order: a guarded call asks this of every new text
    # (the runaway check's request shape), and a call per test adds up.
    dash = "-" in text
    return ((dash and b"hhhhhhhh" in hexes and _search("uuid", text) is not None)
            or (b"0000-00-00" in digits and _search("timestamp", text) is not None)
            or (b"0:00:00" in digits and _search("time of day", text) is not None)
            or (b"0000000000" in digits and _search("epoch time", text) is not None)
            or ((dash or "_" in text) and _search("request id", text) is not None)
            or (b"h" * 24 in hexes and _search("hex id", text) is not None))


# A sentence ends at . ! or ? followed by white space; a line ends a sentence too. Dots inside
# a timestamp or a version ("10:00:00.5", "v1.2") are not followed by a space.
_SENTENCE_END = re.compile(r"(?<=[.!?])[ \t]+|\n")


def _split_paragraph(paragraph: str) -> tuple[str, str]:
    """A paragraph's sentences (and lines) without and with volatile values."""
    pieces = [p for p in _SENTENCE_END.split(paragraph) if p.strip()]
    stable = [p for p in pieces if not has_volatile(p)]
    volatile = [p for p in pieces if has_volatile(p)]
    joiner = "\n" if "\n" in paragraph.strip() else " "
    return joiner.join(stable), joiner.join(volatile)


def split_paragraphs(text: str) -> tuple[str, str]:
    """``(stable, volatile)``: the parts of ``text`` without and with volatile values.

    Paragraphs are separated by blank lines; a paragraph that mixes stable and volatile
    sentences (or lines) is split between them, so that "Current time: 10:01:07. You are the
    Acme agent ..." leaves the agent's instructions in the stable part. Everything keeps its
    order within each part; either part may be empty. Nothing is reworded.
    """
    stable: list[str] = []
    volatile: list[str] = []
    for paragraph in re.split(r"\n\s*\n", text):
        if not has_volatile(paragraph):
            stable.append(paragraph)
            continue
        keep, moved = _split_paragraph(paragraph)
        if keep:
            stable.append(keep)
        volatile.append(moved)
    return "\n\n".join(stable), "\n\n".join(volatile)


def mask_volatile(text: str) -> str:
    """``text`` with each volatile value replaced by its kind in angle brackets
    (``"checked at <timestamp>"``): equal for texts that differ only in such values."""
    if not text or not has_volatile(text):
        return text
    if not text.isascii():
        for kind, _ in _PATTERNS:
            text = _masked(kind, text)
        return text
    # Only the patterns whose necessary part is in the text run (as in has_volatile). Exact:
    # a replacement ("<kind>") adds no digit, hex run, "_" or "-", so a pattern that cannot
    # match the text cannot match it after the replacements before it either.
    raw = text.encode("ascii")
    digits, hexes = raw.translate(_DIGITS), raw.translate(_HEX)
    for kind, _ in _PATTERNS:
        if _NEEDS[kind](text, digits, hexes):
            text = _masked(kind, text)
    return text
