"""A provider is one adapter: outside the adapter packages, no code names a provider to branch on.

Shared code asks the provider's adapter (``_providers/adapter.py``: ``adapter_for``,
``adapters``) instead of comparing names. This test reads every module of ``spendguard`` and
finds the provider names spelled as string constants (``"openai"``, ``"anthropic"``,
``"gemini"``, and the platforms ``"azure"``, ``"bedrock"``, ``"vertex"``) and the
``Provider.OPENAI``-style members; docstrings are prose and not counted. The adapter packages
(``_providers/<name>/``) may name their own provider; the emulator's job is each
provider's wire. Any other module is listed below with how many it holds and why: a new one, or
one more in a listed module, fails here, so a new branch on a provider is a decision someone
wrote down. Shared code does not import one provider's package either, and does not name one
priced endpoint (``Endpoint.CHAT``, ``Endpoint("chat.completions")``...): it reads the
endpoint's facts (declared once, in its provider's ``_providers/<name>/endpoints.py``) or asks its
provider's adapter.
"""

from __future__ import annotations

import ast
from collections import Counter
from pathlib import Path

from spendguard._costing.endpoints import Endpoint, Provider
from spendguard._costing.prices.sections import SECTION_KEYS
from spendguard._providers.adapter import adapters, providers

PACKAGE = Path(__file__).resolve().parents[1] / "spendguard"
NAMES = frozenset({"openai", "anthropic", "gemini", "azure", "bedrock", "vertex"})
MEMBERS = frozenset(name.upper() for name in Provider.names())
"""``Provider.OPENAI``-style attributes, as the provider vocabulary once spelled them."""

ADAPTERS = PACKAGE / "_providers"
"""Each folder under it is one provider's adapter package: it names its own provider."""
EMULATOR = PACKAGE / "testing"
"""The provider emulator: each module serves one provider's wire (its routes, bodies, errors)."""

# module (relative to spendguard/) -> (names it holds, why)
ALLOWED: dict[str, tuple[int, str]] = {
    # Where a provider is the module's subject, by design.
    "_costing/tokens/models.py": (8, "tokenizer families (which BPE rules a model follows)"),
    "_costing/tokens/api.py": (1, "counts by tokenizer family, not by provider"),
    "cli/demo_story.py": (2, "the scripted demo's own plan() call, as a user writes it"),
}


def _docstrings(tree: ast.Module) -> set[int]:
    found: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
            for statement in node.body:
                if isinstance(statement, ast.Expr) and isinstance(statement.value, ast.Constant):
                    found.add(id(statement.value))
    return found


def provider_names(source: str) -> list[tuple[int, str]]:
    """(line, what) for each provider name a module's code spells."""
    tree = ast.parse(source)
    prose = _docstrings(tree)
    found = []
    for node in ast.walk(tree):
        if (isinstance(node, ast.Constant) and isinstance(node.value, str)
                and node.value in NAMES and id(node) not in prose):
            found.append((node.lineno, repr(node.value)))
        elif (isinstance(node, ast.Attribute) and node.attr in MEMBERS
              and isinstance(node.value, ast.Name) and node.value.id == "Provider"):
            found.append((node.lineno, f"Provider.{node.attr}"))
    return sorted(found)


def _counted() -> dict[str, list[tuple[int, str]]]:
    counted = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        inside_adapter = path.parent != ADAPTERS and ADAPTERS in path.parents
        if inside_adapter or EMULATOR in path.parents:
            continue
        names = provider_names(path.read_text(encoding="utf-8"))
        if names:
            counted[path.relative_to(PACKAGE).as_posix()] = names
    return counted


def test_no_provider_name_outside_the_adapters_but_the_listed_ones() -> None:
    problems = []
    for module, names in _counted().items():
        allowed = ALLOWED.get(module, (0, ""))[0]
        if len(names) > allowed:
            where = ", ".join(f"line {line}: {what}" for line, what in names)
            problems.append(f"spendguard/{module} names a provider {len(names)} time(s), "
                            f"{allowed} allowed ({where})")
    assert not problems, ("ask the provider's adapter (adapter_for / adapters) instead of "
                          "naming a provider:\n" + "\n".join(problems))


