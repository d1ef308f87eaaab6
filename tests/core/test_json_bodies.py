"""Request and response bodies are decoded exactly as ``json.loads`` decodes them."""

from __future__ import annotations

import json

import pytest
from hypothesis import given
from hypothesis import strategies as st

from spendguard._core.jsontext import loads

_JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(), inner, max_size=4),
    max_leaves=12)


def _outcome(decode: object, raw: bytes) -> tuple[str, object]:
    assert callable(decode)
    try:
        return "value", decode(raw)
    except ValueError as exc:  # JSONDecodeError and UnicodeDecodeError alike
        return type(exc).__name__, str(exc)


@pytest.mark.parametrize("raw", [
    b'{"a":1}', b'[1,2] \n', b' {"a":1}', b'{"a":1}\r\n\t ', b'{"a":1} x', b'{"a":1}\xc2\xa0',
    b'{"a":\x00}', '{"a":"\u00e9"}'.encode("utf-16"), '{"a":1}'.encode("utf-16-le"),
    '{"a":1}'.encode("utf-32"), b'\xef\xbb\xbf{"a":1}', b'{"a":NaN}', b'{"a":1e400}', b"{",
    b"", b'{"a":"\xff"}', b'{"a":"x\ny"}', b"[]", b"{}", b'"text"', b"12",
])
def test_a_body_decodes_as_json_loads_decodes_it(raw: bytes) -> None:
    assert _outcome(loads, raw) == _outcome(json.loads, raw)


@given(_JSON, st.booleans())
def test_any_json_value_decodes_as_json_loads_decodes_it(value: object, ascii_only: bool) -> None:
    raw = json.dumps(value, ensure_ascii=ascii_only).encode()
    assert _outcome(loads, raw) == _outcome(json.loads, raw)
