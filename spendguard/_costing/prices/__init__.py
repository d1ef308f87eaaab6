"""Prices per model: look-up by exact id or declared alias, user overrides, the table version.

The data lives in TOML files (``pricing/openai.toml``, ``pricing/anthropic.toml``, shipped in the
wheel as ``spendguard/_pricing``); :mod:`spendguard._costing.prices.schema` validates them. Rates
are Decimal USD **per million tokens**; a miss is an
:class:`~spendguard._core.errors.UnknownModelError`, never a silent $0.
"""

from __future__ import annotations

import bisect
import difflib
import os
import threading
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from datetime import UTC, date, datetime
from decimal import Decimal
from pathlib import Path
from types import MappingProxyType

from spendguard._core.errors import PriceFileError, UnknownModelError
from spendguard._costing.prices import schema as price_schema
from spendguard._costing.prices.catalog import CATALOG_ENV, GenaiPricesCatalog, catalog_from_env
from spendguard._costing.prices.ids import Resolved, _Entries, resolve_id
from spendguard._costing.prices.schema import (
    EntryModel,
    PriceSource,
    SelfHostedModel,
    ValidTable,
    cache_ttls,
)
from spendguard._costing.prices.sections import Host

__all__ = [
    "CACHE_STORAGE",
    "CATALOG_ENV",
    "PRICES_ENV",
    "GenaiPricesCatalog",
    "LongContextTier",
    "ModelPrice",
    "PriceModifier",
    "PriceSource",
    "PriceTable",
    "Resolved",
    "default_table",
    "load_price_file",
    "price",
    "register_prices",
]

PRICES_ENV = "SPENDGUARD_PRICES"
"""Environment variable naming extra price files (``os.pathsep``-separated), layered on the
bundled table when :func:`default_table` is first built."""

HOW_TO_ADD = (
    "Add a price without editing spendguard: write a TOML file such as\n"
    '    [models."{model}"]\n'
    '    provider = "openai"            # or "anthropic"\n'
    "    usd_per_million = {{ input = 1.25, cache_read = 0.125, output = 10 }}\n"
    '    source = "https://..."         # where the price comes from\n'
    "    as_of = 2026-11-30\n"
    "and point SPENDGUARD_PRICES at it, or call spendguard.register_prices(path_or_mapping), "
    "or pass table=PriceTable.bundled().with_overrides(...). See docs/prices.md."
)


@dataclass(frozen=True)
class LongContextTier:
    """Rates for a request whose total input tokens exceed ``above_input_tokens``.

    The whole request is repriced, not only the tokens above the threshold: input-side rates
    (input, cache reads, cache writes) are multiplied by ``input_multiplier`` and output by
    ``output_multiplier``.
    """

    above_input_tokens: int
    input_multiplier: Decimal
    output_multiplier: Decimal

    def multiplier_for(self, kind: str) -> Decimal:
        """The multiplier this tier applies to one token kind."""
        return self.output_multiplier if kind == "output" else self.input_multiplier

    def __str__(self) -> str:
        return f">{self.above_input_tokens} input tokens"


@dataclass(frozen=True)
class PriceModifier:
    """A named price change: batch, a service tier, fast speed, a data-residency region.

    ``usd_per_million`` replaces the base rate of the kinds it names (for providers that publish
    rounded rates); ``multiplier`` then scales the kinds in ``kinds`` (``None``: every kind).
    """

    name: str
    multiplier: Decimal = Decimal(1)
    kinds: frozenset[str] | None = None
    usd_per_million: Mapping[str, Decimal] = field(default_factory=dict)

    def applies_to(self, kind: str) -> bool:
        """Whether the multiplier scales this token kind."""
        if self.kinds is None:
            return True
        return kind in self.kinds or (kind.startswith("cache_write_")
                                      and "cache_write" in self.kinds)


CACHE_STORAGE = "cache_storage_token_seconds"
"""The usage line of an explicit context cache's storage: tokens x seconds of TTL, priced from
the entry's ``cache_storage_usd_per_million_hour``."""
# USD per million token-hours -> USD per 1,000 token-seconds: / 1,000,000 x 1,000 / 3,600.
_TOKEN_SECONDS_PER_1K_RATE = Decimal(3_600_000)


