"""Price files: read (TOML or JSON), validate with pydantic, merge overrides, build a PriceTable.

A file holds ``schema = 1``, an optional file-wide ``provider``, optional ``[defaults]`` merged
into every entry, and ``[models."<id>"]`` entries (see ``pricing/openai.toml`` for the fields).
Every error is a :class:`~spendguard._core.errors.PriceFileError` naming the file, model and field.
"""

from __future__ import annotations

import functools
import hashlib
import json
import os
import re
import tomllib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from dataclasses import field as dataclass_field
from datetime import date, timedelta
from decimal import Decimal
from pathlib import Path
from types import MappingProxyType
from typing import Annotated, Any, Literal

from pydantic import (
    AfterValidator,
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    PositiveInt,
    ValidationError,
)

from spendguard._core.errors import PriceFileError
from spendguard._core.money import parse_usd
from spendguard._costing.endpoints import Provider
from spendguard._costing.prices.sections import SECTION_KEYS, Host, expand_sections, resolve_derived
from spendguard._providers.adapter import adapter_for, providers

__all__ = [
    "EntryModel",
    "Period",
    "PriceFile",
    "PriceSource",
    "ValidTable",
    "build",
    "bundled_file_names",
    "bundled_files",
    "cache_ttls",
    "read_price_file",
    "read_price_source",
]

PriceSource = str | os.PathLike[str] | Mapping[str, Any]
"""A price file path, or a mapping in the same shape as a parsed file."""



def cache_ttls(provider: str) -> tuple[str, ...]:
    """Cache-write TTLs a provider bills (the keys of ``cache_write_<ttl>``): its adapter's
    ``cache_ttls`` (Gemini bills none: an explicit cache bills storage by the hour instead)."""
    return adapter_for(provider).cache_ttls

@functools.cache
def bundled_file_names() -> tuple[str, ...]:
    """The token price files in the pricing folder (other data files live beside them): one
    per provider (``pricing/<provider>.toml``, in the order of its adapter's), then the
    platforms' and hosts'."""
    return (*(f"{provider}.toml" for provider in providers()), "platforms.toml", "hosts.toml")

_FILE_KEYS = {"schema", "provider", "defaults", "models", *SECTION_KEYS}
# Tables merged key by key (defaults into entries, overrides into the entry they override).
_MERGED_TABLES = {"usd_per_million", "usd_per_1k_requests", "modifiers"}
# Lists added to (a default's dated changes and an entry's own all apply).
_JOINED_LISTS = {"changes"}
_NAME = re.compile(r"^[a-z][a-z0-9_]*$")


def _usd(value: object) -> Decimal:
    return parse_usd(value, field="price")


def _multiplier(value: object) -> Decimal:
    return parse_usd(value, field="multiplier", allow_zero=False)


def _provider(value: str) -> str:
    if value not in Provider.names():
        raise ValueError(f"Input should be one of {', '.join(map(repr, providers()))}")
    return value


Usd = Annotated[Decimal, BeforeValidator(_usd)]
Multiplier = Annotated[Decimal, BeforeValidator(_multiplier)]
ProviderName = Annotated[str, AfterValidator(_provider)]
"""A provider's plain name (one of the provider packages')."""


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class RatesModel(_Strict):
    """``usd_per_million``: USD per million tokens of each kind."""

    input: Usd | None = None
    cache_read: Usd | None = None
    cache_write_5m: Usd | None = None
    cache_write_1h: Usd | None = None
    cache_write_30m: Usd | None = None
    cache_write_12h: Usd | None = None
    output: Usd | None = None

    def given(self) -> dict[str, Decimal]:
        return {kind: rate for kind, rate in self.model_dump().items() if rate is not None}


TokenKind = Literal["input", "cache_read", "cache_write", "cache_write_5m", "cache_write_1h",
                    "cache_write_30m", "cache_write_12h", "output"]


def _modifier_shorthand(value: object) -> object:
    # `batch = 0.5` is shorthand for `batch = { multiplier = 0.5 }`.
    return value if isinstance(value, Mapping) else {"multiplier": value}


class ModifierModel(_Strict):
    multiplier: Multiplier = Decimal(1)
    kinds: tuple[TokenKind, ...] | None = None
    usd_per_million: RatesModel | None = None


