"""has_volatile's quick scan (substring checks before any regex) answers as the full patterns do."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from spendguard._caching.volatile import find_volatile, has_volatile

# Characters the patterns care about, so that generated texts often hold a volatile value.
_ALPHABET = "0123456789abcdefABCDEFxyzT-_:. reqmsgcalltoolu١"


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