@dataclass(frozen=True)
class ModelPrice:
    """What one model's tokens cost: Decimal USD per million tokens of each kind.

    ``cache_write_usd_per_million`` is keyed by TTL ("5m", "1h", "30m", "12h");
    ``tool_usd_per_1k_requests`` by server tool ("web_search", ...). ``table_version`` names the
    price table this entry came from, so every cost can say what priced it.
    """

    model: str
    provider: str
    mode: str
    input_usd_per_million: Decimal
    output_usd_per_million: Decimal | None
    cache_read_usd_per_million: Decimal | None
    cache_write_usd_per_million: Mapping[str, Decimal]
    tool_usd_per_1k_requests: Mapping[str, Decimal]
    tiers: tuple[LongContextTier, ...]
    modifiers: Mapping[str, PriceModifier]
    context_window: int | None
    max_input_tokens: int | None
    max_output_tokens: int | None
    max_output_tokens_batch: int | None
    min_cacheable_tokens: int | None
    aliases: tuple[str, ...]
    source: str
    as_of: date
    note: str | None
    table_version: str
    count_as: str | None = None
    """The model whose tokenizer counts this entry's text (platform and host entries)."""
    cache_storage_usd_per_million_hour: Decimal | None = None
    """Explicit context caches: USD per million cached tokens per hour (Gemini)."""
    self_hosted: SelfHostedModel | None = None
    """The GPU deployment a self-hosted entry's rates were derived from."""
    effective_from: date | None = None
    """The first UTC day these rates are in force (None: since before any dated change)."""
    effective_until: date | None = None
    """The last UTC day these rates are in force (None: until a change not yet announced)."""
    change: str | None = None
    """The dated changes in force in this period (their notes); None: the entry's own rates."""
    dated_snapshots: bool = True
    """Whether the provider's dated snapshot ids of this model resolve to it (see ``ids``)."""
    price_source: str = "table"
    """``table`` (the price files) or ``catalog`` (the genai-prices fallback, opted into)."""

    @property
    def tokenizer_model(self) -> str:
        """The model id to count this entry's tokens with."""
        return self.count_as or self.model

    def base_rate(self, kind: str) -> Decimal:
        """The Standard-tier rate of one token kind in USD per million tokens.

        Kinds: ``input``, ``cache_read``, ``cache_write_<ttl>``, ``output``. A model without a
        cache-read rate has no caching discount (input rate). A model that declares no
        cache-write rate bills writes as input (OpenAI before gpt-5.6); one that declares some
        TTLs but not this one raises, as does output on an embedding model.
        """
        if kind == "input":
            return self.input_usd_per_million
        if kind == "cache_read":
            return self.cache_read_usd_per_million or self.input_usd_per_million
        if kind == "output" and self.output_usd_per_million is not None:
            return self.output_usd_per_million
        if kind.startswith("cache_write_"):
            ttl = kind.removeprefix("cache_write_")
            if ttl in self.cache_write_usd_per_million:
                return self.cache_write_usd_per_million[ttl]
            if not self.cache_write_usd_per_million:
                return self.input_usd_per_million
        raise UnknownModelError(
            f"{self.model}: the price table has no rate for {kind} tokens "
            f"(table {self.table_version}); add usd_per_million.{kind} to the model's entry. "
            + HOW_TO_ADD.format(model=self.model),
            name=f"{self.model}:{kind}",
            kind="token kind",
        )

    def tool_rate_per_1k(self, tool: str) -> Decimal:
        """USD per 1,000 requests of a server tool (web search, ...); for
        :data:`CACHE_STORAGE` (an explicit context cache's storage), per 1,000 token-seconds."""
        if tool == CACHE_STORAGE and self.cache_storage_usd_per_million_hour is not None:
            return self.cache_storage_usd_per_million_hour / _TOKEN_SECONDS_PER_1K_RATE
        try:
            return self.tool_usd_per_1k_requests[tool]
        except KeyError:
            raise UnknownModelError(
                f"{self.model}: no price for {tool} tool requests (table {self.table_version}); "
                f'add usd_per_1k_requests = {{ {tool} = ... }} to the model\'s entry. '
                + HOW_TO_ADD.format(model=self.model),
                name=f"{self.model}:{tool}",
                kind="tool",
            ) from None

    def tier_for(self, total_input_tokens: int) -> LongContextTier | None:
        """The long-context tier a request with this many input tokens falls in, if any."""
        chosen = None
        for tier in self.tiers:  # ascending, validated on load
            if total_input_tokens > tier.above_input_tokens:
                chosen = tier
        return chosen

    def modifier(self, name: str) -> PriceModifier:
        """A named modifier (``batch``, ``priority``, ``speed_fast``, ...); raises when unpriced."""
        try:
            return self.modifiers[name]
        except KeyError:
            raise UnknownModelError(
                f"{self.model}: no price for {name!r} (a batch / service-tier / speed / region "
                f"modifier; table {self.table_version}). "
                f"Known: {', '.join(sorted(self.modifiers))}. "
                f"Add modifiers = {{ {name} = <multiplier> }} to the model's entry. "
                + HOW_TO_ADD.format(model=self.model),
                name=f"{self.model}:{name}",
                kind="price modifier",
                suggestions=difflib.get_close_matches(name, list(self.modifiers)),
            ) from None