class TierModel(_Strict):
    above_input_tokens: PositiveInt
    input_multiplier: Multiplier
    output_multiplier: Multiplier


class SelfHostedModel(_Strict):
    """The deployment behind a self-hosted entry (see
    :mod:`spendguard._costing.prices.selfhosted`)."""

    model: str
    gpu: str
    gpu_count: PositiveInt
    usd_per_gpu_hour: Usd
    output_tok_s: Decimal
    input_tok_s: Decimal
    throughput: Literal["measured", "estimated"]


class ChangeModel(_Strict):
    """One dated change of an entry's rates (``changes = [{ from = ..., ... }]``).

    While it is in force (UTC dates ``from`` through ``until``, both included; no ``from``:
    since before any record, for a price that has since changed; no ``until``: from then on)
    its rate tables are merged over the entry's, key by key (``usd_per_million``,
    ``usd_per_1k_requests``, ``modifiers``; ``tiers`` whole).
    """

    model_config = ConfigDict(extra="forbid", frozen=True, populate_by_name=True)

    from_: date | None = Field(default=None, alias="from")
    until: date | None = None
    usd_per_million: RatesModel | None = None
    usd_per_1k_requests: dict[str, Usd] | None = None
    modifiers: dict[str, Annotated[ModifierModel, BeforeValidator(_modifier_shorthand)]] | None = (
        None)
    tiers: tuple[TierModel, ...] | None = None
    source: Annotated[str, Field(min_length=1)]
    note: str | None = None


class EntryModel(_Strict):
    """One ``[models."<id>"]`` entry after ``[defaults]`` are merged in."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    provider: ProviderName
    mode: Literal["chat", "embedding"] = "chat"
    aliases: tuple[str, ...] = ()
    usd_per_million: RatesModel
    usd_per_1k_requests: dict[str, Usd] = Field(default_factory=dict)
    tiers: tuple[TierModel, ...] = ()
    modifiers: dict[str, Annotated[ModifierModel, BeforeValidator(_modifier_shorthand)]] = Field(
        default_factory=dict)
    context_window: PositiveInt | None = None
    max_input_tokens: PositiveInt | None = None
    max_output_tokens: PositiveInt | None = None
    max_output_tokens_batch: PositiveInt | None = None
    min_cacheable_tokens: PositiveInt | None = None
    cache_storage_usd_per_million_hour: Usd | None = None
    """Explicit context caches (Gemini): USD per million cached tokens per hour of TTL."""
    count_as: str | None = None
    """The model whose tokenizer counts this entry's text (derived and platform entries)."""
    self_hosted: SelfHostedModel | None = None
    changes: tuple[ChangeModel, ...] = ()
    """Dated changes of the rates (announced price changes, scheduled multipliers)."""
    dated_snapshots: bool = True
    """False: the provider's dated snapshot ids of this model bill differently and are not
    resolved to it (declare each as its own entry)."""
    source: Annotated[str, Field(min_length=1)]
    as_of: date
    note: str | None = None


@dataclass(frozen=True)
class Period:
    """An entry as priced on the UTC days ``start`` through ``end`` (None: unbounded)."""

    start: date | None
    end: date | None
    entry: EntryModel
    change: str | None = None
    """What the dated changes in force make different (their notes), None for none."""


@dataclass(frozen=True)
class PriceFile:
    """One parsed price document, before validation."""

    path: str
    provider: str | None
    defaults: Mapping[str, Any]
    models: Mapping[str, Mapping[str, Any]]
    hosts: Mapping[str, Host] = dataclass_field(default_factory=dict)


def bundled_files() -> list[Path]:
    """The shipped price files: ``spendguard/_pricing`` in a wheel, else the repo's ``pricing/``."""
    package = Path(__file__).resolve().parents[2]
    for folder in (package / "_pricing", package.parent / "pricing"):
        files = [folder / name for name in bundled_file_names()]
        if all(file.is_file() for file in files):
            return files
    raise PriceFileError(
        f"no price files found in {package / '_pricing'} or {package.parent / 'pricing'}; "
        "the spendguard installation is incomplete: reinstall spendguard-llm",
        path=str(package / "_pricing"),
    )


