"""Run the official SDKs' own client tests on spendguard's drop-in classes.

"Drop-in" is a claim the SDKs can check: their source distributions ship their client test
suites. This downloads (with pip) the sdists of the *installed* ``openai`` and ``anthropic``,
runs their client test modules once on the SDK's own classes and once with spendguard's
classes swapped in before the tests import them, and fails when a test that passes on the
SDK's classes fails on spendguard's — unless it is in :data:`EXPECTED`, with its reason.

Nothing from the SDKs' tests is kept in this repository: they are downloaded on every run,
so the check follows the SDKs as they move. The swapped run uses a ``memory://`` ledger,
prices the tests' made-up models through a price file, and lets their unpriced test paths
(``/foo``, ``/upload``) through (``allow_unpriced=True``): spendguard refusing those is by
design, and the refusal is the only difference this run is meant to hide.

    python tools/sdk_conformance.py            # both SDKs; exit 0 when nothing regressed
    python tools/sdk_conformance.py --sdk openai --workdir /tmp/sdks   # keep the downloads
"""

from __future__ import annotations

import argparse
import importlib.metadata
import importlib.util
import os
import subprocess
import sys
import tarfile
import tempfile
import time
import xml.etree.ElementTree as ET
from dataclasses import dataclass
from pathlib import Path

SUITES = {
    "openai": ("tests/test_client.py", "tests/test_streaming.py", "tests/test_response.py",
               "tests/test_legacy_response.py"),
    "anthropic": ("tests/test_client.py", "tests/test_streaming.py", "tests/test_response.py"),
}
# pytest options of the SDKs' own configuration that need plugins we do not install
# (-n auto: pytest-xdist); anthropic loads its httpx alias as a plugin.
EXTRA_ARGS = {"openai": (), "anthropic": ("-p", "tests._alias_httpx")}

# Modules the SDKs' test modules and conftests import, with the requirement that provides
# them (the SDKs' dev dependency groups); installed only when missing.
TEST_DEPENDENCIES = {
    "inline_snapshot": "inline-snapshot>=0.28.0",
    "rich": "rich>=13.7.1",
    "http_snapshot": "http-snapshot[httpx]==0.1.9",
    "respx": "respx",
    "pytest_asyncio": "pytest-asyncio",
}

_PRIVATE_TRANSPORT = ("asserts that client._client._transport is the SDK's own HTTPTransport; "
                      "spendguard's dispatcher wraps it (the pool it checks is unchanged)")
EXPECTED: dict[str, str] = {
    # test id (module.Class::name, parameters stripped) -> why spendguard's class differs.
    "::test_retrying_timeout_errors_doesnt_leak": _PRIVATE_TRANSPORT,
    "::test_retrying_status_errors_doesnt_leak": _PRIVATE_TRANSPORT,
}
"""Tests allowed to pass on the SDK's classes and fail on spendguard's, each with its reason."""

PRICES = '''\
# The model names the SDKs' tests send, priced so spendguard can reserve for them.
[models."gpt-4"]
provider = "openai"
usd_per_million = { input = 30, output = 60 }
context_window = 8192
max_output_tokens = 8192
source = "test price for the SDK conformance run"
as_of = 2026-01-01

[models."test-model"]
provider = "openai"
usd_per_million = { input = 1, output = 1 }
context_window = 128000
max_output_tokens = 16384
source = "test price for the SDK conformance run"
as_of = 2026-01-01

[models."synthetic"]
provider = "openai"
usd_per_million = { input = 1, output = 1 }
context_window = 128000
max_output_tokens = 16384
source = "test price for the SDK conformance run"
as_of = 2026-01-01

[models."claude"]
provider = "anthropic"
context_window = 200000
max_output_tokens = 64000
source = "test price for the SDK conformance run"
as_of = 2026-01-01

[models."claude".usd_per_million]
input = 1
cache_read = 0.1
cache_write_5m = 1.25
cache_write_1h = 2
output = 5
'''

SWAP_PLUGIN = '''\
"""pytest plugin: replace the SDK's client classes by spendguard's before the tests import
them. Loaded with -p, so it runs before the SDK's conftest."""

import importlib
import inspect
import os

import spendguard

_SDK = os.environ["SPENDGUARD_CONFORMANCE_SDK"]
_CLASSES = {"openai": ("OpenAI", "AsyncOpenAI"), "anthropic": ("Anthropic", "AsyncAnthropic")}


def _allowing_unpriced(guarded):
    # The tests' made-up paths (/foo, /upload) cannot be priced: let them through uncounted.
    class Swapped(guarded):
        def __init__(self, *args, **kwargs):
            kwargs.setdefault("allow_unpriced", True)
            super().__init__(*args, **kwargs)

    Swapped.__init__.__signature__ = inspect.signature(guarded.__init__)
    Swapped.__name__ = Swapped.__qualname__ = guarded.__name__
    return Swapped


_module = importlib.import_module(_SDK)
for _name in _CLASSES[_SDK]:
    setattr(_module, _name, _allowing_unpriced(getattr(spendguard, _name)))
'''


@dataclass
class Outcomes:
    """What one pytest run did with each test: passed, failed, skipped (by test id)."""

    by_test: dict[str, str]
    seconds: float

    def count(self, outcome: str) -> int:
        return sum(1 for value in self.by_test.values() if value == outcome)


