"""Shared documents inside single strings: a question and a document sent as one text.

Anthropic caches only up to a ``cache_control`` marker on a block, so a document that shares a
text block with the question is never cached there, and no other block can come between them.
Splitting the text into adjacent blocks (the same characters, in the same order) is safe; it
helps by itself when the shared document starts the text, and otherwise only together with
moving it first, which changes the order of what was written (opt-in: ``reorder_content``).

The shared texts are the caller's (``shared=[DOC]``) or, in a plan, the longest prefix or
suffix that the first user message texts of several requests have in common
(:func:`common_edges`).
"""

from __future__ import annotations

from collections.abc import Collection, Sequence

__all__ = ["MIN_SHARED_CHARS", "common_edges", "split_text"]

MIN_SHARED_CHARS = 2000
"""A shared run shorter than this (about 500 tokens) is not worth a block of its own."""


def split_text(text: str, shared_texts: Collection[str]) -> tuple[list[str], str] | None:
    """``(pieces, shared)``: ``text`` cut around the first shared text it contains, or None.

    The pieces concatenate to ``text`` except for white space at the cuts; whitespace-only
    pieces are dropped. None when no shared text is inside (or ``text`` is one exactly).
    """
    for shared in sorted(shared_texts, key=len, reverse=True):
        if len(shared) < MIN_SHARED_CHARS or shared == text or shared not in text:
            continue
        start = text.index(shared)
        pieces = [text[:start].rstrip(), shared, text[start + len(shared):].lstrip()]
        return [piece for piece in pieces if piece.strip()], shared
    return None


def _common_prefix(texts: Sequence[str]) -> str:
    # The lexicographically first and last texts differ earliest: their common prefix is all's.
    first, last = min(texts), max(texts)
    end = next((i for i, (a, b) in enumerate(zip(first, last, strict=False)) if a != b),
               min(len(first), len(last)))
    return first[:end]


def common_edges(texts: Sequence[str]) -> list[str]:
    """The longest prefix and suffix shared by all of ``texts`` (two or more), when long.

    The run is cut back to a word boundary, so that the varying part (a question, an id) is
    not split mid-word.
    """
    if len(texts) < 2:
        return []
    found = []
    prefix = _common_prefix(texts)
    prefix = prefix[:prefix.rfind(" ") + 1] if " " in prefix and prefix not in texts else prefix
    suffix = _common_prefix([t[::-1] for t in texts])[::-1]
    suffix = suffix[suffix.find(" "):] if " " in suffix and suffix not in texts else suffix
    for run in (prefix.strip(), suffix.strip()):
        if len(run) >= MIN_SHARED_CHARS and run not in found:
            found.append(run)
    return found
