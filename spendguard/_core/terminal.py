"""Text from the ledger made safe for a terminal: control characters shown, never obeyed.

Tag values, scope names, model ids and provider notes come from users and providers; written
raw, an escape sequence in one could recolour, retitle or rewrite what a terminal shows (or
hide a row). Each character that is not printable (C0/C1 controls, DEL, bidirectional
overrides and other format characters) is written as its Python escape (``\\x1b``), so the
text stays readable and the same value always shows the same way.
"""

from __future__ import annotations

__all__ = ["printable"]


def printable(text: str) -> str:
    """``text`` with every non-printable character replaced by its escape (``\\x07``)."""
    if text.isprintable():
        return text  # the common case, without copying
    return "".join(ch if ch.isprintable() else ascii(ch)[1:-1] for ch in text)
