"""Filters of ``Ledger.records()``: one meaning, shared by every backend."""

from __future__ import annotations

import re
from datetime import datetime

from spendguard._budget.ledger.base import SpendRecord
from spendguard._core.errors import ConfigError
from spendguard._core.periods import as_utc

__all__ = ["TAG_KEY", "parse_tag", "record_matches"]

# Keys are plain words so that a backend can address them in a JSON path without quoting.
TAG_KEY = re.compile(r"[A-Za-z_][A-Za-z0-9_.\-]{0,63}")


def parse_tag(tag: str) -> tuple[str, str | None]:
    """``"team=search"`` as ``("team", "search")``; ``"team"`` (any value) as ``("team", None)``."""
    key, sep, value = tag.partition("=")
    if not TAG_KEY.fullmatch(key):
        raise ConfigError(f"tag: {tag!r} is not 'key' or 'key=value' with a key of letters, "
                          f"digits, '_', '.' or '-'")
    return key, (value if sep else None)


def record_matches(record: SpendRecord, *, since: datetime | None, until: datetime | None,
                   scope: str | None, tag: str | None, model: str | None) -> bool:
    """Whether ``record`` passes the filters: ``since <= time < until``, and the rest exactly."""
    if since is not None and record.time < as_utc(since):
        return False
    if until is not None and record.time >= as_utc(until):
        return False
    if scope is not None and scope not in record.scopes:
        return False
    if model is not None and record.model != model:
        return False
    if tag is not None:
        key, value = parse_tag(tag)
        if key not in record.tags or (value is not None and record.tags[key] != value):
            return False
    return True
