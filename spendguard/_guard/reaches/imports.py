"""Reaches into the import system: patching a package right after it is imported.

``install()`` patches an SDK's or HTTP client's classes when the program imports that package,
never importing it itself. The standard machinery has no post-import hook, so a finder put
first on ``sys.meta_path`` finds the package's spec through ``importlib.machinery.PathFinder``
and replaces ``exec_module`` on that spec's loader object (one per module file). Checked by
``tests/guard/test_private_reaches.py``.
"""

from __future__ import annotations

import importlib.abc
import importlib.machinery
from collections.abc import Callable, Sequence
from types import ModuleType

__all__ = ["PatchOnImport"]


class PatchOnImport(importlib.abc.MetaPathFinder):
    """Finds nothing itself: when a package ``wanted`` names is imported, calls
    ``loaded(module)`` right after the package ran."""

    def __init__(self, wanted: Callable[[str], bool],
                 loaded: Callable[[ModuleType], None]) -> None:
        self.wanted = wanted
        self.loaded = loaded

    def find_spec(self, fullname: str, path: Sequence[str] | None,
                  target: ModuleType | None = None) -> importlib.machinery.ModuleSpec | None:
        if not self.wanted(fullname):
            return None
        spec = importlib.machinery.PathFinder.find_spec(fullname, path)
        loader = None if spec is None else spec.loader
        if loader is None or not hasattr(loader, "exec_module"):
            return None  # let the normal machinery find it (or say it is missing)
        execute = loader.exec_module
        loaded = self.loaded

        def exec_module(module: ModuleType) -> None:
            execute(module)
            loaded(module)

        # On this loader object only, so the spec and the package's resources stay its own.
        loader.exec_module = exec_module  # type: ignore[method-assign]
        return spec
