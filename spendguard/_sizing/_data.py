"""Reading the sizing data files: where they live, validation errors, and close-match look-up."""

from __future__ import annotations

import difflib
import tomllib
from collections.abc import Iterable, Mapping
from decimal import Decimal
from pathlib import Path
from typing import Any, TypeVar

from pydantic import BaseModel, ValidationError

from spendguard._core.errors import PriceFileError, UnknownModelError

__all__ = ["close_matches", "data_file", "normalise", "read_entries", "reject_float", "unknown"]

Schema = TypeVar("Schema", bound=BaseModel)


def data_file(name: str) -> Path:
    """A packaged data file: ``spendguard/_pricing/`` in a wheel, ``pricing/`` in a checkout."""
    package = Path(__file__).resolve().parent.parent
    for candidate in (package / "_pricing" / name, package.parent / "pricing" / name):
        if candidate.is_file():
            return candidate
    raise PriceFileError(f"data file {name} is missing from this installation; reinstall "
                         "spendguard-llm", path=name)


def read_entries(path: Path, table: str, schema: type[Schema]) -> dict[str, Schema]:
    """Every ``[table.NAME]`` entry of a TOML file, each validated by ``schema``.

    A bad file raises ``PriceFileError`` naming the file, the entry and the field.
    """
    try:
        document = tomllib.loads(path.read_text(encoding="utf-8"))
    except OSError as exc:
        raise PriceFileError(f"{path}: cannot be read ({exc.strerror})", path=str(path)) from exc
    except tomllib.TOMLDecodeError as exc:
        raise PriceFileError(f"{path}: not valid TOML ({exc})", path=str(path)) from exc
    section = document.get(table)
    if not isinstance(section, dict) or not section:
        raise PriceFileError(f"{path}: no [{table}.NAME] entries found", path=str(path),
                             field=table)
    entries: dict[str, Schema] = {}
    for key, body in section.items():
        try:
            entries[normalise(key)] = schema.model_validate(body)
        except ValidationError as exc:
            first = exc.errors()[0]
            field = ".".join(str(part) for part in first["loc"]) or table
            raise PriceFileError(
                f"{path}: [{table}.{key}] field {field!r}: {first['msg']}",
                path=str(path), entry=key, field=field,
            ) from exc
    return entries


def reject_float(value: Any) -> Any:
    """Prices are written as strings ("2.50"): a TOML float is not an exact amount of USD."""
    if isinstance(value, float):
        raise ValueError(f"write USD amounts as strings, e.g. \"{value}\"; floats are inexact")
    if isinstance(value, str):
        return Decimal(value.strip())
    return value


def normalise(name: str) -> str:
    """Look-up form of a name: lower case, spaces and underscores as hyphens."""
    return name.strip().lower().replace(" ", "-").replace("_", "-")


def close_matches(name: str, choices: Iterable[str]) -> list[str]:
    """Up to five known names that look like ``name`` (substring hits first)."""
    wanted = normalise(name)
    pool = sorted(set(choices))
    contains = [choice for choice in pool if wanted and (wanted in choice or choice in wanted)]
    fuzzy = difflib.get_close_matches(wanted, pool, n=5, cutoff=0.5)
    ordered = list(dict.fromkeys([*contains, *fuzzy]))
    return ordered[:5]


def unknown(kind: str, name: str, index: Mapping[str, str], how_to_add: str) -> UnknownModelError:
    """An ``UnknownModelError`` listing close matches among ids and aliases, and how to add one."""
    suggestions = list(dict.fromkeys(index[match] for match in close_matches(name, index)))
    hint = f"; close matches: {', '.join(suggestions)}" if suggestions else ""
    return UnknownModelError(f"unknown {kind} {name!r}{hint}. {how_to_add}", name=name,
                             kind=kind, suggestions=suggestions)