def run(command: list[str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(command, check=False, text=True, capture_output=True)


def ensure_test_dependencies() -> None:
    missing = [req for module, req in TEST_DEPENDENCIES.items()
               if importlib.util.find_spec(module) is None]
    if not missing:
        return
    print(f"installing the SDK tests' dependencies: {', '.join(missing)}")
    done = run([sys.executable, "-m", "pip", "install", "-q", *missing])
    if done.returncode != 0:
        raise SystemExit(f"pip could not install {missing}:\n{done.stderr[-2000:]}")


def fetch_sdist(sdk: str, workdir: Path) -> Path:
    """The extracted source distribution of the installed version of ``sdk``."""
    version = importlib.metadata.version(sdk)
    root = workdir / f"{sdk}-{version}"
    if (root / "tests").is_dir():
        return root
    done = run([sys.executable, "-m", "pip", "download", "-q", "--no-deps", "--no-binary",
                ":all:", f"{sdk}=={version}", "-d", str(workdir)])
    archive = workdir / f"{sdk}-{version}.tar.gz"
    if done.returncode != 0 or not archive.exists():
        raise SystemExit(f"pip could not download the {sdk} {version} sdist:\n"
                         f"{done.stderr[-2000:]}")
    with tarfile.open(archive) as tar:
        tar.extractall(workdir, filter="data")
    return root


@dataclass
class Suite:
    """One pytest run of an SDK's client tests, started in the background."""

    sdk: str
    swapped: bool
    report: Path
    process: subprocess.Popen[str]
    started: float

    def outcomes(self) -> Outcomes:
        stdout, stderr = self.process.communicate()
        if not self.report.exists():
            raise SystemExit(f"pytest did not run the {self.sdk} tests:\n{stdout[-3000:]}"
                             f"{stderr[-3000:]}")
        return Outcomes(read_junit(self.report), time.monotonic() - self.started)


def start_suite(sdk: str, root: Path, support: Path, *, swapped: bool) -> Suite:
    report = support / f"{sdk}-{'spendguard' if swapped else 'sdk'}.xml"
    env = {**os.environ, "SPENDGUARD_LEDGER": "memory://",
           "SPENDGUARD_HOME": str(support / "home"),
           "SPENDGUARD_PRICES": str(support / "prices.toml"),
           "SPENDGUARD_CONFORMANCE_SDK": sdk,
           "PYTHONPATH": os.pathsep.join([str(support), os.environ.get("PYTHONPATH", "")])}
    command = [sys.executable, "-m", "pytest", "-q", "-o", "addopts=", "-p", "no:cacheprovider",
               *EXTRA_ARGS[sdk], f"--junitxml={report}", *SUITES[sdk]]
    if swapped:
        command[3:3] = ["-p", "spendguard_conformance_swap"]
    process = subprocess.Popen(command, cwd=root, env=env, text=True,
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    return Suite(sdk, swapped, report, process, time.monotonic())


def read_junit(report: Path) -> dict[str, str]:
    outcomes: dict[str, str] = {}
    for case in ET.parse(report).getroot().iter("testcase"):
        test_id = f"{case.get('classname')}::{case.get('name')}"
        outcome = "passed"
        for child in case:
            if child.tag in ("failure", "error"):
                outcome = "failed"
            elif child.tag == "skipped":
                outcome = "skipped"
        outcomes[test_id] = outcome
    return outcomes


def expected_reason(test_id: str) -> str | None:
    name = test_id.split("[", 1)[0]
    for pattern, reason in EXPECTED.items():
        if name.endswith(pattern):
            return reason
    return None


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sdk", choices=sorted(SUITES), action="append",
                        help="only this SDK (repeatable; default: both)")
    parser.add_argument("--workdir", type=Path,
                        help="where to download and run (default: a new temporary folder)")
    args = parser.parse_args(argv)
    sdks = args.sdk or sorted(SUITES)
    ensure_test_dependencies()
    with tempfile.TemporaryDirectory(prefix="spendguard-conformance-") as scratch:
        workdir = args.workdir or Path(scratch)
        workdir.mkdir(parents=True, exist_ok=True)
        support = Path(scratch) / "support"
        support.mkdir()
        (support / "prices.toml").write_text(PRICES)
        (support / "spendguard_conformance_swap.py").write_text(SWAP_PLUGIN)
        regressions: list[tuple[str, str]] = []
        rows: list[str] = []
        roots = {sdk: fetch_sdist(sdk, workdir) for sdk in sdks}
        # The runs are independent processes: run them side by side.
        suites = {(sdk, swapped): start_suite(sdk, roots[sdk], support, swapped=swapped)
                  for sdk in sdks for swapped in (False, True)}
        for sdk in sdks:
            official = suites[sdk, False].outcomes()
            ours = suites[sdk, True].outcomes()
            excused = 0
            for test_id, outcome in sorted(official.by_test.items()):
                if outcome != "passed" or ours.by_test.get(test_id) == "passed":
                    continue
                if expected_reason(test_id) is not None:
                    excused += 1
                else:
                    regressions.append((sdk, test_id))
            version = importlib.metadata.version(sdk)
            for label, result in (("SDK's classes", official), ("spendguard's", ours)):
                rows.append(f"{sdk + ' ' + version:<18} {label:<14} {len(result.by_test):>6} "
                            f"{result.count('passed'):>7} {result.count('skipped'):>8} "
                            f"{result.count('failed'):>7} {result.seconds:>6.0f}s")
            rows.append(f"{'':<18} passing on the SDK's classes, failing on spendguard's: "
                        f"{sum(1 for s, _ in regressions if s == sdk)} "
                        f"(+{excused} expected)")
    print(f"{'SDK':<18} {'classes':<14} {'tests':>6} {'passed':>7} {'skipped':>8} "
          f"{'failed':>7}   time")
    print("\n".join(rows))
    if regressions:
        print("\nFAILED: tests that pass on the SDK's classes fail on spendguard's:")
        for sdk, test_id in regressions:
            print(f"  {sdk}: {test_id}")
        return 1
    print("\nOK: every test that passes on the SDK's classes passes on spendguard's.")
    return 0


if __name__ == "__main__":
    sys.exit(main())