def read_price_source(source: PriceSource) -> PriceFile:
    """A price file path or an in-code mapping of the same shape."""
    if isinstance(source, Mapping):
        return _parse_document(source, "<mapping>")
    return read_price_file(Path(source))


def read_price_file(path: Path) -> PriceFile:
    """Parse a TOML (or ``.json``) price file; numbers are read as exact Decimals."""
    try:
        text = path.read_text(encoding="utf-8")
        if path.suffix.lower() == ".json":
            data = json.loads(text, parse_float=Decimal)
        else:
            data = tomllib.loads(text, parse_float=Decimal)
    except (OSError, UnicodeDecodeError, ValueError) as exc:  # TOMLDecodeError is a ValueError
        raise PriceFileError(f"{path}: cannot read price file: {exc}", path=str(path)) from exc
    if not isinstance(data, Mapping):
        raise PriceFileError(f"{path}: a price file must be a table of models", path=str(path))
    return _parse_document(data, str(path))


def _parse_document(data: Mapping[str, Any], path: str) -> PriceFile:
    unknown = sorted(set(data) - _FILE_KEYS)
    if unknown:
        raise PriceFileError(
            f"{path}: unknown top-level key(s) {', '.join(unknown)}; a price file has "
            '`schema = 1`, `provider`, `[defaults]` and `[models."<id>"]` tables',
            path=path, field=unknown[0])
    if data.get("schema", 1) != 1:
        raise PriceFileError(f"{path}: schema {data['schema']!r} is not supported (expected 1)",
                             path=path, field="schema")
    defaults, models = data.get("defaults", {}), data.get("models", {})
    for field, value in (("defaults", defaults), ("models", models)):
        if not isinstance(value, Mapping):
            raise PriceFileError(f"{path}: `{field}` must be a table", path=path, field=field)
    for model, entry in models.items():
        if not isinstance(entry, Mapping):
            raise PriceFileError(f'{path}: [models."{model}"] must be a table of fields',
                                 path=path, entry=model)
    provider = data.get("provider")
    extra, hosts = expand_sections(data, path)
    for model in extra:
        if model in models:
            raise PriceFileError(f'{path}: [models."{model}"] is also declared by a host, '
                                 "Azure deployment or self-hosted section; keep one",
                                 path=path, entry=model)
    return PriceFile(path, provider if isinstance(provider, str) else None, defaults,
                     {**models, **extra}, MappingProxyType(hosts))


def _merge(base: Mapping[str, Any], over: Mapping[str, Any]) -> dict[str, Any]:
    merged = dict(base)
    for key, value in over.items():
        old = merged.get(key)
        if key in _MERGED_TABLES and isinstance(value, Mapping) and isinstance(old, Mapping):
            merged[key] = {**old, **value}
        elif key in _JOINED_LISTS and isinstance(value, list | tuple) and isinstance(
                old, list | tuple):
            merged[key] = [*old, *(item for item in value if item not in old)]
        else:
            merged[key] = value
    return merged


@dataclass(frozen=True)
class ValidTable:
    """Validated entries, the merged raw entries they came from (to layer overrides on), and
    the table version ("<latest as_of>.<hash of the entries>")."""

    entries: Mapping[str, EntryModel]
    raw: Mapping[str, Mapping[str, Any]]
    version: str
    hosts: Mapping[str, Host] = dataclass_field(default_factory=dict)
    periods: Mapping[str, tuple[Period, ...]] = dataclass_field(default_factory=dict)
    """Each entry with dated changes, as priced in each stretch of days (in order)."""


