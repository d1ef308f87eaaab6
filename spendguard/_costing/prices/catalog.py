"""The living catalog: pydantic's genai-prices as a fallback for models the table lacks.

Off by default. On with ``SPENDGUARD_PRICE_CATALOG=genai-prices`` (the default table) or
``PriceTable.with_catalog(GenaiPricesCatalog())``; it needs the ``prices`` extra
(``pip install 'spendguard-llm[prices]'``).

What it does: a model that is neither an entry, an alias nor an id a rule resolves is looked up
in genai-prices' data (the copy the installed package ships, or the last good refresh), at the
rates genai-prices gives for the call's day, and priced as an OpenAI or Anthropic model. The
entry's ``table_version`` is ``"genai-prices <version>"`` (``+<refresh time>`` after a
refresh), so every call priced this way says so in the ledger, exports and reports.

What it does not guarantee: genai-prices is maintained elsewhere, matches ids by its own
patterns, and may be stale (it listed DeepSeek's cancelled night discount for over a year);
it publishes no output limit, so a call is reserved only when the request caps its output
(otherwise it is refused, with the reason); only OpenAI- and Anthropic-shaped responses are
read (DeepSeek and Moonshot through their hosts). Its prices are not reviewed by anyone who
maintains spendguard: the bundled table, with its sources and dates, always wins.

Refresh is opt-in (:meth:`GenaiPricesCatalog.refresh`), bounded by a timeout, never done on a
call's path (a call reads the snapshot in hand), and a failed refresh keeps the last good
snapshot.
"""

from __future__ import annotations

import json
import logging
import os
import threading
from collections.abc import Callable, Mapping
from datetime import UTC, date, datetime
from decimal import Decimal
from importlib import metadata
from pathlib import Path
from typing import Any

from spendguard._core.errors import ConfigError
from spendguard._providers.adapter import adapter_for, adapters

__all__ = ["CATALOG_ENV", "DEFAULT_URL", "GenaiPricesCatalog", "catalog_from_env",
           "fallback_providers"]

log = logging.getLogger("spendguard.prices")

CATALOG_ENV = "SPENDGUARD_PRICE_CATALOG"
"""``genai-prices`` turns the fallback catalog on for the default table; unset: off."""
DEFAULT_URL = ("https://raw.githubusercontent.com/pydantic/genai-prices/refs/heads/main/prices/"
               "new_data/v2/data.json")
"""Where genai-prices publishes its data (what its own ``UpdatePrices`` fetches)."""
EXTRA = "pip install 'spendguard-llm[prices]'"

Fetch = Callable[[str, float], bytes]
"""``fetch(url, timeout_s) -> body``: how a refresh downloads (injectable for tests)."""


def _http_fetch(url: str, timeout_s: float) -> bytes:
    import httpx2  # noqa: PLC0415 - only an opted-in refresh downloads anything

    response = httpx2.get(url, timeout=timeout_s, follow_redirects=True)
    response.raise_for_status()
    return response.content


class GenaiPricesCatalog:
    """genai-prices' data as a fallback price source (see the module docstring).

    ``providers``: a list of genai-prices providers to start from (a stored snapshot, in tests);
    by default the installed package's own data.
    """

    def __init__(self, providers: list[Any] | None = None, *, version: str | None = None
                 ) -> None:
        try:
            from genai_prices import data_snapshot  # noqa: PLC0415 - optional extra
        except ImportError as exc:
            raise ConfigError(f"the genai-prices fallback catalog needs genai-prices: {EXTRA}"
                              ) from exc
        self._lock = threading.Lock()  # a refresh swaps the snapshot; calls only read it
        if providers is None:
            self._snapshot = data_snapshot.get_snapshot()
            self.version = f"genai-prices {metadata.version('genai-prices')}"
        else:
            self._snapshot = data_snapshot.DataSnapshot(providers=providers,
                                                        from_auto_update=False)
            self.version = f"genai-prices {version or metadata.version('genai-prices')}"
        self.refreshed_at: datetime | None = None
        self.last_error: str | None = None

    @classmethod
    def from_file(cls, path: str | os.PathLike[str]) -> GenaiPricesCatalog:
        """A catalog from a saved copy of genai-prices' data: its published ``data.json`` (a
        list of providers) or a snapshot object ``{"source", "version", "taken",
        "providers"}`` (a last good snapshot kept on disk, or a test's stored one)."""
        try:
            from genai_prices import types  # noqa: PLC0415 - optional extra
        except ImportError as exc:
            raise ConfigError(f"the genai-prices fallback catalog needs genai-prices: {EXTRA}"
                              ) from exc
        try:
            data = json.loads(Path(path).read_text(encoding="utf-8"))
            version = None
            if isinstance(data, Mapping) and "providers" in data:
                version = f"{data.get('version', '?')}@{data.get('taken', '?')}"
                data = data["providers"]
            if not isinstance(data, list):
                raise ValueError("expected a list of providers")
            providers = types._providers_from_raw(data)  # genai-prices' own loader
        except (OSError, ValueError) as exc:
            raise ConfigError(f"{path}: not genai-prices data ({exc})") from exc
        return cls(providers, version=version)

    def price(self, model: str, day: date) -> dict[str, Any] | None:
        """A raw price entry for ``model`` on ``day`` (the price-file shape), or None."""
        snapshot = self._snapshot  # the snapshot in hand: a refresh never blocks a call
        found = self._find(snapshot, model)
        if found is None:
            return None
        provider, prefix, info = found
        when = datetime(day.year, day.month, day.day, tzinfo=UTC)
        price = info.get_prices(when)
        rates, tiers = _rates(price, provider)
        if "input" not in rates or "output" not in rates:
            return None  # not a chat model spendguard can price (images, audio, ...)
        entry: dict[str, Any] = {
            "provider": provider, "usd_per_million": rates,
            "source": f"{self.version} ({info.id}); not reviewed by spendguard",
            "as_of": (self.refreshed_at or datetime.now(UTC)).date(),
            "note": f"priced by the fallback catalog as {prefix}{info.id}",
        }
        if tiers:
            entry["tiers"] = tiers
        if info.context_window:
            entry["context_window"] = info.context_window
        return entry

    def _find(self, snapshot: Any, model: str) -> tuple[str, str, Any] | None:
        for genai_id, (provider, prefix) in fallback_providers().items():
            if prefix and not model.startswith(prefix):
                continue
            if not prefix and "/" in model:
                continue
            try:
                _, info = snapshot.find_provider_model(model.removeprefix(prefix), None,
                                                       genai_id, None)
            except LookupError:
                continue
            return provider, prefix, info
        return None

    def refresh(self, *, url: str = DEFAULT_URL, timeout_s: float = 10.0,
                fetch: Fetch | None = None) -> bool:
        """Replace the snapshot with genai-prices' published data; False (and the last good
        snapshot kept, the reason in ``last_error``) when the download or parse fails.

        Run it at start-up or from your own scheduler, never per call: it blocks for up to
        ``timeout_s`` seconds.
        """
        from genai_prices import data_snapshot, types  # noqa: PLC0415 - optional extra

        try:
            raw = json.loads((fetch or _http_fetch)(url, timeout_s))
            if not isinstance(raw, list):
                raise ValueError("expected a list of providers")
            providers = types._providers_from_raw(raw)  # genai-prices' own loader
        except Exception as exc:  # any failure keeps the last good snapshot
            self.last_error = f"{type(exc).__name__}: {exc}"
            log.warning("spendguard: refreshing the genai-prices catalog from %s failed (%s); "
                        "the last good snapshot (%s) stays in use", url, self.last_error,
                        self.version)
            return False
        stamp = datetime.now(UTC)
        with self._lock:
            self._snapshot = data_snapshot.DataSnapshot(providers=providers,
                                                        from_auto_update=True)
            base = self.version.split("+", 1)[0]
            self.version = f"{base}+{stamp.strftime('%Y%m%dT%H%M%SZ')}"
            self.refreshed_at, self.last_error = stamp, None
        return True


