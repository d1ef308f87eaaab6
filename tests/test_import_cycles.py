"""No wide import circle: the largest set of spendguard modules that import one another in a
ring has at most four members.

Every import counts, as in ``test_import_layers.py`` (lazy ones inside functions,
``TYPE_CHECKING`` ones, and modules named in strings): a circle through a type-only import
still ties the modules together for whoever has to change one of them.
"""

from __future__ import annotations

from pathlib import Path

from tests.test_import_layers import _imports, _module_name, _modules

WIDEST = 4


def _graph() -> dict[str, set[str]]:
    modules = {_module_name(path): path for path in _modules()}
    # The package's own __init__ names every public module in its _LAZY table, and no module
    # imports the package's __init__ back (the layer rule forbids it), so it closes no circle.
    return {name: {target for target in _imports(path) if target in modules and target != name}
            for name, path in modules.items()}


def _circles(graph: dict[str, set[str]]) -> list[set[str]]:
    """The strongly connected components with more than one module (Tarjan's algorithm)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[set[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for target in sorted(graph[node]):
            if target not in index:
                visit(target)
                low[node] = min(low[node], low[target])
            elif target in on_stack:
                low[node] = min(low[node], index[target])
        if low[node] == index[node]:
            component = set()
            while True:
                member = stack.pop()
                on_stack.discard(member)
                component.add(member)
                if member == node:
                    break
            if len(component) > 1:
                found.append(component)

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return found


def test_the_widest_import_circle_has_at_most_four_modules() -> None:
    wide = [sorted(circle) for circle in _circles(_graph()) if len(circle) > WIDEST]
    assert not wide, "import circles wider than {}: {}".format(
        WIDEST, "; ".join(" <-> ".join(circle) for circle in wide))


def test_the_circle_finder_sees_a_ring_of_five() -> None:
    ring = {f"m{i}": {f"m{(i + 1) % 5}"} for i in range(5)} | {"leaf": {"m0"}}
    assert _circles(ring) == [{f"m{i}" for i in range(5)}]


def test_the_graph_covers_the_package() -> None:
    graph = _graph()
    assert "spendguard._budget.budget" in graph
    assert Path(__file__).name not in graph
