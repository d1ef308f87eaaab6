"""The public API: flat, lazy, and cheap to import."""

from __future__ import annotations

import ast
import re
import subprocess
import sys
from pathlib import Path

import spendguard

INIT = Path(spendguard.__file__)


def test_every_public_name_resolves() -> None:
    for name in spendguard.__all__:
        assert getattr(spendguard, name) is not None, name


def test_all_is_a_sorted_literal_that_matches_the_lazy_table() -> None:
    lazy = set(spendguard._LAZY)
    assert lazy <= set(spendguard.__all__)
    assert list(spendguard.__all__) == sorted(spendguard.__all__)


def test_type_checkers_see_every_lazy_name() -> None:
    tree = ast.parse(INIT.read_text())
    seen: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            seen.update(alias.asname or alias.name for alias in node.names)
    assert set(spendguard._LAZY) <= seen


def test_importing_spendguard_loads_no_sdk_and_no_tokenizer() -> None:
    code = ("import sys, spendguard; heavy = [m for m in ('openai', 'anthropic', 'tiktoken', "
            "'httpx2', 'pydantic') if m in sys.modules]; print(','.join(heavy))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True).stdout.strip()
    assert out == ""


def test_install_imports_no_sdk_until_the_program_does() -> None:
    code = ("import sys, spendguard; spendguard.install(); before = 'openai' in sys.modules; "
            "import openai; print(before, hasattr(openai.OpenAI.__init__, "
            "'__spendguard_original_init__'), 'anthropic' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True).stdout.strip()
    assert out == "False True False"  # patched when imported, and only what was imported


def test_building_an_openai_client_does_not_import_anthropic() -> None:
    code = ("import sys, spendguard; spendguard.OpenAI(api_key='k'); "
            "print('anthropic' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True).stdout.strip()
    assert out == "False"


def test_a_budget_guards_an_agent_loop(tmp_path: Path) -> None:
    budget = spendguard.Budget("1", ledger=f"sqlite:///{tmp_path / 'l.db'}")
    guard = spendguard.loop(budget=budget, max_steps=2)
    assert [step.index for step in guard] == [0, 1]
    assert guard.stop_reason == spendguard.StopReason.STEPS


def test_the_documented_submodules_are_public_and_complete() -> None:
    import spendguard.sizing
    import spendguard.telemetry

    for module in (spendguard.sizing, spendguard.telemetry):
        assert not module.__name__.rpartition(".")[2].startswith("_")
        for name in module.__all__:
            assert getattr(module, name) is not None, f"{module.__name__}.{name}"


def test_docs_and_examples_use_only_the_public_api() -> None:
    root = INIT.parents[1]
    texts = [root / "README.md", *sorted((root / "docs").glob("*.md")),
             *sorted((root / "examples").glob("*.py"))]
    private = re.compile(r"\bspendguard\._[a-z][\w.]*")
    # The one maintainer command that runs a private module (it prints the sizing cases).
    allowed = {"spendguard._sizing.validation"}
    found = {f"{path.name}: {hit}" for path in texts
             for hit in private.findall(path.read_text(encoding="utf-8"))
             if not any(hit.startswith(a) for a in allowed)}
    assert not found, sorted(found)


def test_the_type_checking_imports_are_generated_from_the_one_list() -> None:
    tool = INIT.parents[1] / "tools" / "public_api.py"
    result = subprocess.run([sys.executable, str(tool), "--check"], capture_output=True,
                            text=True, check=False)
    assert result.returncode == 0, result.stderr


def test_all_is_built_from_the_lazy_table_alone() -> None:
    assert spendguard.__all__ == sorted(["__version__", *spendguard._LAZY])
