"""Started by ``spendguard run``: guard this Python process before the program's first import.

This folder is put first on ``PYTHONPATH`` by the command; Python imports ``sitecustomize``
at start-up (module ``site``). After booting, the ``sitecustomize`` this one shadows (if the
environment has one) is run too, so a run changes nothing else about the interpreter.
"""

from __future__ import annotations

import importlib.machinery
import importlib.util
import os
import sys


def _boot() -> None:
    try:
        from spendguard._adoption.running import boot  # noqa: PLC0415
    except ImportError as exc:
        # Going on would run the program unguarded while the user believes it is guarded.
        sys.stderr.write(
            f"spendguard run: this Python ({sys.executable}) cannot import spendguard ({exc}); "
            "run the program with the Python where spendguard-llm is installed, e.g. "
            "`spendguard run -- .venv/bin/python app.py`\n")
        sys.stderr.flush()
        os._exit(2)
    boot()


def _chain() -> None:
    here = os.path.dirname(os.path.abspath(__file__))
    sys.path[:] = [entry for entry in sys.path if os.path.abspath(entry or ".") != here]
    spec = importlib.machinery.PathFinder.find_spec("sitecustomize", sys.path)
    if spec is None or spec.loader is None:
        return
    shadowed = importlib.util.module_from_spec(spec)
    # The import in progress returns whatever sys.modules holds when this file finishes.
    sys.modules["sitecustomize"] = shadowed
    spec.loader.exec_module(shadowed)


_boot()
_chain()
