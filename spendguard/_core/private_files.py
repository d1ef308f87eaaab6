"""Files and folders spendguard makes are its user's alone: folders 0700, files 0600.

A ledger can hold prompts (``store_prompts=True``), and every ledger, export, report and batch
result says what a team spends on what: nothing another local user should read. Modes are given
when a file or folder is created (``os.open`` / ``mkdir`` with the mode), so the process's umask
still applies and a stricter one wins (``077`` stays ``077``); a file or folder that already
exists keeps its mode, since its owner may have widened it on purpose (a group sharing a ledger).
SQLite makes a ledger's ``-wal`` and ``-shm`` files with the mode of the ledger file itself.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import TextIO

__all__ = ["PRIVATE_DIR_MODE", "PRIVATE_FILE_MODE", "make_private_dir", "open_private",
           "write_private_text"]

PRIVATE_FILE_MODE = 0o600
PRIVATE_DIR_MODE = 0o700


def make_private_dir(path: str | os.PathLike[str]) -> Path:
    """``path`` as a folder, made 0700 if it does not exist (its missing parents too)."""
    folder = Path(path)
    if not folder.is_dir():
        for missing in reversed([folder, *folder.parents]):
            if not missing.is_dir():
                missing.mkdir(mode=PRIVATE_DIR_MODE, exist_ok=True)
    return folder


def open_private(path: str | os.PathLike[str], mode: str = "w", *,
                 encoding: str | None = "utf-8", newline: str | None = None) -> TextIO:
    """``path`` opened to write text (``mode``: ``"w"``, ``"a"`` or ``"x"``), made 0600 if new."""
    flags = {"w": os.O_WRONLY | os.O_CREAT | os.O_TRUNC,
             "a": os.O_WRONLY | os.O_CREAT | os.O_APPEND,
             "x": os.O_WRONLY | os.O_CREAT | os.O_EXCL}[mode]
    descriptor = os.open(path, flags | getattr(os, "O_CLOEXEC", 0), PRIVATE_FILE_MODE)
    try:
        return open(descriptor, "a" if mode == "a" else "w", encoding=encoding,
                    newline=newline)
    except BaseException:
        os.close(descriptor)
        raise


def write_private_text(path: str | os.PathLike[str], text: str) -> None:
    """Write ``text`` to ``path`` (UTF-8), made 0600 if new."""
    with open_private(path) as stream:
        stream.write(text)
