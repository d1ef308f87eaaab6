"""spendguard's client options are declared once; every entry point spells them alike."""

from __future__ import annotations

import inspect
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

import spendguard
from spendguard._guard.options import OPTION_NAMES, UNSET, option_parameters

ROOT = Path(__file__).resolve().parents[2]
# The Azure classes' own constructors take deployments= before the rest.
DROP_INS = (spendguard.OpenAI, spendguard.AsyncOpenAI, spendguard.Anthropic,
            spendguard.AsyncAnthropic, spendguard.AnthropicBedrock,
            spendguard.AsyncAnthropicBedrock, spendguard.AnthropicVertex,
            spendguard.AsyncAnthropicVertex)


def spelled(function: Callable[..., Any]) -> dict[str, tuple[str, object]]:
    """The options among ``function``'s parameters: name -> (annotation, default)."""
    parameters = inspect.signature(function).parameters
    return {name: (str(parameters[name].annotation), parameters[name].default)
            for name in OPTION_NAMES if name in parameters}


DECLARED = {p.name: (str(p.annotation), p.default) for p in option_parameters()}


@pytest.mark.parametrize("entry", [spendguard.wrap, spendguard.install],
                         ids=lambda entry: entry.__name__)
def test_wrap_and_install_take_the_declared_options(entry: Callable[..., Any]) -> None:
    assert spelled(entry) == DECLARED


def test_the_gemini_client_takes_the_declared_options() -> None:
    assert spelled(spendguard.Gemini.__init__) == DECLARED


@pytest.mark.parametrize("cls", DROP_INS, ids=lambda cls: cls.__name__)
def test_a_drop_in_shows_the_declared_options_after_the_sdks_parameters(cls: Any) -> None:
    init = spelled(cls.__init__)
    assert init == {**DECLARED, "budget": (DECLARED["budget"][0], UNSET)}
    assert spelled(cls.copy) == {name: (annotation, UNSET)
                                 for name, (annotation, _) in DECLARED.items()}


def test_a_wrapped_clients_copy_shows_the_declared_options_kept_when_not_given() -> None:
    import openai

    copy = spendguard.wrap(openai.OpenAI(api_key="k")).copy
    assert spelled(copy) == {name: (annotation, UNSET)
                             for name, (annotation, _) in DECLARED.items()}


def test_the_plan_orders_for_the_cache_as_the_clients_do() -> None:
    assert spelled(spendguard.plan) == {"cache_order": DECLARED["cache_order"]}


def test_the_signatures_type_checkers_see_are_generated_from_the_sdk_and_the_options() -> None:
    tool = ROOT / "tools" / "dropin_signatures.py"
    result = subprocess.run([sys.executable, str(tool), "--check"], capture_output=True,
                            text=True, check=False, cwd=ROOT)
    assert result.returncode == 0, result.stderr