_MAX_HOST_URLS = 1024  # distinct request URLs whose host is remembered per table

class PriceTable:
    """An immutable set of model prices, looked up by exact id or declared alias.

    Build one with :meth:`bundled`, :func:`load_price_file` or :meth:`with_overrides`;
    ``version`` ("<latest as_of>.<content hash>") changes whenever any price changes.
    """

    def __init__(self, valid: ValidTable, catalog: GenaiPricesCatalog | None = None) -> None:
        self._valid = valid
        self.catalog = catalog
        """The fallback catalog for models the table lacks (None: off, the default)."""
        self._from_catalog: dict[tuple[str, date, str], ModelPrice | None] = {}
        self.version = valid.version
        self._entries = {model: _model_price(model, entry, valid.version)
                         for model, entry in valid.entries.items()}
        self._aliases = {alias: model for model, entry in self._entries.items()
                         for alias in entry.aliases}
        # Entries with dated changes: the first day of each later period, and each period's
        # prices (the first period is the entry itself, before any change).
        self._periods: dict[str, tuple[list[date], tuple[ModelPrice, ...]]] = {}
        for model, periods in valid.periods.items():
            prices = tuple(_model_price(model, period.entry, valid.version, period.start,
                                        period.end, period.change) for period in periods)
            self._entries[model] = prices[0]
            self._periods[model] = ([p.start for p in periods[1:] if p.start is not None],
                                    prices)
        # host_for's answers by URL: a client asks about the same few URLs on every call.
        self._host_of: dict[str, Host | None] = {}
        # Ids resolved by a declared rule (dated snapshot, Bedrock profile, Vertex version),
        # by (id, call day): a client sends the same few ids on every call.
        self._resolved: dict[tuple[str, date], Resolved | None] = {}
        self._rule_view = _Entries(
            has=lambda name: name in self._entries,
            provider=lambda name: self._entries[name].provider if name in self._entries
            else None,
            aliases=lambda name: self._entries[name].aliases if name in self._entries else (),
            snapshots=lambda name: self._entries[name].dated_snapshots)

    @classmethod
    def bundled(cls) -> PriceTable:
        """The price files shipped with spendguard, without user overrides."""
        files = [price_schema.read_price_file(path) for path in price_schema.bundled_files()]
        return cls(price_schema.build(files))

    def get(self, model: str, at: datetime | date | None = None) -> ModelPrice:
        """The price of ``model`` (exact id, else declared alias) in force at ``at``.

        ``at`` is the call's time (an aware datetime, read as its UTC day, or a date); None is
        now. Raises UnknownModelError.
        """
        # Membership and indexing: every guarded call looks its model up twice.
        entry = None
        if model in self._entries:
            entry = self._entries[model]
        elif model in self._aliases:
            entry = self._entries[self._aliases[model]]
        day = None
        if entry is None:
            day = _utc_day(at)
            resolved = self.resolve(model, day)
            if resolved is None:
                fallback = self._catalog_price(model, day)
                if fallback is not None:
                    return fallback
                raise _unknown_model(model, [*self._entries, *self._aliases], self.version,
                                     catalog=self.catalog)
            entry = self._entries[resolved.model]
        if entry.model not in self._periods:
            return entry
        starts, prices = self._periods[entry.model]
        return prices[bisect.bisect_right(starts, day or _utc_day(at))]

    def _catalog_price(self, model: str, day: date) -> ModelPrice | None:
        """The fallback catalog's price of a model the table lacks (cached per day and
        catalog version), None when there is no catalog or it has no price either."""
        catalog = self.catalog
        if catalog is None:
            return None
        key = (model, day, catalog.version)
        if key not in self._from_catalog:
            if len(self._from_catalog) >= _MAX_HOST_URLS:
                self._from_catalog.clear()
            raw = catalog.price(model, day)
            found = None
            if raw is not None:
                try:
                    entry = EntryModel.model_validate(raw)
                except ValueError:  # a catalog price spendguard's schema cannot hold
                    entry = None
                if entry is not None:
                    found = replace(_model_price(model, entry, catalog.version),
                                    price_source="catalog")
            self._from_catalog[key] = found
        return self._from_catalog[key]

    def with_catalog(self, catalog: GenaiPricesCatalog | None) -> PriceTable:
        """The same prices with ``catalog`` as the fallback for models they lack (None: off)."""
        return PriceTable(self._valid, catalog)

    def resolve(self, model: str, at: datetime | date | None = None) -> Resolved | None:
        """The entry an id that is neither an entry nor an alias names under a declared rule
        (dated snapshot, Bedrock inference profile, Vertex version), with the rule; else None.
        """
        day = _utc_day(at)
        key = (model, day)
        if key not in self._resolved:
            if len(self._resolved) >= _MAX_HOST_URLS:
                self._resolved.clear()
            self._resolved[key] = resolve_id(model, self._rule_view, day)
        return self._resolved[key]

    def periods(self, model: str) -> tuple[ModelPrice, ...]:
        """Every price ``model`` has had or is scheduled to have, oldest first (one when its
        rates carry no dates)."""
        entry = self.get(model)
        periods = self._periods.get(entry.model)
        return periods[1] if periods is not None else (entry,)

    @property
    def hosts(self) -> Mapping[str, Host]:
        """OpenAI-compatible hosts (and self-hosted endpoints) by name."""
        return self._valid.hosts

    def host_for(self, url: str) -> Host | None:
        """The host whose base URL ``url`` lies under (the longest match), if any."""
        if url in self._host_of:
            return self._host_of[url]
        matches = [host for host in self._valid.hosts.values() if host.matches(url)]
        found = max(matches, key=lambda host: len(host.base_url)) if matches else None
        if len(self._host_of) >= _MAX_HOST_URLS:
            self._host_of.clear()
        self._host_of[url] = found
        return found

    def __contains__(self, model: object) -> bool:
        """Whether ``model`` is priced today: an entry, an alias, or an id a rule resolves."""
        return (model in self._entries or model in self._aliases
                or (isinstance(model, str) and (
                    self.resolve(model) is not None
                    or self._catalog_price(model, _utc_day(None)) is not None)))

    def models(self, provider: str | None = None) -> list[str]:
        """Canonical model ids (no aliases), sorted; only one provider's when given."""
        return sorted(name for name, entry in self._entries.items()
                      if provider is None or entry.provider == provider)

    def with_overrides(self, *sources: PriceSource) -> PriceTable:
        """A new table with these files or mappings layered on top (later ones win).

        An override entry for a known id replaces the fields it names and keeps the others
        (aliases included); it must carry its own ``source`` and ``as_of``.
        """
        files = [price_schema.read_price_source(source) for source in sources]
        return PriceTable(price_schema.build(files, base=self._valid.raw,
                                             base_hosts=self._valid.hosts), self.catalog)

    def __repr__(self) -> str:
        return f"<PriceTable {self.version}: {len(self._entries)} models>"


