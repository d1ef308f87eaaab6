"""Bad price files fail on load with PriceFileError naming the file, model and field."""

from __future__ import annotations

from pathlib import Path

import pytest

from spendguard import PriceFileError, load_price_file

GOOD_OPENAI = """
[models."m"]
provider = "openai"
usd_per_million = { input = 2, cache_read = 0.2, output = 10 }
context_window = 100000
max_output_tokens = 8000
source = "https://example.com/pricing"
as_of = 2026-11-01
"""

GOOD_ANTHROPIC = (
    '[models."c"]\n'
    'provider = "anthropic"\n'
    "usd_per_million = { input = 3, cache_read = 0.3, cache_write_5m = 3.75, "
    "cache_write_1h = 6, output = 15 }\n"
    "context_window = 200000\n"
    "max_output_tokens = 64000\n"
    'source = "https://example.com/pricing"\n'
    "as_of = 2026-11-01\n"
)


def _write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "prices.toml"
    path.write_text(text)
    return path


def test_good_files_load(tmp_path: Path) -> None:
    assert load_price_file(_write(tmp_path, GOOD_OPENAI)).models() == ["m"]
    assert load_price_file(_write(tmp_path, GOOD_ANTHROPIC)).models() == ["c"]


@pytest.mark.parametrize(("text", "entry", "field"), [
    (GOOD_OPENAI.replace("input = 2, ", ""), "m", "usd_per_million.input"),
    (GOOD_OPENAI.replace("input = 2", "input = 0"), "m", "usd_per_million.input"),
    (GOOD_OPENAI.replace("input = 2", "input = -2"), "m", "usd_per_million.input"),
    (GOOD_OPENAI.replace("cache_read = 0.2", "cache_read = 3"), "m", "usd_per_million.cache_read"),
    (GOOD_OPENAI.replace("cache_read", "cached_input"), "m", "usd_per_million.cached_input"),
    (GOOD_OPENAI.replace(", output = 10", ""), "m", "usd_per_million.output"),
    (GOOD_OPENAI.replace("max_output_tokens = 8000", ""), "m", "max_output_tokens"),
    (GOOD_OPENAI.replace("max_output_tokens = 8000", "max_output_tokens = 900000"), "m",
     "max_output_tokens"),
    (GOOD_OPENAI.replace('source = "https://example.com/pricing"', ""), "m", "source"),
    (GOOD_OPENAI.replace("as_of = 2026-11-01", 'as_of = "soon"'), "m", "as_of"),
    (GOOD_OPENAI.replace('provider = "openai"', 'provider = "acme"'), "m", "provider"),
    (GOOD_OPENAI.replace("output = 10", "output = 10, cache_write_5m = 3"), "m",
     "usd_per_million.cache_write_5m"),
    (GOOD_ANTHROPIC.replace("cache_write_1h = 6, ", ""), "c", "usd_per_million.cache_write_1h"),
    (GOOD_OPENAI + "tiers = [{ above_input_tokens = 9, input_multiplier = 2, "
     "output_multiplier = 1.5 }, { above_input_tokens = 5, input_multiplier = 3, "
     "output_multiplier = 2 }]\n", "m", "tiers"),
    (GOOD_OPENAI + "modifiers = { priority = 0 }\n", "m", "modifiers.priority.multiplier"),
    (GOOD_OPENAI + "modifiers = { Priority = 2 }\n", "m", "Priority"),
    (GOOD_OPENAI + 'aliases = ["m"]\n', "m", "aliases"),
    (GOOD_OPENAI + "colour = 'blue'\n", "m", "colour"),
])
def test_bad_entry_names_file_model_and_field(tmp_path: Path, text: str, entry: str,
                                              field: str) -> None:
    path = _write(tmp_path, text)
    with pytest.raises(PriceFileError) as caught:
        load_price_file(path)
    error = caught.value
    assert (error.path, error.entry, error.field) == (str(path), entry, field)
    assert str(path) in str(error) and repr(entry) in str(error) and field in str(error)


def test_unknown_keys_list_the_allowed_ones(tmp_path: Path) -> None:
    with pytest.raises(PriceFileError, match="allowed here: input, cache_read"):
        load_price_file(_write(tmp_path, GOOD_OPENAI.replace("cache_read", "cached_input")))


def test_unknown_modifier_keys_list_the_modifier_fields(tmp_path: Path) -> None:
    text = GOOD_OPENAI + "modifiers = { priority = { multiplier = 2, kind = ['input'] } }\n"
    with pytest.raises(PriceFileError, match="allowed here: multiplier, kinds, usd_per_million"):
        load_price_file(_write(tmp_path, text))


def test_an_alias_may_name_one_price_only(tmp_path: Path) -> None:
    text = GOOD_OPENAI + 'aliases = ["x"]\n' + GOOD_OPENAI.replace('"m"', '"n"') + \
        'aliases = ["x"]\n'
    with pytest.raises(PriceFileError, match="'x' already names") as caught:
        load_price_file(_write(tmp_path, text))
    assert caught.value.field == "aliases"


@pytest.mark.parametrize(("text", "match"), [
    ("[models.m\n", "cannot read price file"),
    ("colour = 1\n", "unknown top-level key"),
    ("schema = 2\n", "schema"),
    ("models = 3\n", "`models` must be a table"),
    ('[models]\nm = "cheap"\n', "must be a table of fields"),
])
def test_bad_documents_name_the_file(tmp_path: Path, text: str, match: str) -> None:
    path = _write(tmp_path, text)
    with pytest.raises(PriceFileError, match=match) as caught:
        load_price_file(path)
    assert caught.value.path == str(path)


def test_a_missing_file_is_a_price_file_error(tmp_path: Path) -> None:
    with pytest.raises(PriceFileError, match="cannot read"):
        load_price_file(tmp_path / "absent.toml")


def test_defaults_apply_to_every_entry_and_entries_override_them(tmp_path: Path) -> None:
    text = ('provider = "openai"\n[defaults]\nmodifiers = { priority = 2 }\n'
            'source = "https://example.com"\n'
            + GOOD_OPENAI.replace('provider = "openai"\n', "")
            .replace('source = "https://example.com/pricing"\n', "")
            + "modifiers = { flex = 0.5 }\n")
    entry = load_price_file(_write(tmp_path, text)).get("m")
    assert set(entry.modifiers) == {"priority", "flex"}
    assert entry.source == "https://example.com"