def test_every_allowance_is_still_needed() -> None:
    counted = _counted()
    stale = [f"spendguard/{module}: {allowed} allowed, {len(counted.get(module, []))} found"
             for module, (allowed, _why) in ALLOWED.items()
             if len(counted.get(module, [])) < allowed]
    assert not stale, "lower these allowances in ALLOWED:\n" + "\n".join(stale)


def test_every_allowance_says_why() -> None:
    assert all(why.strip() for _count, why in ALLOWED.values())


def test_the_finder_sees_names_and_members_but_not_prose() -> None:
    source = ('"""Talks of "openai" in prose."""\n'
              'if provider == "anthropic" or kind is Provider.GEMINI:\n'
              '    platform = "bedrock"\n'
              'label = "OpenAI"\n')
    assert provider_names(source) == [(2, "'anthropic'"), (2, "Provider.GEMINI"),
                                      (3, "'bedrock'")]


def test_the_exempt_packages_are_one_adapter_per_provider() -> None:
    exempt = {path.name for path in ADAPTERS.iterdir() if (path / "__init__.py").is_file()}
    assert exempt == set(providers()) == {adapter.name for adapter in adapters()}
    assert Counter(module.split("/")[0] for module in _counted())["testing"] == 0


def test_what_the_price_modules_ask_of_the_adapters_has_one_answer() -> None:
    """A price-file section, a genai-prices id and an id rule each belong to one adapter."""
    owned = [section for adapter in adapters() for section in adapter.price_sections]
    assert sorted(owned) == sorted(SECTION_KEYS)
    ids = [genai_id for adapter in adapters() for genai_id in adapter.genai_prices_ids]
    rules = [rule for adapter in adapters() for rule in adapter.id_rules]
    assert len(set(ids)) == len(ids) and len(set(rules)) == len(rules)
    assert all(list(adapter.genai_prices_ids.values()).count("") == 1 for adapter in adapters())


# module (relative to spendguard/) -> (imports of one provider's package, why)
IMPORTS_ALLOWED: dict[str, tuple[int, str]] = {
    "__init__.py": (24, "the public drop-in classes, each in its provider's dropin.py (_LAZY, "
                        "and the imports generated from it for type checkers)"),
    "_costing/routing.py": (1, "re-exports the Azure platform's name and price date"),
    "_caching/implicit.py": (1, "the implicit cache style reads Gemini's body shape"),
}


def provider_imports(source: str) -> list[tuple[int, str]]:
    """(line, module) for each import of one provider's package (``spendguard._providers.
    <name>``, or a module inside it), also where a string names it (``_LAZY``)."""
    found = []
    for node in ast.walk(ast.parse(source)):
        names: list[str] = []
        if isinstance(node, ast.ImportFrom) and node.module and not node.level:
            names = [node.module]
        elif isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.Constant) and isinstance(node.value, str):
            names = [node.value]
        found += [(getattr(node, "lineno", 0), name) for name in names if _one_providers(name)]
    return sorted(found)


def _one_providers(module: str) -> bool:
    parts = module.split(".")
    return parts[:2] == ["spendguard", "_providers"] and len(parts) > 2 \
        and parts[2] in Provider.names()


def _imports_counted() -> dict[str, list[tuple[int, str]]]:
    counted = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        if (ADAPTERS in path.parents and path.parent != ADAPTERS) or EMULATOR in path.parents:
            continue
        found = provider_imports(path.read_text(encoding="utf-8"))
        if found:
            counted[path.relative_to(PACKAGE).as_posix()] = found
    return counted


def test_no_shared_module_imports_one_providers_package_but_the_listed_ones() -> None:
    counted = _imports_counted()
    problems = [f"spendguard/{module} imports {', '.join(name for _line, name in found)}"
                for module, found in counted.items()
                if len(found) > IMPORTS_ALLOWED.get(module, (0, ""))[0]]
    stale = [f"spendguard/{module}: {allowed} allowed, {len(counted.get(module, []))} found"
             for module, (allowed, _why) in IMPORTS_ALLOWED.items()
             if len(counted.get(module, [])) < allowed]
    assert not problems, ("ask the provider's adapter, or find the part by the provider's name, "
                          "instead of importing its package:\n" + "\n".join(problems))
    assert not stale, "lower these allowances in IMPORTS_ALLOWED:\n" + "\n".join(stale)


