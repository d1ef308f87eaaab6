"""has_volatile's quick scan (substring checks before any regex) and mask_volatile's search from
each pattern's lead answer as the full patterns do."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from spendguard._caching.volatile import (
    _PATTERNS,
    _search,
    find_volatile,
    has_volatile,
    mask_volatile,
)

# Characters the patterns care about, so that generated texts often hold a volatile value.
_ALPHABET = "0123456789abcdefABCDEFxyzT-_:. reqmsgcalltoolu١"
# Pieces of volatile values, joined in any order, so that near misses and neighbours are common.
_PIECES = st.lists(st.sampled_from([
    "2026-05-21", "T", " ", "10:01", ":07", ".5", "Z", "+02:00", "1779357900", "123", "req_",
    "AbCdEf12", "123e4567-e89b-12d3-a456-426614174000", "0123456789abcdef01234567", "-", ":",
    "x", "9", "١", "\n", "2026-05-21 10:01:07", "2026-05-21T10:01:07.5+02:00", "10:01:07",
    "1779357900123", "run-", "session_"]), max_size=16).map("".join)


@settings(max_examples=3000, deadline=None)
@given(st.text(alphabet=_ALPHABET, max_size=80))
def test_the_quick_scan_finds_a_volatile_value_exactly_where_the_patterns_do(text: str) -> None:
    assert has_volatile.__wrapped__(text) == bool(find_volatile(text, "text"))


def test_each_kind_of_volatile_value_is_still_found() -> None:
    for text in ("id 123e4567-e89b-12d3-a456-426614174000", "at 2026-05-21T10:01:07Z",
                 "now 10:01:07", "epoch 1779357900", "see req_AbCdEf123456",
                 "hash 0123456789abcdef01234567", "digits in another script ١٧٧٩٣٥٧٩٠٠"):
        assert has_volatile(text) == bool(find_volatile(text, "text")), text
    assert has_volatile("epoch 1779357900")
    assert not has_volatile("Request 5: summarise the ledger, in three lines.")


@settings(max_examples=2000, deadline=None)
@given(st.one_of(st.text(alphabet=_ALPHABET, max_size=80), _PIECES), st.integers(0, 40))
def test_the_search_from_a_lead_finds_the_match_the_full_pattern_finds(text: str,
                                                                         pos: int) -> None:
    for kind, pattern in _PATTERNS:
        found, expected = _search(kind, text, pos), pattern.search(text, pos)
        assert (found and found.span()) == (expected and expected.span()), kind


@settings(max_examples=2000, deadline=None)
@given(st.one_of(st.text(alphabet=_ALPHABET, max_size=80), _PIECES))
def test_masking_replaces_what_the_full_patterns_replace(text: str) -> None:
    expected = text
    for kind, pattern in _PATTERNS:
        expected = pattern.sub(f"<{kind}>", expected)
    assert mask_volatile(text) == expected
