"""Reading a provider's report file: JSON (one page, a list of pages, or JSON Lines) or CSV."""

from __future__ import annotations

import csv
import importlib.util
import io
import json
import os
from decimal import Decimal
from pathlib import Path
from typing import Any

from spendguard._core.errors import ConfigError
from spendguard._providers import providers
from spendguard._reporting.reconcile.lines import ProviderReport

__all__ = ["PROVIDERS", "read_provider_file"]

_READER = "spendguard._providers.{}.reconcile"

PROVIDERS = tuple(name for name in providers()
                  if importlib.util.find_spec(_READER.format(name)) is not None)
"""The providers whose reports are read: each has its reader module in its package
(``_providers/<name>/reconcile.py``), with
``read_pages(pages, *, source)``, and ``csv_pages(rows, *, source)`` where its console exports
CSV (else ``JSON_ONLY``, the hint that says which JSON to save; ``CSV_ONLY`` where a JSON file
is not read)."""


def _reader(provider: str) -> Any:
    return importlib.import_module(_READER.format(provider))


def read_provider_file(path: str | os.PathLike[str], provider: str) -> ProviderReport:
    """The usage or cost report at ``path``, from ``provider`` (``openai``, ``anthropic``, or
    ``gemini``: a Google Cloud Billing export as CSV)."""
    if provider not in PROVIDERS:
        raise ConfigError(f"provider: {provider!r} is not one of {', '.join(PROVIDERS)}")
    reader = _reader(provider)
    file = Path(path)
    source = file.name
    try:
        text = file.read_text(encoding="utf-8-sig")
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"files: cannot read {file}: {exc}") from exc
    stripped = text.lstrip()
    csv_only = getattr(reader, "CSV_ONLY", None)
    if csv_only is not None and stripped.startswith(("{", "[")):
        raise ConfigError(f"{source}: {csv_only}")
    if file.suffix.lower() == ".csv" or not stripped.startswith(("{", "[")):
        csv_pages = getattr(reader, "csv_pages", None)
        if csv_pages is None:
            raise ConfigError(f"{source}: {reader.JSON_ONLY}")
        rows = list(csv.DictReader(io.StringIO(text, newline="")))
        if not rows:
            raise ConfigError(f"{source}: the CSV file has no rows")
        pages = csv_pages(rows, source=source)
    else:
        pages = _json_pages(stripped, source)
    report: ProviderReport = reader.read_pages(pages, source=source)
    return report


def _json_pages(text: str, source: str) -> list[dict[str, Any]]:
    # Numbers become Decimal at parse time: OpenAI's dollar amounts are JSON numbers.
    try:
        data = json.loads(text, parse_float=Decimal)
    except json.JSONDecodeError:
        try:
            data = [json.loads(line, parse_float=Decimal) for line in text.splitlines()
                    if line.strip()]
        except json.JSONDecodeError as exc:
            raise ConfigError(f"{source}: not JSON ({exc.msg} at line {exc.lineno}); save the "
                              f"API's response as it came") from None
    pages = data if isinstance(data, list) else [data]
    if not all(isinstance(page, dict) for page in pages):
        raise ConfigError(f"{source}: expected a report page (an object with 'data') or a "
                          f"list of pages")
    return pages
