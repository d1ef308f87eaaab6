"""The import rule: a module imports only from its own layer or the layers below it.

Every import counts, lazy ones inside functions and ``TYPE_CHECKING`` ones included, and so
does a module named in a string (``importlib.import_module("spendguard.x")``, ``_LAZY``
tables, ``sys.modules[...]``): a reach-back through any of them makes an import circle as
surely as a top-level import. The layers are ARCHITECTURE.md's, lowest first.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "spendguard"

# Lowest first: each top-level package of spendguard is one layer's folder.
LAYERS: tuple[tuple[str, frozenset[str]], ...] = (
    ("foundation", frozenset({"_core"})),
    # GPU sizing is pure arithmetic over two tables; self-hosted prices are built on it.
    ("sizing", frozenset({"_sizing"})),
    # A provider's package (_providers/<name>/) is its adapter, at this layer, except for the
    # parts named in PROVIDER_PARTS, each at its own layer below.
    ("prices, tokens, usage and cost", frozenset({"_costing", "_providers"})),
    ("budget and ledger", frozenset({"_budget"})),
    # Cache ordering rewrites a request body before it is estimated (the guard's cache_order=
    # option), so it sits below the choke point and knows nothing of it.
    ("request shaping", frozenset({"_caching"})),
    ("choke point", frozenset({"_guard", "guard", "guard_rest"})),
    ("strategies", frozenset({"_strategies", "batch_wire"})),
    # The opt-in door for code we don't own (install, spendguard run) and the telemetry
    # subscriber it can switch on.
    ("adoption", frozenset({"_adoption"})),
    # The choke point behind an HTTP server, for programs that are not Python.
    ("gateway", frozenset({"_gateway"})),
    ("reporting", frozenset({"_reporting", "reconcile"})),
    ("emulator", frozenset({"testing"})),
    ("public surface", frozenset({"dropin", "cli", "sizing", "telemetry", "__init__",
                                  "__main__"})),
)


def _layer_of(unit: str) -> int:
    for index, (_name, units) in enumerate(LAYERS):
        if unit in units:
            return index
    raise AssertionError(
        f"spendguard.{unit} is in no layer: add it to LAYERS in {Path(__file__).name} "
        "(and to ARCHITECTURE.md's layer table)")


PROVIDER_PARTS = frozenset({"guard", "guard_rest", "batch_wire", "reconcile", "dropin"})
"""The modules of a provider's package that sit above its adapter: its client half
(``guard``, ``guard_rest``: the choke point), its batch wire (strategies), its report reader
(reporting) and its drop-in classes (the public surface)."""


def _unit(module: str) -> str:
    """``spendguard._budget.ledger.sqlite`` -> ``_budget``; ``spendguard`` -> ``__init__``;
    ``spendguard._providers.gemini.guard`` -> ``guard`` (a provider part at its own layer)."""
    parts = module.split(".")
    if len(parts) >= 4 and parts[1] == "_providers" and parts[3] in PROVIDER_PARTS:
        return parts[3]
    return parts[1] if len(parts) > 1 else "__init__"


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(PACKAGE.parent).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _imports(path: Path, source: str | None = None) -> set[str]:
    """Every spendguard module ``path`` (or ``source`` standing in for it) imports."""
    module = _module_name(path)
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    text = path.read_text(encoding="utf-8") if source is None else source
    found: set[str] = set()
    for node in ast.walk(ast.parse(text)):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")[: len(package.split(".")) - node.level + 1]
                target = ".".join(base + ([node.module] if node.module else []))
            else:
                target = node.module or ""
            # ``from spendguard.testing import routes``: the submodule, not its package
            inner = target[len("spendguard."):] + "." if target != "spendguard" else ""
            found.update(f"{target}.{alias.name}" if _is_module(inner + alias.name)
                         else target for alias in node.names)
        elif (isinstance(node, ast.Constant) and isinstance(node.value, str)
              and node.value.startswith("spendguard.") and node.value[11:]
              and _is_module(node.value[11:])):
            found.add(node.value)
    return {name for name in found if name == "spendguard" or name.startswith("spendguard.")}


def _is_module(dotted: str) -> bool:
    """Whether ``spendguard.<dotted>`` is a module or package (not a public name, nor the
    bare prefix ``spendguard.`` that tag keys start with)."""
    if not dotted:
        return False
    base = PACKAGE.joinpath(*dotted.split("."))
    return base.with_suffix(".py").is_file() or (base / "__init__.py").is_file()


def _modules() -> list[Path]:
    return sorted(path for path in PACKAGE.rglob("*.py") if "__pycache__" not in path.parts)


def test_every_module_belongs_to_a_layer() -> None:
    for path in _modules():
        _layer_of(_unit(_module_name(path)))


@pytest.mark.parametrize("path", _modules(), ids=lambda p: str(p.relative_to(PACKAGE.parent)))
def test_no_module_imports_a_higher_layer(path: Path) -> None:
    own_unit = _unit(_module_name(path))
    own = _layer_of(own_unit)
    higher = sorted(
        f"{name} ({LAYERS[_layer_of(_unit(name))][0]})" for name in _imports(path)
        if _unit(name) != own_unit and _layer_of(_unit(name)) > own)
    assert not higher, (
        f"{_module_name(path)} ({LAYERS[own][0]}) reaches up to: {', '.join(higher)}")


def test_the_rule_sees_lazy_type_checking_and_string_imports() -> None:
    money = PACKAGE / "_core" / "money.py"
    source = money.read_text(encoding="utf-8") + (
        "\n\ndef _late() -> None:\n    from spendguard._strategies.cascade import cascade\n"
        "\nif TYPE_CHECKING:\n    from .._strategies.loop import LoopGuard\n"
        "\n_TABLE = {'report': 'spendguard._reporting.report'}\n")
    assert {"spendguard._strategies.cascade", "spendguard._strategies.loop",
            "spendguard._reporting.report"} <= _imports(money, source)
