"""``spendguard.install()``: guard every openai / anthropic client built from now on.

For code you do not control — frameworks that build their own clients, scripts you cannot
edit. This is the one place spendguard touches SDK classes, and only their construction: the
``__init__`` of ``openai.OpenAI``, ``openai.AsyncOpenAI``, ``anthropic.Anthropic``,
``anthropic.AsyncAnthropic`` and ``google.genai.Client`` (subclasses such as ``AzureOpenAI``
call it) is wrapped so that,
once the SDK has built the client, :func:`spendguard.wrap` guards it with the installed
budget and options. The call path is the transport, as for every guarded client.

An SDK not imported yet is patched when it is imported (a post-import hook on
``sys.meta_path``), so ``install()`` never imports an SDK itself. ``uninstall()`` restores the
original constructors; clients built while installed stay guarded. A client that is already
guarded (a ``spendguard.OpenAI``, a wrapped client, a copy from ``with_options``) is left as
it is.
"""

from __future__ import annotations

import functools
import importlib.abc
import importlib.machinery
import sys
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from types import ModuleType
from typing import Any

from spendguard._budget.budget import Budget
from spendguard._caching.order import CacheOrder
from spendguard._core.errors import ConfigError
from spendguard._costing.prices import PriceTable
from spendguard._guard.clients import Guarded, wrap
from spendguard._guard.gemini import is_genai_client
from spendguard._guard.transport import client_guard

__all__ = ["install", "installed", "uninstall"]

SDK_CLASSES: dict[str, tuple[str, ...]] = {
    "openai": ("OpenAI", "AsyncOpenAI"),
    "anthropic": ("Anthropic", "AsyncAnthropic"),
    # google-genai's one client class (its .aio shares the guard).
    "google.genai": ("Client",),
}
"""The constructors install() wraps, by SDK package."""

_ORIGINAL = "__spendguard_original_init__"


@dataclass(frozen=True, slots=True)
class _Settings:
    budget: Budget | None
    cap_output: bool
    allow_unpriced: bool
    store_prompts: bool
    prices: PriceTable | None
    cache_order: bool | CacheOrder


_lock = threading.RLock()
_settings: _Settings | None = None
_patched: dict[type, Callable[..., None]] = {}


def install(budget: Budget | None = None, *, cap_output: bool = False,
            allow_unpriced: bool = False, store_prompts: bool = False,
            prices: PriceTable | None = None, cache_order: bool | CacheOrder = False) -> None:
    """Guard every openai and anthropic client constructed from now on, in this process.

    Takes :func:`spendguard.wrap`'s options. Calling it again replaces the budget and options
    for clients built afterwards. Undo with :func:`uninstall`.
    """
    if budget is not None and not isinstance(budget, Budget):
        raise ConfigError(f"budget: expected a spendguard.Budget or None, got "
                          f"{type(budget).__name__}; write "
                          f"spendguard.install(budget=spendguard.Budget(\"10.00\"))")
    global _settings  # noqa: PLW0603 - install() is process-wide by design
    with _lock:
        _settings = _Settings(budget, cap_output, allow_unpriced, store_prompts, prices,
                              cache_order)
        for package, names in SDK_CLASSES.items():
            module = sys.modules.get(package)
            if module is not None:
                _patch(module, names)
        if _HOOK not in sys.meta_path:
            sys.meta_path.insert(0, _HOOK)


def uninstall() -> None:
    """Stop guarding new clients: the SDK constructors are the originals again.

    Clients built while installed keep their guard. Does nothing when not installed.
    """
    global _settings  # noqa: PLW0603
    with _lock:
        _settings = None
        if _HOOK in sys.meta_path:
            sys.meta_path.remove(_HOOK)
        for cls, original in _patched.items():
            type.__setattr__(cls, "__init__", original)
        _patched.clear()


def installed() -> bool:
    """Whether :func:`install` is active."""
    return _settings is not None


def _patch(module: ModuleType, names: Sequence[str]) -> None:
    for name in names:
        cls = getattr(module, name, None)
        if not isinstance(cls, type) or cls in _patched:
            continue
        original = cls.__dict__.get("__init__")
        if original is None:  # an SDK whose class no longer defines it: nothing to wrap
            continue
        _patched[cls] = original
        type.__setattr__(cls, "__init__", _guarding(original))


def _guarding(original: Callable[..., None]) -> Callable[..., None]:
    @functools.wraps(original)
    def __init__(self: Any, *args: Any, **kwargs: Any) -> None:
        original(self, *args, **kwargs)
        settings = _settings
        if settings is None or isinstance(self, Guarded) or _is_guarded(self):
            return
        gemini = is_genai_client(self)  # neither option applies to Gemini clients yet
        wrap(self, settings.budget, cap_output=settings.cap_output and not gemini,
             allow_unpriced=settings.allow_unpriced, store_prompts=settings.store_prompts,
             prices=settings.prices, cache_order=False if gemini else settings.cache_order)

    setattr(__init__, _ORIGINAL, original)
    return __init__


def _is_guarded(client: Any) -> bool:
    return client_guard(client) is not None  # a budget belongs to the SDK client


class _PatchOnImport(importlib.abc.MetaPathFinder):
    """Finds nothing itself: when an SDK package is imported, patches it right after it ran."""

    def find_spec(self, fullname: str, path: Sequence[str] | None,
                  target: ModuleType | None = None) -> importlib.machinery.ModuleSpec | None:
        names = SDK_CLASSES.get(fullname)
        if names is None:
            return None
        spec = importlib.machinery.PathFinder.find_spec(fullname, path)
        loader = None if spec is None else spec.loader
        if loader is None or not hasattr(loader, "exec_module"):
            return None  # let the normal machinery find it (or say it is missing)
        execute = loader.exec_module

        def exec_module(module: ModuleType) -> None:
            execute(module)
            with _lock:
                if _settings is not None:
                    _patch(module, names)

        # On this loader object only (one per module file), so the spec and the package's
        # resources stay the SDK's own.
        loader.exec_module = exec_module  # type: ignore[method-assign]
        return spec


_HOOK = _PatchOnImport()
