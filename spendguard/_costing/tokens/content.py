"""Content both providers share: unrecognised shapes (counted as JSON), images and files.

Every function here takes a ``Profile`` and a ``Tally`` and never raises on a strange shape:
what it cannot read it counts as JSON text with extra headroom, or records as not countable.
"""

from __future__ import annotations

import base64
import binascii
import functools
import json
import math
import re
from collections.abc import Iterable, Mapping
from decimal import Decimal
from typing import Any

from spendguard._costing.tokens.count import Tally
from spendguard._costing.tokens.images import TYPICAL_SIZE_PX, image_size_from_base64
from spendguard._costing.tokens.models import Profile

__all__ = ["UNKNOWN_MARGIN", "file_part", "image", "items", "json_text", "unknown"]

# Headroom for content counted as its JSON text: keys and punctuation already overcount what
# a model sees, 25 % more covers renderings that are wordier than the JSON.
UNKNOWN_MARGIN = Decimal("0.25")
# PDF pages: the providers convert each page to text and (Claude, OpenAI vision models) an
# image. Anthropic documents 1,500-3,000 text tokens a page; the page image follows the
# model's image rule for a letter page at 200 dpi.
PAGE_TEXT_TOKENS = 1500
PAGE_TEXT_TOKENS_MAX = 3000
PAGE_SIZE_PX = (1700, 2200)
_BYTES_PER_PAGE_GUESS = 50_000  # only when a PDF hides its page objects in compressed streams


def json_text(value: Any) -> str:
    """Compact JSON of ``value``; ``repr`` when it is not JSON-serialisable."""
    try:
        return json.dumps(value, ensure_ascii=False, separators=(",", ":"), default=str)
    except (TypeError, ValueError, RecursionError):
        return repr(value)


def unknown(profile: Profile, tally: Tally, value: Any, note: str = "JSON estimate") -> None:
    """Count a shape we do not recognise as its JSON text, with ``UNKNOWN_MARGIN`` headroom."""
    if value is None:
        return
    text = value if isinstance(value, str) else json_text(value)
    profile.text(tally, text, extra_margin=UNKNOWN_MARGIN, note=note)


def items(value: Any) -> list[Any] | None:
    """``value`` as a list if it is a list-like of items (not a str, bytes or mapping)."""
    if isinstance(value, list):
        return value
    if isinstance(value, str | bytes | bytearray | Mapping) or not isinstance(value, Iterable):
        return None
    return list(value)


def image(profile: Profile, tally: Tally, source: str | None, detail: Any = "auto") -> None:
    """An image given as a ``data:`` URL / base64 payload (size read) or a reference (bounded)."""
    rule = profile.image_rule
    detail = detail if isinstance(detail, str) else "auto"
    size = None
    if isinstance(source, str) and not source.startswith(("http://", "https://", "file-")):
        size = image_size_from_base64(source)
    if size is not None:
        tokens = rule.tokens(*size, detail=detail)
        tally.add_estimate(tokens, tokens * profile.margin, note="image rule")
        return
    # Size unknown (a URL, a file id, unreadable data): a typical photo, bounded by the
    # largest image the rule can bill.
    central = rule.tokens(*TYPICAL_SIZE_PX, detail=detail)
    bound = rule.max_tokens(detail) * (1 + profile.margin)
    tally.add_estimate(central, max(Decimal(0), bound - central), note="image rule")


@functools.lru_cache(maxsize=256)
def pdf_pages(data: str) -> int:
    """Pages in a base64 PDF (a bare payload or a ``data:`` URL); a size-based guess if hidden."""
    if data.startswith("data:"):
        data = data.partition(",")[2]
    try:
        raw = base64.b64decode(data + "=" * (-len(data) % 4))
    except (binascii.Error, ValueError):
        return max(1, math.ceil(len(data) * 3 / 4 / _BYTES_PER_PAGE_GUESS))
    pages = len(re.findall(rb"/Type\s*/Page(?![a-zA-Z])", raw))
    if pages == 0:
        counts = [int(n) for n in re.findall(rb"/Type\s*/Pages\b[^>]*?/Count\s+(\d+)", raw)]
        pages = max(counts, default=0)
    return pages or max(1, math.ceil(len(raw) / _BYTES_PER_PAGE_GUESS))


def pdf(profile: Profile, tally: Tally, data: str) -> None:
    """A base64 PDF: per page, extracted text plus the page image."""
    pages = pdf_pages(data)
    rule = profile.image_rule
    central = pages * (PAGE_TEXT_TOKENS + rule.tokens(*PAGE_SIZE_PX))
    bound = pages * (PAGE_TEXT_TOKENS_MAX + rule.max_tokens()) * (1 + profile.margin)
    tally.add_estimate(central, bound - central, note="PDF pages")


def file_part(profile: Profile, tally: Tally, data: Any, *, media_type: Any = None,
              by_reference: bool = False) -> None:
    """A file passed inline (base64 / data URL) or by reference (id or URL: not countable)."""
    if by_reference or not isinstance(data, str) or not data:
        tally.uncounted("files by reference")
        return
    is_pdf = media_type == "application/pdf" or data.startswith(("data:application/pdf",
                                                                 "JVBERi"))
    if is_pdf:
        pdf(profile, tally, data)
        return
    payload = data.partition(",")[2] if data.startswith("data:") else data
    try:
        text = base64.b64decode(payload, validate=True).decode("utf-8")
    except (binascii.Error, ValueError):  # not text: bound it as if it were a PDF
        pdf(profile, tally, data)
        return
    unknown(profile, tally, text, note="file text")