def _utc_day(at: datetime | date | None) -> date:
    """The UTC day of a call's time (now when None); a naive datetime is read as UTC."""
    if at is None:
        return datetime.now(UTC).date()
    if at.__class__ is datetime or isinstance(at, datetime):
        # A budget clock's time is in UTC already (read_clock): no conversion to make.
        return (at.astimezone(UTC) if at.tzinfo is not None and at.tzinfo is not UTC
                else at).date()
    return at


def _unknown_model(model: str, known: list[str], version: str,
                   catalog: GenaiPricesCatalog | None = None) -> UnknownModelError:
    suggestions = difflib.get_close_matches(model, known, n=3, cutoff=0.6)
    hint = f" Did you mean {', '.join(map(repr, suggestions))}?" if suggestions else ""
    where = f" nor in the fallback catalog ({catalog.version})" if catalog is not None else ""
    return UnknownModelError(
        f"No price for model {model!r} in price table {version}{where}.{hint} "
        "spendguard never guesses a price from a similar name. " + HOW_TO_ADD.format(model=model),
        name=model,
        suggestions=suggestions,
    )


class _Default:
    """The process-wide table, built lazily (tests reset it with ``_reset_default_table``)."""

    lock = threading.RLock()  # register_prices holds it while default_table builds
    table: PriceTable | None = None


