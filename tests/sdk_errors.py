"""What each SDK hands its caller when a stream is cut mid-body.

The class is the SDK's choice and moves between its releases: anthropic up to 2.16 let
httpx2's ``RemoteProtocolError`` through, from 2.17 it wraps it in ``APIConnectionError``.
Tests assert that the caller gets the SDK's own connection error (whichever of these) and
never one of spendguard's, not which class a given SDK release picks.
"""

from __future__ import annotations

import anthropic
import httpx2
import pytest

import spendguard

ANTHROPIC_STREAM_CUT: tuple[type[BaseException], ...] = (
    httpx2.RemoteProtocolError, anthropic.APIConnectionError)


def assert_sdk_stream_cut(error: pytest.ExceptionInfo[BaseException]) -> None:
    """The error is the SDK's (or httpx2's) report of the cut, not spendguard's."""
    assert not isinstance(error.value, spendguard.SpendguardError)
    assert "peer closed" in str(error.value) or "incomplete" in str(error.value)
