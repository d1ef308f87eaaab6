"""The Node ``openai`` and ``@anthropic-ai/sdk`` packages, installed from npm once per machine.

Installed into a cache folder outside the repository (``$XDG_CACHE_HOME`` or ``~/.cache``,
``spendguard-tests/node``); a test using them is skipped, saying why, when node or npm is
missing or the install fails (no registry reachable).
"""

from __future__ import annotations

import fcntl
import os
import shutil
import subprocess
from pathlib import Path

import pytest

PACKAGES = ("openai", "@anthropic-ai/sdk")


def _cache_dir() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "spendguard-tests" / "node"


@pytest.fixture(scope="session")
def node_modules() -> Path:
    """The ``node_modules`` folder holding the Node SDKs (installed on first use)."""
    if shutil.which("node") is None or shutil.which("npm") is None:
        pytest.skip("node and npm are needed for the Node SDK tests; install Node.js 20+")
    folder = _cache_dir()
    folder.mkdir(parents=True, exist_ok=True)
    # One install per machine even when several test workers ask at once: the others wait
    # on the lock, then find the packages in place.
    with (folder / ".install.lock").open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        _install(folder)
    return folder / "node_modules"


def _install(folder: Path) -> None:
    # Written only after npm finished: a folder an interrupted install left half-filled is
    # installed again rather than trusted.
    done_mark = folder / ".installed"
    if done_mark.is_file():
        return
    if not (folder / "package.json").exists():
        (folder / "package.json").write_text('{"private": true}\n', encoding="utf-8")
    try:
        done = subprocess.run(["npm", "install", "--no-audit", "--no-fund", "--silent",
                               *PACKAGES], cwd=folder, capture_output=True, text=True,
                              timeout=300, check=False)
    except subprocess.TimeoutExpired:
        pytest.skip("npm install of the Node SDKs took over 300 s (is the registry reachable?)")
    if done.returncode != 0:
        pytest.skip(f"npm install of the Node SDKs failed: {done.stderr.strip()[-300:]}")
    done_mark.write_text(" ".join(PACKAGES) + "\n", encoding="utf-8")


def node_program(folder: Path, modules: Path, name: str, source: str) -> Path:
    """``source`` saved as ``folder/name`` beside a link to ``modules`` (for its imports)."""
    link = folder / "node_modules"
    if not link.exists():
        link.symlink_to(modules, target_is_directory=True)
    program = folder / name
    program.write_text(source, encoding="utf-8")
    return program
