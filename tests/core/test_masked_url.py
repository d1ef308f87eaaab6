"""Ledger URLs are shown with their password masked, whatever their form."""

from __future__ import annotations

import pytest

from spendguard._core.terminal import masked_url


@pytest.mark.parametrize(("url", "shown"), [
    ("redis://:hunter2@cache:6379/0", "redis://:***@cache:6379/0"),
    ("redis+cluster://u:pw@h1:7000,h2:7001?prefix=a:", "redis+cluster://u:***@h1:7000,h2:7001?prefix=a:"),
    ("postgresql://finance:s3cr%40t@db/ledger", "postgresql://finance:***@db/ledger"),
    ("rediss://us%40er:pw@host:not-a-port/1", "rediss://us%40er:***@host:not-a-port/1"),
])
def test_the_password_is_masked_and_the_rest_kept(url: str, shown: str) -> None:
    assert masked_url(url) == shown


@pytest.mark.parametrize("url", ["redis://cache:6379/0", "postgresql://finance@db/ledger",
                                 "sqlite:///tmp/l.db"])
def test_a_url_without_a_password_is_shown_as_it_is(url: str) -> None:
    assert masked_url(url) == url
