"""Where the default ledger lives. The environment is read at call time, never at import."""

from __future__ import annotations

import os
from pathlib import Path

__all__ = ["default_ledger_path", "default_ledger_url", "home_dir"]

LEDGER_FILE = "ledger.db"


def home_dir() -> Path:
    """spendguard's data directory: ``$SPENDGUARD_HOME``, else the platform's user data dir."""
    override = os.environ.get("SPENDGUARD_HOME")
    if override:
        return Path(override).expanduser()
    import platformdirs  # noqa: PLC0415 - only needed when no override is set

    return Path(platformdirs.user_data_dir("spendguard", appauthor=False))


def default_ledger_path() -> Path:
    """The SQLite file used when no ledger is named: ``<home>/ledger.db``."""
    return home_dir() / LEDGER_FILE


def default_ledger_url() -> str:
    """``$SPENDGUARD_LEDGER`` if set, else ``sqlite:///`` + :func:`default_ledger_path`."""
    override = os.environ.get("SPENDGUARD_LEDGER")
    if override:
        return override
    return f"sqlite:///{default_ledger_path()}"
