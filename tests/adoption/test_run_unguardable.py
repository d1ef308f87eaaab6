"""``spendguard run`` never runs a program unguarded without saying so up front: a command it
cannot guard is refused before it starts, with the reason and the fix, unless
``--allow-unguarded`` is given (then the summary says so, and the exit status is the child's).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from spendguard.testing import Emulator, serve
from spendguard.testing.server import EmulatorServer
from tests.paths import TESTS

PROGRAM = TESTS / "run_program.py"
VENV_BIN = Path(sys.executable).parent


@pytest.fixture(name="server", scope="module")
def fixture_server() -> Iterator[tuple[Emulator, EmulatorServer]]:
    emulator = Emulator()
    with serve(emulator) as running:
        yield emulator, running


def _spendguard_run(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-c", "from spendguard.cli import main; main()",
                           "run", "--budget", "0.00001", *args], capture_output=True,
                          text=True, timeout=120, check=False, cwd=cwd)


@pytest.mark.parametrize("flag", ["-I", "-E", "-S", "-uI"])
def test_python_told_to_ignore_its_environment_is_refused_before_it_starts(
        server: tuple[Emulator, EmulatorServer], flag: str) -> None:
    emulator, running = server
    before = len(emulator.requests)
    done = _spendguard_run("--", sys.executable, flag, str(PROGRAM),
                           running.openai_base_url, "2", "0")
    assert done.returncode == 1 and done.stdout == ""  # the program never ran
    assert "not started" in done.stderr and f"Drop -{flag[-1]}" in done.stderr
    assert "--allow-unguarded" in done.stderr and "Traceback" not in done.stderr
    assert len(emulator.requests) == before


def test_a_program_that_is_not_python_runs_through_the_runs_gateway_and_keeps_its_exit(
        ) -> None:
    node = shutil.which("node")
    command = [node, "-e", "process.exit(5)"] if node else ["sh", "-c", "exit 5"]
    done = _spendguard_run("--json", "--", *command)
    assert done.returncode == 5
    assert "not started" not in done.stderr and "UNGUARDED" not in done.stderr
    summary = json.loads(done.stderr.strip().splitlines()[-1])
    assert "unguarded" not in summary


def test_a_launcher_that_shadows_spendguards_hook_is_refused_with_the_order_that_works(
        server: tuple[Emulator, EmulatorServer]) -> None:
    launcher = VENV_BIN / "opentelemetry-instrument"
    if not launcher.exists():
        pytest.skip("opentelemetry-instrumentation is not installed")
    emulator, running = server
    before = len(emulator.requests)
    done = _spendguard_run("--", str(launcher), sys.executable, str(PROGRAM),
                           running.openai_base_url, "2", "0")
    assert done.returncode == 1 and "sitecustomize" in done.stderr
    assert "opentelemetry-instrument spendguard run" in done.stderr  # the fix
    assert len(emulator.requests) == before


def test_spendguard_run_inside_the_launcher_guards_and_runs_the_launchers_hook_too(
        server: tuple[Emulator, EmulatorServer], tmp_path: Path) -> None:
    launcher = VENV_BIN / "opentelemetry-instrument"
    if not launcher.exists():
        pytest.skip("opentelemetry-instrumentation is not installed")
    emulator, running = server
    before = len(emulator.requests)
    program = tmp_path / "both.py"
    program.write_text(
        "import sys, runpy\n"
        "hooks = sorted(m for m in sys.modules if m in ('spendguard._adoption.running', "
        "'opentelemetry.instrumentation.auto_instrumentation'))\n"
        "print(hooks, flush=True)\n"
        f"sys.argv = [{str(PROGRAM)!r}, {running.openai_base_url!r}, '1', '0']\n"
        f"runpy.run_path({str(PROGRAM)!r}, run_name='__main__')\n", encoding="utf-8")
    env = {**os.environ, "OTEL_TRACES_EXPORTER": "none", "OTEL_METRICS_EXPORTER": "none",
           "OTEL_LOGS_EXPORTER": "none"}
    done = subprocess.run([str(launcher), sys.executable, "-c",
                           "from spendguard.cli import main; main()", "run", "--budget",
                           "0.00001", "--", sys.executable, str(program)],
                          capture_output=True, text=True, timeout=120, check=False, env=env)
    assert done.stdout.splitlines()[0] == str(
        ["opentelemetry.instrumentation.auto_instrumentation", "spendguard._adoption.running"])
    assert "BudgetExceeded" in done.stdout  # guarded: the tight budget refused the call
    assert len(emulator.requests) == before


def test_a_python_that_cannot_import_spendguard_is_refused(tmp_path: Path) -> None:
    other = Path("/usr/bin/python3")
    if not other.exists() or other.resolve() == Path(sys.executable).resolve():
        pytest.skip("no second Python on this machine")
    (tmp_path / "app.py").write_text("print('ran')\n", encoding="utf-8")
    done = _spendguard_run("--", str(other), "app.py", cwd=tmp_path)
    assert done.returncode == 1 and done.stdout == ""
    assert "cannot import spendguard" in done.stderr
    assert "Install spendguard-llm into that environment" in done.stderr


@pytest.mark.parametrize(("arguments", "refused"), [
    (["-W", "ignore", "app.py"], None),
    (["-X", "dev", "-u", "app.py"], None),
    (["-W", "ignore", "-I", "app.py"], "-I"),
    (["-sE", "-c", "pass"], "-E"),
    (["-c", "pass", "-I"], None),  # after -c: the program's own arguments
    (["-m", "app", "-S"], None),
])
def test_only_the_options_python_itself_reads_decide(arguments: list[str],
                                                     refused: str | None) -> None:
    from spendguard._adoption.coverage import unguarded_reason

    found = unguarded_reason([sys.executable, *arguments], dict(os.environ))
    assert (found.reason.split()[0] if found else None) == refused


def test_a_python_console_script_is_judged_by_its_interpreter(tmp_path: Path) -> None:
    from spendguard._adoption.coverage import unguarded_reason

    script = tmp_path / "tool"
    script.write_text(f"#!{sys.executable} -I\nprint('hi')\n", encoding="utf-8")
    script.chmod(0o755)
    plain = tmp_path / "plain-tool"
    plain.write_text(f"#!{sys.executable}\nprint('hi')\n", encoding="utf-8")
    plain.chmod(0o755)
    found = unguarded_reason([str(script)], dict(os.environ))
    assert found is not None and found.reason.startswith("-I")
    assert unguarded_reason([str(plain)], dict(os.environ)) is None


def test_a_shell_that_starts_python_still_has_that_python_guarded(
        server: tuple[Emulator, EmulatorServer]) -> None:
    emulator, running = server
    before = len(emulator.requests)
    script = f"{sys.executable} {PROGRAM} {running.openai_base_url} 1 0"
    done = _spendguard_run("--", "sh", "-c", script)  # a shell: through the run's gateway
    assert done.returncode == 0 and done.stdout == "BudgetExceeded\n"  # the budget held
    assert "not started" not in done.stderr
    assert len(emulator.requests) == before
