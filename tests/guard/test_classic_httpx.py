"""Clients of the classic ``httpx`` package, which the SDKs still accept as ``http_client``
(LiteLLM and DSPy hand them one), are guarded exactly like ``httpx2`` ones.

The suite makes ``import httpx`` resolve to ``httpx2`` (see conftest), so the classic package
is exercised in a fresh interpreter running ``tests/classic_httpx_program.py``.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from typing import Any

import pytest

from spendguard.testing import Emulator, serve
from tests.paths import REPO, TESTS


@pytest.fixture(name="seen", scope="module")
def fixture_seen() -> tuple[dict[str, Any], Emulator]:
    emulator = Emulator()
    with serve(emulator) as running:
        env = {**os.environ, "PYTHONPATH": os.pathsep.join(
            [str(REPO), *filter(None, [os.environ.get("PYTHONPATH")])])}
        done = subprocess.run([sys.executable, str(TESTS / "classic_httpx_program.py"),
                               running.base_url], capture_output=True, text=True,
                              timeout=120, check=False, env=env)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout.strip().splitlines()[-1]), emulator


def test_a_drop_in_client_over_classic_httpx_records_each_call_sync_and_streamed(
        seen: tuple[dict[str, Any], Emulator]) -> None:
    case = seen[0]["drop_in_sync"]
    assert case["records"] == case["usage"] and len(case["records"]) == 2


def test_a_wrapped_async_client_over_classic_httpx_records_its_call(
        seen: tuple[dict[str, Any], Emulator]) -> None:
    case = seen[0]["wrapped_async"]
    assert case["records"] == case["usage"]


def test_a_refusal_over_classic_httpx_is_the_sdks_own_error_and_never_sent(
        seen: tuple[dict[str, Any], Emulator]) -> None:
    assert seen[0]["refused"] == {"error": "BudgetExceeded", "sdk_error": True}


def test_under_install_classic_clients_and_raw_provider_requests_are_guarded_once(
        seen: tuple[dict[str, Any], Emulator]) -> None:
    case, emulator = seen
    assert case["installed"]["providers"] == ["anthropic", "openai"]  # one record each
    assert case["installed"]["other_status"] == 404  # not a provider request: untouched
    # every request the emulator answered is one record; the refused one never arrived
    answered = [r for r in emulator.requests if r.status is not None and r.status < 400]
    assert len(answered) == 2 + 1 + 2  # drop-in (2), wrapped async (1), installed (2)
