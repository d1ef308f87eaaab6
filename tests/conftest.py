"""Test set-up shared by every test module.

``httpx2.alias_httpx()`` must run before anything imports httpx, httpcore or respx: it makes
``import httpx`` resolve to httpx2, so respx's patches intercept the SDKs (which use httpx2).
Only tests do this; spendguard itself never calls it.
"""

import httpx2

httpx2.alias_httpx()

import os  # noqa: E402
from collections.abc import Iterator  # noqa: E402

import pytest  # noqa: E402

from spendguard._costing.prices import _reset_default_table  # noqa: E402

# No test may reach a provider or read a real key.
for _name in ("OPENAI_API_KEY", "ANTHROPIC_API_KEY", "OPENAI_BASE_URL", "ANTHROPIC_BASE_URL"):
    os.environ.pop(_name, None)


@pytest.fixture(autouse=True)
def _isolated_data_dirs(tmp_path_factory: pytest.TempPathFactory,
                        monkeypatch: pytest.MonkeyPatch) -> None:
    """Keep every test's default ledger and caches out of the user's real data directory."""
    home = tmp_path_factory.mktemp("home")
    monkeypatch.setenv("SPENDGUARD_HOME", str(home))
    monkeypatch.delenv("SPENDGUARD_LEDGER", raising=False)
    monkeypatch.delenv("SPENDGUARD_PRICES", raising=False)


@pytest.fixture
def fresh_default_prices() -> Iterator[None]:
    """The default price table is built afresh on its first use in the test, then forgotten.

    The table is read once per process and cached, so a test that sets ``SPENDGUARD_PRICES`` or
    registers prices would otherwise see, or leave behind, another test's table.
    """
    _reset_default_table()
    yield
    _reset_default_table()


# Fixtures every module may use: the ledger backends (`ledger_backend`, `ledger`) and the one
# run of each example (`run_example`).
from tests.example_runs import run_example  # noqa: E402, F401
from tests.ledger_backends import ledger, ledger_backend  # noqa: E402, F401
from tests.redis_cluster_helpers import fixture_redis_cluster  # noqa: E402, F401
