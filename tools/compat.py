"""Check spendguard against the newest SDK and framework releases, outside the gating suite.

The gating suite runs on the pins in ``requirements/test.txt`` so that its verdict does not
move when a provider's SDK does. This command answers the other question — does spendguard
still work with what users will install *today*? — in a throwaway virtual environment:

1. installs spendguard with its test extras, then upgrades the SDKs (``openai``,
   ``anthropic``, ``httpx2`` and the provider SDKs of the optional extras) and every package of
   the ``[frameworks]`` extra to their newest releases on the package index;
2. runs the SDK conformance runner (``tools/sdk_conformance.py``: the SDKs' own client tests
   on spendguard's classes) and the guarantee tests (the choke point, the drop-in clients, the
   frameworks' own clients under ``install()``);
3. writes a dated table — each package's pinned and newest version, each check's verdict and
   what failed — at the top of ``docs/compatibility.md``.

Run it before each release; a failure here is a release blocker or a pin to keep, never a
reason to loosen a test.

    python tools/compat.py                       # newest releases; updates docs/compatibility.md
    python tools/compat.py --workdir /tmp/compat  # keep the environment for a closer look
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import re
import subprocess
import sys
import tempfile
import tomllib
import venv
import xml.etree.ElementTree as ET
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
LOCK = REPO / "requirements" / "test.txt"
REPORT = REPO / "docs" / "compatibility.md"
SDKS = ("openai", "anthropic", "httpx2")
SDK_EXTRAS = ("gemini",)
"""Optional extras whose packages are provider SDKs, upgraded with the others when present."""
GUARANTEE_TESTS = ("tests/guard", "tests/dropin", "tests/adoption", "tests/test_install.py")
HEADER = """# Compatibility with the newest releases

spendguard's tests run on the exact versions pinned in `requirements/test.txt`; this page
records, newest first, what `python tools/compat.py` found when it ran spendguard against the
newest releases of the SDKs and of the frameworks in the `[frameworks]` extra. "pinned" is the
version the gating suite uses, "newest" the one the check installed.
"""
MARKER = "<!-- runs: newest first -->"


@dataclass(frozen=True)
class Verdict:
    """One check's outcome: passed and failed counts and the ids of what failed."""

    name: str
    passed: int
    failed: int
    failures: tuple[str, ...]
    exit_code: int

    @property
    def ok(self) -> bool:
        return self.exit_code == 0 and self.failed == 0


def _requirement_name(requirement: str) -> str:
    """``"pydantic-ai-slim[openai]>=2.68"`` -> ``"pydantic-ai-slim"``."""
    match = re.match(r"[A-Za-z0-9._-]+", requirement.strip())
    if match is None:
        raise ValueError(f"cannot read a package name from {requirement!r} in pyproject.toml")
    return match.group(0)


def packages_to_upgrade() -> list[str]:
    """The SDKs and every package of the frameworks extra, by name."""
    extras = tomllib.loads((REPO / "pyproject.toml").read_text())["project"][
        "optional-dependencies"]
    names = list(SDKS)
    for extra in ("frameworks", *SDK_EXTRAS):
        names += [_requirement_name(r) for r in extras.get(extra, [])]
    return sorted(dict.fromkeys(names))


def pinned_versions() -> dict[str, str]:
    """``name -> version`` from requirements/test.txt."""
    pins: dict[str, str] = {}
    for line in LOCK.read_text().splitlines():
        requirement = line.split("#", 1)[0].strip()
        if "==" in requirement:
            name, version = requirement.split("==", 1)
            pins[name.strip().lower()] = version.strip()
    return pins


def build_environment(env_dir: Path, upgrade: list[str]) -> Path:
    """A fresh venv with spendguard's test extras, then ``upgrade`` at their newest."""
    venv.create(env_dir, with_pip=True, clear=True)
    python = env_dir / "bin" / "python"
    pip = [str(python), "-m", "pip", "install", "-q"]
    subprocess.run([*pip, "--upgrade", "pip"], check=True)
    subprocess.run([*pip, "-e", f"{REPO}[dev,frameworks]"], check=True)
    subprocess.run([*pip, "--upgrade", *upgrade], check=True)
    return python


def installed_versions(python: Path) -> dict[str, str]:
    """``name -> version`` of everything installed in the environment."""
    listing = subprocess.run([str(python), "-m", "pip", "list", "--format", "json"],
                             check=True, capture_output=True, text=True).stdout
    return {item["name"].lower(): item["version"] for item in json.loads(listing)}


