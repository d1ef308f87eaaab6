"""Can ``spendguard run`` guard this command, and if not, why not: decided before it starts.

``spendguard run`` guards a program by a start-up hook every Python process of it runs (a
``sitecustomize`` first on ``PYTHONPATH``). Some commands would never run that hook, and would
spend unseen while the user believes them guarded:

- a program that is not Python (``node app.mjs``, a binary, a shell script);
- Python told to ignore ``PYTHONPATH`` or ``site`` (``-I``, ``-E``, ``-S``);
- a Python that cannot import spendguard (another virtual environment);
- a launcher that puts its own ``sitecustomize`` ahead of spendguard's
  (``opentelemetry-instrument``, ``ddtrace-run``, ``newrelic-admin``).

:func:`unguarded_reason` returns what stands in the way and the fix, or None when the
command will be guarded. It is the one place that decision is made (a program of another
language may later be guarded another way, e.g. through a local gateway).
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

__all__ = ["Unguarded", "unguarded_reason"]

_PYTHON_NAME = re.compile(r"(python|pypy)(\d+(\.\d+)*)?(\.exe)?")
_ARGUMENT_FLAGS = frozenset("cmWX")  # Python options whose value follows them
_SITE_FLAGS = {"I": "-I (isolated mode) makes Python ignore PYTHONPATH",
               "E": "-E makes Python ignore PYTHONPATH",
               "S": "-S makes Python skip the site module, which runs sitecustomize"}
_SHADOWING_LAUNCHERS = {"opentelemetry-instrument", "ddtrace-run", "newrelic-admin"}
_PROBE_TIMEOUT_S = 60
_BOOTED = 3  # the probe's exit status when spendguard's hook did not run
_NO_SPENDGUARD = 2  # the hook's own exit status when spendguard cannot be imported


@dataclass(frozen=True, slots=True)
class Unguarded:
    """Why a command would run unguarded, and what to do instead."""

    reason: str
    fix: str

    def __str__(self) -> str:
        return f"{self.reason}. {self.fix}"


def unguarded_reason(command: Sequence[str], environ: Mapping[str, str]) -> Unguarded | None:
    """What would keep ``command`` (started with ``environ``, spendguard's hook on its
    ``PYTHONPATH``) from being guarded; None when every Python process of it will be."""
    executable = shutil.which(command[0], path=environ.get("PATH"))
    if executable is None:
        return None  # it cannot start at all: the command says so itself
    name = Path(command[0]).name
    if _PYTHON_NAME.fullmatch(name):
        return _python_reason(executable, list(command[1:]), environ)
    interpreter, flags = _script_interpreter(_shebang(executable))
    if interpreter is None or not _PYTHON_NAME.fullmatch(Path(interpreter).name):
        return Unguarded(
            f"{name!r} is not a Python program, and spendguard run guards Python processes "
            "only: its LLM calls would be neither limited nor counted",
            "Run a Python program (spendguard run -- python app.py); for a launcher that "
            "starts Python itself, run spendguard inside it (uv run spendguard run -- python "
            "app.py); or pass --allow-unguarded to run it anyway, unguarded")
    if name in _SHADOWING_LAUNCHERS:
        return Unguarded(
            f"{name!r} puts its own sitecustomize ahead of spendguard's on PYTHONPATH, so "
            "spendguard's start-up hook would never run",
            f"Start spendguard run inside it instead: `{name} spendguard run [options] -- "
            "python app.py` (spendguard's hook then runs first, and runs the launcher's too)")
    # A Python console script (uvicorn, pytest, a project's own entry point).
    return _python_reason(shutil.which(interpreter, path=environ.get("PATH")) or interpreter,
                          [*flags, executable], environ)


def _python_reason(executable: str, arguments: list[str],
                   environ: Mapping[str, str]) -> Unguarded | None:
    flags = _interpreter_flags(arguments)
    for flag, reason in _SITE_FLAGS.items():
        if flag in flags:
            return Unguarded(f"{reason}, so spendguard's start-up hook would never run",
                             f"Drop -{flag} from the command, or pass --allow-unguarded to "
                             "run it anyway, unguarded")
    if os.path.dirname(os.path.abspath(executable)) == \
            os.path.dirname(os.path.abspath(sys.executable)):
        return None  # this Python's environment (python, python3 ...) runs spendguard now
    return _probe(executable, environ)


def _interpreter_flags(arguments: list[str]) -> set[str]:
    """The one-letter options given to Python before its script, ``-c`` or ``-m``."""
    flags: set[str] = set()
    index = 0
    while index < len(arguments):
        argument = arguments[index]
        if not argument.startswith("-") or argument in ("-", "--") \
                or argument.startswith("--"):
            break
        for position, letter in enumerate(argument[1:], start=1):
            if letter in _ARGUMENT_FLAGS:
                if letter in "cm":
                    return flags
                if position == len(argument) - 1:
                    index += 1  # its value is the next argument
                break
            flags.add(letter)
        index += 1
    return flags


def _shebang(executable: str) -> list[str]:
    """The words of a script's interpreter line (``["/usr/bin/env", "python3"]``); empty for
    a binary or a file without one."""
    try:
        with open(executable, "rb") as file:
            first = file.readline(512)
    except OSError:
        return []
    if not first.startswith(b"#!"):
        return []
    return first[2:].decode("utf-8", "replace").split()


def _script_interpreter(shebang: list[str]) -> tuple[str | None, list[str]]:
    """The interpreter a script's line names, and the options it gives it."""
    if not shebang:
        return None, []
    if Path(shebang[0]).name == "env":  # /usr/bin/env [-S] python3 [options]
        words = [word for word in shebang[1:] if word != "-S"]
        return (words[0], words[1:]) if words else (None, [])
    return shebang[0], shebang[1:]


def _probe(executable: str, environ: Mapping[str, str]) -> Unguarded | None:
    """Start that Python once, empty, as the run would: did spendguard's hook run in it?"""
    env = {key: value for key, value in environ.items() if key != "SPENDGUARD_RUN"}
    # The hook ran (it imported the running module), and what it installs imports too.
    check = (f"import sys\nif 'spendguard._adoption.running' not in sys.modules: "
             f"sys.exit({_BOOTED})\ntry:\n import spendguard._adoption.install\n"
             f"except ImportError:\n sys.exit({_NO_SPENDGUARD})")
    try:
        done = subprocess.run([executable, "-c", check], env=env, capture_output=True,
                              text=True, timeout=_PROBE_TIMEOUT_S, check=False)
    except (OSError, subprocess.TimeoutExpired) as exc:
        return Unguarded(f"spendguard could not start {executable} to check it ({exc})",
                         "Run it with the Python where spendguard-llm is installed, or pass "
                         "--allow-unguarded to run it anyway, unguarded")
    if done.returncode == 0:
        return None
    if done.returncode == _NO_SPENDGUARD:
        return Unguarded(f"{executable} cannot import spendguard",
                         "Install spendguard-llm into that environment, or run the program "
                         "with the Python where it is installed (spendguard run -- "
                         ".venv/bin/python app.py)")
    return Unguarded(f"spendguard's start-up hook did not run in {executable} (another "
                     "sitecustomize, or a start-up option, comes first)",
                     "Run the program with a plain Python, or pass --allow-unguarded to run "
                     "it anyway, unguarded")
