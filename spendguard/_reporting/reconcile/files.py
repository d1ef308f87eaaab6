"""Reading a provider's report file: JSON (one page, a list of pages, or JSON Lines) or CSV."""

from __future__ import annotations

import csv
import io
import json
import os
from decimal import Decimal
from pathlib import Path
from typing import Any

from spendguard._core.errors import ConfigError
from spendguard._reporting.reconcile.anthropic import csv_pages, read_anthropic_pages
from spendguard._reporting.reconcile.gemini import read_billing_rows
from spendguard._reporting.reconcile.lines import ProviderReport
from spendguard._reporting.reconcile.openai import read_openai_pages

__all__ = ["PROVIDERS", "read_provider_file"]

PROVIDERS = ("openai", "anthropic", "gemini")


def read_provider_file(path: str | os.PathLike[str], provider: str) -> ProviderReport:
    """The usage or cost report at ``path``, from ``provider`` (``openai``, ``anthropic``, or
    ``gemini``: a Google Cloud Billing export as CSV)."""
    if provider not in PROVIDERS:
        raise ConfigError(f"provider: {provider!r} is not one of {', '.join(PROVIDERS)}")
    file = Path(path)
    source = file.name
    try:
        text = file.read_text(encoding="utf-8-sig")
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"files: cannot read {file}: {exc}") from exc
    stripped = text.lstrip()
    if provider == "gemini":
        if stripped.startswith(("{", "[")):
            raise ConfigError(f"{source}: Gemini costs are read from a Google Cloud Billing "
                              "export saved as CSV (docs/finance.md), not JSON")
        return read_billing_rows(list(csv.DictReader(io.StringIO(text, newline=""))),
                                 source=source)
    if file.suffix.lower() == ".csv" or not stripped.startswith(("{", "[")):
        if provider != "anthropic":
            raise ConfigError(f"{source}: OpenAI reports are read as the API's JSON; save "
                              f"the response of /v1/organization/usage/completions or /costs")
        rows = list(csv.DictReader(io.StringIO(text, newline="")))
        if not rows:
            raise ConfigError(f"{source}: the CSV file has no rows")
        pages = csv_pages(rows, source=source)
    else:
        pages = _json_pages(stripped, source)
    if provider == "openai":
        return read_openai_pages(pages, source=source)
    return read_anthropic_pages(pages, source=source)


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
