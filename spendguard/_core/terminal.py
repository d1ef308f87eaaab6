"""Text made safe to show: control characters shown, never obeyed; passwords in URLs masked.

Tag values, scope names, model ids and provider notes come from users and providers; written
raw, an escape sequence in one could recolour, retitle or rewrite what a terminal shows (or
hide a row). Each character that is not printable (C0/C1 controls, DEL, bidirectional
overrides and other format characters) is written as its Python escape (``\\x1b``), so the
text stays readable and the same value always shows the same way. A ledger URL is shown
(in errors, logs and records) with its password replaced by ``***``.
"""

from __future__ import annotations

from urllib.parse import quote, unquote

__all__ = ["masked_url", "printable"]


def printable(text: str) -> str:
    """``text`` with every non-printable character replaced by its escape (``\\x07``)."""
    if text.isprintable():
        return text  # the common case, without copying
    return "".join(ch if ch.isprintable() else ascii(ch)[1:-1] for ch in text)


def masked_url(url: str) -> str:
    """``url`` with the password of its user info shown as ``***`` (``redis://:***@host/0``).

    Read by hand rather than with ``urlsplit`` so that any URL can be shown, however bad:
    several hosts (``redis+cluster://:pw@h1:7000,h2:7001``), a query with no path, ports
    that are not numbers.
    """
    scheme, sep, rest = url.partition("://")
    netloc, slash, tail = rest.partition("/")
    query_at = netloc.find("?")
    if query_at >= 0:  # 'redis://host?prefix=...' has no path
        netloc, tail, slash = netloc[:query_at], netloc[query_at:] + slash + tail, ""
    userinfo, at, hosts = netloc.rpartition("@")
    if not at or ":" not in userinfo:
        return url
    user = quote(unquote(userinfo.partition(":")[0]), safe="")
    return f"{scheme}{sep}{user}:***@{hosts}{slash}{tail}"