def fallback_providers() -> dict[str, tuple[str, str]]:
    """genai-prices provider -> (spendguard provider, price-id prefix): the providers whose
    models the fallback prices (their adapters' ``genai_prices_ids``), and the host name a
    compatible host's models are priced under."""
    return {genai_id: (adapter.name, prefix) for adapter in adapters()
            if adapter.genai_prices_fallback
            for genai_id, prefix in adapter.genai_prices_ids.items()}


def _rates(price: Any, provider: str) -> tuple[dict[str, Decimal], list[dict[str, Any]]]:
    """genai-prices' rates as ``usd_per_million`` and whole-request long-context tiers."""
    from genai_prices.types import TieredPrices  # noqa: PLC0415 - optional extra

    adapter = adapter_for(provider)
    fields = {"input": "input_mtok", "cache_read": "cache_read_mtok"}
    if adapter.cache_ttls:  # genai-prices' one write rate: the provider's shortest TTL
        fields[f"cache_write_{adapter.cache_ttls[0]}"] = "cache_write_mtok"
    fields["output"] = "output_mtok"
    if "1h" in adapter.cache_ttls:
        fields["cache_write_1h"] = "cache_write_1h_mtok"
    rates: dict[str, Decimal] = {}
    ratios: dict[int, tuple[Decimal, Decimal]] = {}
    for kind, name in fields.items():
        value = getattr(price, name, None)
        if value is None:
            continue
        if isinstance(value, TieredPrices):
            rates[kind] = value.base
            for tier in value.tiers:
                if value.base:
                    ratio = Decimal(tier.price) / Decimal(value.base)
                    old_in, old_out = ratios.get(tier.start, (Decimal(1), Decimal(1)))
                    ratios[tier.start] = ((old_in, max(old_out, ratio)) if kind == "output"
                                          else (max(old_in, ratio), old_out))
        else:
            rates[kind] = Decimal(value)
    # A breakpoints provider's entries state every cache rate (the price schema requires
    # them): one genai-prices leaves out is read at input, or at the write multipliers.
    if adapter.prompt_cache == "breakpoints" and "input" in rates:
        rates.setdefault("cache_read", rates["input"])
        for ttl, multiplier in adapter.cache_write_multipliers.items():
            rates.setdefault(f"cache_write_{ttl}", rates["input"] * multiplier)
    # The dearest ratio of any input-side kind reprices the whole request (never under).
    tiers = [{"above_input_tokens": start, "input_multiplier": ratio_in,
              "output_multiplier": ratio_out}
             for start, (ratio_in, ratio_out) in sorted(ratios.items())]
    return rates, tiers


def catalog_from_env(value: str | None) -> GenaiPricesCatalog | None:
    """The catalog ``$SPENDGUARD_PRICE_CATALOG`` asks for (None when unset or empty)."""
    if not value or not value.strip():
        return None
    if value.strip().lower() != "genai-prices":
        raise ConfigError(f"{CATALOG_ENV}={value!r}: the only fallback catalog is "
                          f"'genai-prices'; set {CATALOG_ENV}=genai-prices or unset it")
    return GenaiPricesCatalog()