def test_the_import_finder_sees_imports_and_module_strings() -> None:
    source = ("from spendguard._providers.gemini.caches import note_cache\n"
              "import spendguard._providers.openai\n"
              "from spendguard._providers import adapter_for\n"
              "TABLE = {'OpenAI': 'spendguard._providers.openai.dropin'}\n")
    assert provider_imports(source) == [(1, "spendguard._providers.gemini.caches"),
                                        (2, "spendguard._providers.openai"),
                                        (4, "spendguard._providers.openai.dropin")]


# -- Endpoints: shared code asks an endpoint's facts or its adapter, never names one endpoint.
ENDPOINT_MEMBERS = frozenset(member.name for member in Endpoint if member is not Endpoint.FREE)
"""Every priced endpoint, by the name its provider's package declares it under;
``Endpoint.FREE`` (anything that cannot spend) is no provider's."""
ENDPOINT_VALUES = frozenset(member.value for member in Endpoint if member is not Endpoint.FREE)
"""What each priced endpoint is looked up by: ``Endpoint("chat.completions")``."""

# module (relative to spendguard/) -> (endpoint members it names, why)
ENDPOINTS_ALLOWED: dict[str, tuple[int, str]] = {}


def endpoint_members(source: str) -> list[tuple[int, str]]:
    """(line, member) for each ``Endpoint.<PRICED MEMBER>`` or ``Endpoint("<priced value>")``
    a module's code names."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if (isinstance(node, ast.Attribute) and node.attr in ENDPOINT_MEMBERS
                and isinstance(node.value, ast.Name) and node.value.id == "Endpoint"):
            found.append((node.lineno, f"Endpoint.{node.attr}"))
        elif (isinstance(node, ast.Call) and isinstance(node.func, ast.Name)
              and node.func.id == "Endpoint" and node.args
              and isinstance(node.args[0], ast.Constant) and node.args[0].value in ENDPOINT_VALUES):
            found.append((node.lineno, f"Endpoint({node.args[0].value!r})"))
    return sorted(found)


def _members_counted() -> dict[str, list[tuple[int, str]]]:
    counted = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        if (ADAPTERS in path.parents and path.parent != ADAPTERS) or EMULATOR in path.parents:
            continue
        found = endpoint_members(path.read_text(encoding="utf-8"))
        if found:
            counted[path.relative_to(PACKAGE).as_posix()] = found
    return counted


def test_no_endpoint_member_outside_the_adapters_but_the_listed_ones() -> None:
    counted = _members_counted()
    problems = [f"spendguard/{module} names {len(found)} endpoint(s), "
                f"{ENDPOINTS_ALLOWED.get(module, (0, ''))[0]} allowed ("
                + ", ".join(f"line {line}: {what}" for line, what in found) + ")"
                for module, found in counted.items()
                if len(found) > ENDPOINTS_ALLOWED.get(module, (0, ""))[0]]
    stale = [f"spendguard/{module}: {allowed} allowed, {len(counted.get(module, []))} found"
             for module, (allowed, _why) in ENDPOINTS_ALLOWED.items()
             if len(counted.get(module, [])) < allowed]
    assert not problems, ("read the endpoint's facts (Endpoint.generates, .embeds, "
                          ".turns_field...) or ask its provider's adapter instead of naming "
                          "an endpoint:\n" + "\n".join(problems))
    assert not stale, "lower these allowances in ENDPOINTS_ALLOWED:\n" + "\n".join(stale)
    assert all(why.strip() for _count, why in ENDPOINTS_ALLOWED.values())


def test_the_endpoint_finder_sees_priced_members_only() -> None:
    source = ('"""Talks of Endpoint.CHAT in prose."""\n'
              'if endpoint is Endpoint.RESPONSES or endpoint in (Endpoint.CACHE, x.EMBED):\n'
              '    kind = Endpoint.FREE if Endpoint.of(provider) else Endpoint.CACHE_UPDATE\n'
              'kind = Endpoint("messages") or Endpoint("free") or Endpoint(value)\n')
    assert endpoint_members(source) == [(2, "Endpoint.CACHE"), (2, "Endpoint.RESPONSES"),
                                        (3, "Endpoint.CACHE_UPDATE"),
                                        (4, "Endpoint('messages')")]
