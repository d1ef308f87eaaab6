"""Virtual keys: keys the gateway issues, each mapped to a scope and a budget, stored hashed.

A team member's client sends a virtual key (``sgk-...``) where it would send its provider key;
the gateway finds the key by its SHA-256 digest, charges the key's budget, and sends the
provider the real key, which only the gateway holds (from its environment). The key file holds
digests, never a key: a key is shown once, when it is created. The file is read again when it
changes, so a key created or revoked takes effect without a restart.
"""

from __future__ import annotations

import hashlib
import json
import os
import secrets
import threading
from dataclasses import asdict, dataclass
from datetime import UTC, datetime
from pathlib import Path

from spendguard._core.errors import ConfigError
from spendguard._core.money import parse_usd
from spendguard._core.periods import check_period

__all__ = ["KEY_PREFIX", "KeyStore", "VirtualKey", "digest"]

KEY_PREFIX = "sgk-"


def digest(key: str) -> str:
    """The stored form of a key. A key is 192 random bits: a fast hash is enough, no salt."""
    return hashlib.sha256(key.encode("utf-8")).hexdigest()


@dataclass(frozen=True, slots=True)
class VirtualKey:
    """One issued key, as stored: its id (public), digest, scope and budget."""

    id: str
    sha256: str
    scope: str
    limit_usd: str
    period: str | None = None
    created: str = ""


class KeyStore:
    """The key file (JSON): create, list, revoke, and find a key by what a client sent."""

    def __init__(self, path: str | os.PathLike[str]) -> None:
        self.path = Path(path)
        self._lock = threading.Lock()
        self._mtime: float | None = None
        self._by_digest: dict[str, VirtualKey] = {}

    def _load(self) -> list[VirtualKey]:
        try:
            text = self.path.read_text(encoding="utf-8")
        except FileNotFoundError:
            return []
        try:
            rows = json.loads(text)["keys"]
            return [VirtualKey(**row) for row in rows]
        except (ValueError, KeyError, TypeError) as exc:
            raise ConfigError(f"keys: {self.path} is not a spendguard key file ({exc}); "
                              "create keys with `spendguard gateway keys create`") from None

    def _save(self, keys: list[VirtualKey]) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        partial = self.path.with_suffix(".part")
        partial.write_text(json.dumps({"keys": [asdict(k) for k in keys]}, indent=1),
                           encoding="utf-8")
        os.chmod(partial, 0o600)
        partial.replace(self.path)

    def all(self) -> list[VirtualKey]:
        """Every key in the file."""
        return self._load()

    def create(self, scope: str, limit_usd: str, period: str | None = None,
               now: datetime | None = None) -> tuple[str, VirtualKey]:
        """Issue a key for ``scope`` with its own budget; the key itself is returned once."""
        if not scope.strip() or "/" in scope or not scope.isprintable():
            raise ConfigError(f"scope: {scope!r} is not a scope name; use e.g. 'team:search'")
        limit = parse_usd(limit_usd, field="budget")
        period = check_period(period)
        key_id = secrets.token_hex(4)
        key = f"{KEY_PREFIX}{key_id}-{secrets.token_urlsafe(24)}"
        created = (now or datetime.now(UTC)).isoformat(timespec="seconds")
        entry = VirtualKey(key_id, digest(key), scope, str(limit), period, created)
        with self._lock:
            self._save([*self._load(), entry])
        return key, entry

    def revoke(self, key_id: str) -> bool:
        """Remove the key with this id; False when there is none."""
        with self._lock:
            keys = self._load()
            kept = [k for k in keys if k.id != key_id]
            if len(kept) == len(keys):
                return False
            self._save(kept)
            return True

    def find(self, presented: str) -> VirtualKey | None:
        """The key a client presented, or None (unknown, revoked, or not a virtual key)."""
        if not presented.startswith(KEY_PREFIX):
            return None
        with self._lock:
            try:
                mtime = self.path.stat().st_mtime
            except FileNotFoundError:
                mtime = None
            if mtime != self._mtime:
                self._by_digest = {k.sha256: k for k in self._load()}
                self._mtime = mtime
            found = self._by_digest.get(digest(presented))
        # Compared again in constant time: the dict look-up alone is not timing-safe.
        return found if found is not None and secrets.compare_digest(
            found.sha256, digest(presented)) else None

