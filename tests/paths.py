"""Where things are, for tests at any depth of tests/."""

from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
TESTS = REPO / "tests"
PRICE_SNAPSHOTS = TESTS / "data" / "prices"
"""Other price tables as stored for the tests (refresh: ``python tools/price_snapshots.py``)."""
GENAI_PRICES_SNAPSHOT = PRICE_SNAPSHOTS / "genai-prices.json"
LITELLM_SNAPSHOT = PRICE_SNAPSHOTS / "litellm.json"