def build(files: Sequence[PriceFile], base: Mapping[str, Mapping[str, Any]] | None = None,
          base_hosts: Mapping[str, Host] | None = None) -> ValidTable:
    """Merge ``files`` (in order) over ``base`` raw entries, validate all, version the result."""
    raw: dict[str, dict[str, Any]] = {model: dict(entry) for model, entry in (base or {}).items()}
    origin = dict.fromkeys(raw, "<base table>")
    for file in files:
        for model, entry in file.models.items():
            own = _merge(file.defaults, entry)
            if file.provider is not None:
                own.setdefault("provider", file.provider)
            if model not in raw:
                _release_alias(raw, origin, model, file.path)
            else:
                for required in ("source", "as_of"):
                    if required not in own:
                        raise PriceFileError(
                            f"{file.path}: model {model!r}: an override must give its own "
                            f"`{required}` (where the price comes from, and since when)",
                            path=file.path, entry=model, field=required)
                own = _merge(raw[model], own)
            raw[model] = own
            origin[model] = file.path
    hosts = dict(base_hosts or {})
    for file in files:
        hosts.update(file.hosts)
    resolved = resolve_derived(raw, origin)
    entries = {model: _validate(model, entry, origin[model]) for model, entry in resolved.items()}
    _check_aliases(entries, origin)
    periods = {model: _periods(model, resolved[model], entry, origin[model])
               for model, entry in entries.items() if entry.changes}
    digest = hashlib.sha256(json.dumps([raw, sorted(hosts.items())], sort_keys=True,
                                       default=str).encode()).hexdigest()
    latest = max((entry.as_of for entry in entries.values()), default=date.min)
    return ValidTable(entries, raw, f"{latest.isoformat()}.{digest[:8]}",
                      MappingProxyType(hosts), MappingProxyType(periods))


_CHANGED_TABLES = ("usd_per_million", "usd_per_1k_requests", "modifiers")


def _periods(model: str, raw: Mapping[str, Any], entry: EntryModel, path: str,
             ) -> tuple[Period, ...]:
    """The entry as priced between each pair of dates its changes start or end on."""
    for change in entry.changes:
        if change.from_ is None and change.until is None:
            raise PriceFileError(
                f"{path}: model {model!r}: changes: each change needs `from` (its first day), "
                "`until` (its last day) or both", path=path, entry=model, field="changes")
        if change.until is not None and change.from_ is not None and change.until < change.from_:
            raise PriceFileError(
                f"{path}: model {model!r}: changes: a change from {change.from_} cannot end "
                f"before it starts (until = {change.until}); `until` is its last day in force",
                path=path, entry=model, field="changes")
    bounds = sorted({change.from_ for change in entry.changes if change.from_ is not None}
                    | {change.until + timedelta(days=1) for change in entry.changes
                       if change.until is not None})
    starts: list[date | None] = [None, *bounds]
    periods = []
    for index, start in enumerate(starts):
        end = bounds[index] - timedelta(days=1) if index < len(bounds) else None
        merged = {key: value for key, value in raw.items() if key != "changes"}
        active = [change for change in sorted(entry.changes, key=lambda c: c.from_ or date.min)
                  if (change.from_ is None or (start is not None and change.from_ <= start))
                  and (change.until is None or start is None or change.until >= start)]
        for change in active:
            own = change.model_dump(by_alias=True, exclude_none=True)
            for key in _CHANGED_TABLES:
                if key in own:
                    merged[key] = {**dict(merged.get(key, {})), **own[key]}
            if "tiers" in own:
                merged["tiers"] = own["tiers"]
            merged["source"] = change.source
        notes = [change.note or (f"rates in force from {change.from_}" if change.from_ else
                                 f"rates in force until {change.until}") for change in active]
        periods.append(Period(start, end, _validate(model, merged, path), "; ".join(notes)
                              or None))
    return tuple(periods)


def _release_alias(raw: dict[str, dict[str, Any]], origin: Mapping[str, str], model: str,
                   path: str) -> None:
    # A new entry from a later file may take over a name an earlier file declared as an alias
    # (e.g. pricing one dated snapshot differently); within one file that is a mistake.
    for other, entry in raw.items():
        aliases = entry.get("aliases", ())
        if isinstance(aliases, (list, tuple)) and model in aliases and origin[other] != path:
            entry["aliases"] = [alias for alias in aliases if alias != model]


