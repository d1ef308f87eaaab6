"""Record the exact versions of every test dependency in ``requirements/test.txt``.

The library's own ranges in ``pyproject.toml`` stay open for users (floors, no needless upper
bounds); the test environment is pinned, so the README's test command gives the same verdict
on any fresh machine until someone moves the pins on purpose. The file is a pip *constraints*
file written by pip-tools' ``pip-compile`` (the long-standing tool that turns a
``pyproject.toml`` into pins plain ``pip`` understands): the README's install command passes it
with ``-c``, so nobody needs pip-tools or any other tool to install.

pip-tools runs from a throwaway virtual environment, so nothing is added to the project's
own. Resolved for the running interpreter (CPython 3.11 on Linux in CI).

    python tools/lock.py             # re-resolve every pin to the newest allowed release
    python tools/lock.py --check     # exit 1 when pyproject.toml asks for what the pins lack

Moving the pins is a change like any other: run ``tools/compat.py`` first to see what the
newest releases break, then this, then the whole suite.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import venv
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
LOCK = REPO / "requirements" / "test.txt"
EXTRAS = ("dev", "frameworks")
"""The extras the README's install command installs: the whole test environment."""
PIP_TOOLS = "pip-tools>=7.4"


def compile_pins(output: Path) -> None:
    """Resolve pyproject.toml's test extras into exact pins written to ``output``."""
    with tempfile.TemporaryDirectory(prefix="spendguard-lock-") as scratch:
        env_dir = Path(scratch) / "venv"
        venv.create(env_dir, with_pip=True)
        python = env_dir / "bin" / "python"
        subprocess.run([python, "-m", "pip", "install", "-q", "--upgrade", "pip", PIP_TOOLS],
                       check=True)
        command = [str(python), "-m", "piptools", "compile", "--quiet", "--strip-extras",
                   "--no-emit-index-url", "--no-emit-find-links", "--resolver=backtracking",
                   "--output-file", os.path.relpath(output, REPO)]
        for extra in EXTRAS:
            command += ["--extra", extra]
        command.append("pyproject.toml")
        # The header names the command to run again, not a scratch path.
        environment = {**os.environ, "CUSTOM_COMPILE_COMMAND": "python tools/lock.py"}
        subprocess.run(command, check=True, cwd=REPO, env=environment)


def main(argv: list[str] | None = None) -> int:
    """Write the pins, or with ``--check`` compare fresh pins with the recorded ones."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true",
                        help="resolve into a scratch file and report pins that would change")
    args = parser.parse_args(argv)
    LOCK.parent.mkdir(exist_ok=True)
    if not args.check:
        compile_pins(LOCK)
        print(f"wrote {LOCK.relative_to(REPO)}")
        return 0
    with tempfile.TemporaryDirectory() as scratch:
        fresh = Path(scratch) / "test.txt"
        if LOCK.exists():
            fresh.write_bytes(LOCK.read_bytes())  # pip-compile keeps pins that still fit
        compile_pins(fresh)
        old, new = _pins(LOCK), _pins(fresh)
    changed = sorted(name for name in old.keys() | new.keys() if old.get(name) != new.get(name))
    for name in changed:
        print(f"{name}: {old.get(name, '-')} -> {new.get(name, '-')}")
    return 1 if changed else 0


def _pins(path: Path) -> dict[str, str]:
    """``name -> version`` for each ``name==version`` line of a pip-compile output."""
    pins: dict[str, str] = {}
    if not path.exists():
        return pins
    for line in path.read_text().splitlines():
        requirement = line.split("#", 1)[0].strip()
        if "==" in requirement:
            name, version = requirement.split("==", 1)
            pins[name.strip().lower()] = version.strip()
    return pins


if __name__ == "__main__":
    sys.exit(main())