def default_table() -> PriceTable:
    """The process-wide table: bundled prices + ``$SPENDGUARD_PRICES`` + :func:`register_prices`.

    Built on first use (the environment is read then, never at import) and cached.
    """
    table = _Default.table  # read for every guarded call: a built table needs no lock
    if table is not None:  # (it is replaced whole, never changed in place)
        return table
    with _Default.lock:
        if _Default.table is None:
            table = PriceTable.bundled()
            env_files = [p for p in os.environ.get(PRICES_ENV, "").split(os.pathsep) if p.strip()]
            for path in env_files:
                if not Path(path).is_file():
                    raise PriceFileError(
                        f"{PRICES_ENV} names {path!r}, which is not a file; "
                        f"set {PRICES_ENV} to the path of a price TOML/JSON file or unset it",
                        path=path,
                    )
            table = table.with_overrides(*env_files) if env_files else table
            catalog = catalog_from_env(os.environ.get(CATALOG_ENV))
            _Default.table = table.with_catalog(catalog) if catalog is not None else table
        return _Default.table


def register_prices(source: PriceSource) -> PriceTable:
    """Layer a price file or mapping onto the process-wide default table; returns the new table.

    Costs computed afterwards name the new table's version.
    """
    with _Default.lock:  # two registrations at once must not lose one
        _Default.table = default_table().with_overrides(source)
        return _Default.table


def _reset_default_table() -> None:
    """Forget the cached default table (tests; a changed ``$SPENDGUARD_PRICES``)."""
    with _Default.lock:
        _Default.table = None


def price(model: str) -> ModelPrice:
    """The price of ``model`` in the default table; raises UnknownModelError naming the fix."""
    return default_table().get(model)


def load_price_file(path: str | os.PathLike[str]) -> PriceTable:
    """A table holding only the models of one price file (TOML, or JSON of the same shape)."""
    return PriceTable(price_schema.build([price_schema.read_price_file(Path(path))]))


def _model_price(model: str, entry: EntryModel, version: str, start: date | None = None,
                 end: date | None = None, change: str | None = None) -> ModelPrice:
    rates = entry.usd_per_million.given()
    # A dated period's costs name the day its rates took effect: "<table version>@<day>".
    if start is not None:
        version = f"{version}@{start.isoformat()}"
    return ModelPrice(
        model=model,
        provider=entry.provider,
        mode=entry.mode,
        input_usd_per_million=rates["input"],
        output_usd_per_million=rates.get("output"),
        cache_read_usd_per_million=rates.get("cache_read"),
        cache_write_usd_per_million=MappingProxyType({
            ttl: rates[f"cache_write_{ttl}"] for ttl in cache_ttls(entry.provider)
            if f"cache_write_{ttl}" in rates}),
        tool_usd_per_1k_requests=MappingProxyType(dict(entry.usd_per_1k_requests)),
        tiers=tuple(LongContextTier(t.above_input_tokens, t.input_multiplier, t.output_multiplier)
                    for t in entry.tiers),
        modifiers=MappingProxyType({name: PriceModifier(
            name=name,
            multiplier=mod.multiplier,
            kinds=frozenset(mod.kinds) if mod.kinds is not None else None,
            usd_per_million=MappingProxyType(
                mod.usd_per_million.given() if mod.usd_per_million else {}),
        ) for name, mod in entry.modifiers.items()}),
        context_window=entry.context_window,
        max_input_tokens=entry.max_input_tokens,
        max_output_tokens=entry.max_output_tokens,
        max_output_tokens_batch=entry.max_output_tokens_batch,
        min_cacheable_tokens=entry.min_cacheable_tokens,
        aliases=entry.aliases,
        source=entry.source,
        as_of=entry.as_of,
        note=entry.note,
        table_version=version,
        count_as=entry.count_as,
        cache_storage_usd_per_million_hour=entry.cache_storage_usd_per_million_hour,
        self_hosted=entry.self_hosted,
        effective_from=start,
        effective_until=end,
        change=change,
        dated_snapshots=entry.dated_snapshots,
    )