def _validate(model: str, entry: Mapping[str, Any], path: str) -> EntryModel:
    try:
        parsed = EntryModel.model_validate(entry)
    except ValidationError as exc:
        error = exc.errors()[0]
        field = ".".join(str(part) for part in error["loc"])
        hint = ""
        if error["type"] == "extra_forbidden":
            hint = f" (allowed here: {', '.join(_parent(error['loc']).model_fields)})"
        raise PriceFileError(f"{path}: model {model!r}: {field}: {error['msg']}{hint}",
                             path=path, entry=model, field=field) from exc

    def fail(field: str, message: str) -> PriceFileError:
        return PriceFileError(f"{path}: model {model!r}: {field}: {message}",
                              path=path, entry=model, field=field)

    rates = parsed.usd_per_million.given()
    ttls = cache_ttls(parsed.provider)
    _check_rates(rates, parsed, ttls, fail)
    for limit in ("context_window", "max_output_tokens"):
        if parsed.mode == "chat" and getattr(parsed, limit) is None:
            raise fail(limit, "required for a chat model (the worst case of a call depends on it)")
    if parsed.context_window is not None:
        for name in ("max_input_tokens", "max_output_tokens"):
            limit = getattr(parsed, name)
            if limit is not None and limit > parsed.context_window:
                raise fail(name, f"{limit} exceeds context_window {parsed.context_window}")
    thresholds = [tier.above_input_tokens for tier in parsed.tiers]
    if thresholds != sorted(set(thresholds)):
        raise fail("tiers", "list tiers once each, in ascending above_input_tokens order")
    for name in [*parsed.modifiers, *parsed.usd_per_1k_requests]:
        if not _NAME.match(name):
            raise fail(name, "names are lower_snake_case, e.g. speed_fast or web_search")
    if model in parsed.aliases or len(set(parsed.aliases)) != len(parsed.aliases):
        raise fail("aliases", "aliases must be unique and differ from the model id")
    return parsed


def _parent(loc: tuple[int | str, ...]) -> type[BaseModel]:
    # The model an unknown key was found in, to list the keys allowed there.
    if "usd_per_million" in loc[:-1]:
        return RatesModel
    if len(loc) > 1 and loc[0] == "tiers":
        return TierModel
    if len(loc) > 1 and loc[0] == "modifiers":
        return ModifierModel
    return EntryModel


def _check_rates(rates: Mapping[str, Decimal], parsed: EntryModel, ttls: tuple[str, ...],
                 fail: Any) -> None:
    if not rates.get("input"):
        raise fail("usd_per_million.input", "required and greater than 0 (USD per million tokens)")
    if parsed.mode == "chat" and not rates.get("output"):
        raise fail("usd_per_million.output", "required and greater than 0 for a chat model")
    if rates.get("cache_read", Decimal(0)) > rates["input"]:
        raise fail("usd_per_million.cache_read", "cached input cannot cost more than input")
    allowed = {f"cache_write_{ttl}" for ttl in ttls}
    for mapping, prefix in [(rates, "usd_per_million")] + [
            (mod.usd_per_million.given(), f"modifiers.{name}.usd_per_million")
            for name, mod in parsed.modifiers.items() if mod.usd_per_million]:
        for kind in mapping:
            if kind.startswith("cache_write_") and kind not in allowed:
                raise fail(f"{prefix}.{kind}",
                           f"{parsed.provider} bills cache writes as {', '.join(sorted(allowed))}")
    adapter = adapter_for(parsed.provider)
    if adapter.prompt_cache == "breakpoints":  # every marked request reads or writes the cache
        for kind in ("cache_read", *sorted(allowed)):
            if kind not in rates:
                raise fail(f"usd_per_million.{kind}",
                           f"required for {_article(adapter.display_name)} model")


def _check_aliases(entries: Mapping[str, EntryModel], origin: Mapping[str, str]) -> None:
    owner: dict[str, str] = {}
    for model, entry in entries.items():
        for alias in entry.aliases:
            other = alias if alias in entries else owner.get(alias)
            if other is not None and other != model:
                raise PriceFileError(
                    f"{origin[model]}: model {model!r}: aliases: {alias!r} already names "
                    f"model {other!r}; a name may point at one price only",
                    path=origin[model], entry=model, field="aliases")
            owner[alias] = model


def _article(name: str) -> str:
    """``"an Anthropic"``, ``"a Gemini"``."""
    return f"{'an' if name[:1].lower() in 'aeiou' else 'a'} {name}"
