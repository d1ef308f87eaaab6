"""``metering.read_headers``: one pass over the headers gives what ``Headers.get`` gives."""

from __future__ import annotations

import httpx2

from spendguard._guard.metering import read_headers

NAMES = frozenset({b"x-request-id", b"content-encoding", b"content-type"})


def _as_get(headers: httpx2.Headers) -> dict[str, str]:
    return {n.decode(): v for n in NAMES if (v := headers.get(n.decode())) is not None}


def test_the_named_headers_read_in_one_pass_match_get_whatever_their_case() -> None:
    headers = httpx2.Headers({"X-Request-ID": "req_1", "Content-Type": "application/json",
                              "other": "x"})
    assert read_headers(headers, NAMES) == _as_get(headers) == {
        "x-request-id": "req_1", "content-type": "application/json"}


def test_a_repeated_header_is_joined_as_get_joins_it() -> None:
    headers = httpx2.Headers([("content-encoding", "gzip"), ("Content-Encoding", "br")])
    assert read_headers(headers, NAMES) == _as_get(headers) == {"content-encoding": "gzip, br"}


def test_a_non_ascii_value_is_decoded_as_get_decodes_it() -> None:
    headers = httpx2.Headers([(b"x-request-id", "réq".encode())])
    assert read_headers(headers, NAMES) == _as_get(headers)


def test_no_named_header_reads_as_none_present() -> None:
    assert read_headers(httpx2.Headers({"a": "b"}), NAMES) == {}
