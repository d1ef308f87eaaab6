"""Schema versions between spendguard releases: a ledger a newer release wrote is not written.

Each backend stamps its ledger with the schema it writes (SQLite: the migrations it applied,
counted in ``PRAGMA user_version``; Redis: ``meta`` ``schema``). A newer spendguard migrates an
older ledger on open; an older one that finds a newer schema refuses to write to it, because
it would write rows and totals by rules the newer release no longer follows. Reading stays
allowed: records keep their meaning across schemas, and reports only read.
"""

from __future__ import annotations

from spendguard._core.errors import LedgerError

__all__ = ["newer_schema_error"]


def newer_schema_error(ledger: str, found: int, known: int) -> LedgerError:
    """The refusal to write to ``ledger``, stamped with schema ``found`` > ``known``."""
    return LedgerError(
        f"the ledger {ledger} has schema {found}, written by a newer spendguard; this "
        f"spendguard knows schema {known} at most and will not write to it (reports, exports "
        f"and `ledger verify` still read it); upgrade spendguard (pip install -U "
        f"spendguard-llm) in every process that shares this ledger")
