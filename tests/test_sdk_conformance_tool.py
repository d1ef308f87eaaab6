"""The SDK conformance runner's bookkeeping (the runner itself runs in CI: .ci/run)."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

TOOL = Path(__file__).resolve().parent.parent / "tools" / "sdk_conformance.py"


def load_tool() -> ModuleType:
    spec = importlib.util.spec_from_file_location("sdk_conformance", TOOL)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules.setdefault("sdk_conformance", module)
    spec.loader.exec_module(module)
    return module


def test_junit_outcomes_are_read_per_test(tmp_path: Path) -> None:
    report = tmp_path / "report.xml"
    report.write_text(
        '<testsuites><testsuite name="pytest">'
        '<testcase classname="tests.test_client.TestOpenAI" name="test_copy[a]"/>'
        '<testcase classname="tests.test_client.TestOpenAI" name="test_copy[b]">'
        '<failure message="boom"/></testcase>'
        '<testcase classname="tests.test_streaming" name="test_basic"><error message="x"/>'
        '</testcase>'
        '<testcase classname="tests.test_streaming" name="test_aiohttp">'
        '<skipped message="no aiohttp"/></testcase>'
        "</testsuite></testsuites>")
    assert load_tool().read_junit(report) == {
        "tests.test_client.TestOpenAI::test_copy[a]": "passed",
        "tests.test_client.TestOpenAI::test_copy[b]": "failed",
        "tests.test_streaming::test_basic": "failed",
        "tests.test_streaming::test_aiohttp": "skipped",
    }


def test_every_expected_difference_has_a_reason_and_matches_by_name() -> None:
    tool = load_tool()
    assert tool.EXPECTED and all(reason.strip() for reason in tool.EXPECTED.values())
    assert tool.expected_reason(
        "tests.test_client.TestAsyncAnthropic::test_retrying_status_errors_doesnt_leak") is not None
    assert tool.expected_reason("tests.test_client.TestOpenAI::test_copy_signature") is None


def test_the_runner_is_run_by_ci() -> None:
    ci = (TOOL.parent.parent / ".ci" / "run").read_text()
    assert "tools/sdk_conformance.py" in ci