def run_tests(python: Path, workdir: Path) -> Verdict:
    """The guarantee tests under the newest releases, read from a JUnit report."""
    junit = workdir / "guarantee.xml"
    result = subprocess.run(
        [str(python), "-m", "pytest", "-q", "-p", "no:cacheprovider", f"--junitxml={junit}",
         *GUARANTEE_TESTS], cwd=REPO, check=False)
    passed, failures = 0, []
    if junit.exists():
        for case in ET.parse(junit).getroot().iter("testcase"):
            if case.find("failure") is not None or case.find("error") is not None:
                failures.append(f"{case.get('classname')}::{case.get('name')}")
            elif case.find("skipped") is None:
                passed += 1
    return Verdict("guarantee tests", passed, len(failures), tuple(failures), result.returncode)


def run_conformance(python: Path, workdir: Path) -> Verdict:
    """The SDKs' own client tests on spendguard's classes (tools/sdk_conformance.py)."""
    result = subprocess.run(
        [str(python), str(REPO / "tools" / "sdk_conformance.py"), "--workdir",
         str(workdir / "sdks")], cwd=REPO, check=False, capture_output=True, text=True)
    output = result.stdout + result.stderr
    sys.stdout.write(output)
    # Rows: "<sdk version>  spendguard's  tests passed skipped failed  time"; after a
    # "FAILED:" line, one "  <sdk>: <test id>" line per regression.
    passed = sum(int(m.group(2)) for m in re.finditer(
        r"spendguard's\s+(\d+)\s+(\d+)\s+(\d+)\s+(\d+)", output))
    tail = output.split("FAILED:", 1)[1] if "FAILED:" in output else ""
    failures = tuple(line.strip() for line in tail.splitlines()[1:] if line.startswith("  "))
    return Verdict("SDK conformance", passed, len(failures), failures, result.returncode)


def render(day: dt.datetime, upgrade: list[str], pinned: dict[str, str],
           newest: dict[str, str], verdicts: list[Verdict]) -> str:
    """One dated section of docs/compatibility.md."""
    lines = [f"## {day:%Y-%m-%d %H:%M} UTC", "", "| package | pinned | newest | |",
             "|---|---|---|---|"]
    for name in upgrade:
        old, new = pinned.get(name.lower(), "-"), newest.get(name.lower(), "-")
        lines.append(f"| {name} | {old} | {new} | {'same' if old == new else 'newer'} |")
    lines += ["", "| check | verdict | passed | failed |", "|---|---|---|---|"]
    for verdict in verdicts:
        state = "pass" if verdict.ok else "FAIL"
        lines.append(f"| {verdict.name} | {state} | {verdict.passed} | {verdict.failed} |")
    failures = [(v.name, f) for v in verdicts for f in v.failures]
    if failures:
        lines += ["", "What failed:", ""]
        lines += [f"- {name}: `{failure}`" for name, failure in failures]
    return "\n".join(lines) + "\n"


def write_report(section: str) -> None:
    """Put ``section`` first under the page's header, keeping the earlier runs below it."""
    earlier = ""
    if REPORT.exists() and MARKER in REPORT.read_text():
        earlier = REPORT.read_text().split(MARKER, 1)[1].lstrip("\n")
    REPORT.write_text(f"{HEADER}\n{MARKER}\n\n{section}\n{earlier}".rstrip("\n") + "\n")


def main(argv: list[str] | None = None) -> int:
    """Build the environment, run the checks, write the table; exit 1 when a check failed."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--workdir", type=Path, help="keep the environment here")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="spendguard-compat-") as scratch:
        workdir = args.workdir or Path(scratch)
        workdir.mkdir(parents=True, exist_ok=True)
        upgrade = packages_to_upgrade()
        python = build_environment(workdir / "venv", upgrade)
        newest = installed_versions(python)
        verdicts = [run_conformance(python, workdir), run_tests(python, workdir)]
    section = render(dt.datetime.now(dt.UTC), upgrade, pinned_versions(), newest, verdicts)
    write_report(section)
    print(section)
    print(f"wrote {REPORT.relative_to(REPO)}")
    return 0 if all(v.ok for v in verdicts) else 1


if __name__ == "__main__":
    sys.exit(main())
