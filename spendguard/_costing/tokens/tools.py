"""OpenAI function-tool definitions by the OpenAI Cookbook rule, and tool shape conversion.

The rule ("How to count tokens with tiktoken", section 7) was reverse-engineered for gpt-3.5,
gpt-4, gpt-4o and gpt-4o-mini and matches the API on flat schemas there (cookbook example:
101 tokens for gpt-4o). Per function: ``func_init`` + tokens of ``"name:description"``; when it
has properties, ``prop_init`` + per property ``prop_key`` + tokens of ``"key:type:description"``
(+ ``enum_init`` + ``enum_item`` + tokens per enum value); after all functions ``func_end``.
Schema parts the rule does not cover (nested objects, arrays, formats…) are added as JSON text
with extra headroom, and on other models the rule's result carries 10 % headroom.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from decimal import Decimal
from typing import Any

from spendguard._costing.tokens.bpe import count_text
from spendguard._costing.tokens.content import UNKNOWN_MARGIN, items, json_text, unknown
from spendguard._costing.tokens.count import Tally
from spendguard._costing.tokens.models import Profile

__all__ = ["as_anthropic_tool", "count_functions", "function_of"]

PROP_INIT = 3
PROP_KEY = 3
ENUM_INIT = -3
ENUM_ITEM = 3
FUNC_END = 12
UNVERIFIED_RULE_MARGIN = Decimal("0.10")
# Models on which the cookbook checked the rule against the API.
_VERIFIED = re.compile(r"^(ft:)?(gpt-4o|gpt-4(-|$)|gpt-3\.5|gpt-35)")
# Schema keys the rule accounts for (``required`` shows only as optional markers, which the
# cookbook's constants already include).
_RULE_KEYS = frozenset({"type", "description", "enum"})
_IGNORED_SCHEMA_KEYS = frozenset({"type", "properties", "required", "additionalProperties"})


def function_of(tool: Any) -> Mapping[str, Any] | None:
    """``{name, description, parameters}`` of a function tool in chat, Responses, legacy
    ``functions`` or Anthropic shape; None for any other tool (built-in, custom)."""
    if not isinstance(tool, Mapping):
        return None
    inner = tool.get("function")
    if tool.get("type") == "function" and isinstance(inner, Mapping):
        return inner  # chat completions
    if tool.get("type", "function") == "function" and isinstance(tool.get("name"), str):
        if "input_schema" in tool and "parameters" not in tool:  # Anthropic shape
            return {"name": tool["name"], "description": tool.get("description", ""),
                    "parameters": tool["input_schema"]}
        return tool  # Responses / legacy functions
    return None


def as_anthropic_tool(tool: Any) -> Any:
    """An OpenAI-shaped function tool converted to Anthropic's; anything else unchanged."""
    if isinstance(tool, Mapping) and "input_schema" not in tool:
        function = function_of(tool)
        if function is not None:
            return {"name": function.get("name", ""),
                    "description": function.get("description", ""),
                    "input_schema": function.get("parameters") or {"type": "object"}}
    return tool


def _properties(encoding: str, properties: Mapping[str, Any], extras: list[Any]) -> int:
    tokens = PROP_INIT
    for key, schema in properties.items():
        tokens += PROP_KEY
        if not isinstance(schema, Mapping):
            extras.append({key: schema})
            continue
        ptype = schema.get("type", "")
        ptype = ptype if isinstance(ptype, str) else json_text(ptype)
        description = str(schema.get("description", "")).removesuffix(".")
        enum = items(schema.get("enum"))
        if enum is not None:
            tokens += ENUM_INIT
            for value in enum:
                tokens += ENUM_ITEM + count_text(encoding, value if isinstance(value, str)
                                                 else json_text(value))
        tokens += count_text(encoding, f"{key}:{ptype}:{description}")
        rest = {k: v for k, v in schema.items() if k not in _RULE_KEYS}
        if rest:
            extras.append(rest)
    return tokens


def count_functions(profile: Profile, tally: Tally, functions: list[Mapping[str, Any]]) -> None:
    """Add the tokens of function definitions (chat ``tools`` / ``functions``, Responses tools)."""
    if not functions:
        return
    encoding = profile.encoding
    tokens = 0
    extras: list[Any] = []
    for function in functions:
        tokens += profile.func_init
        name = str(function.get("name", ""))
        description = str(function.get("description") or "").removesuffix(".")
        tokens += count_text(encoding, f"{name}:{description}")
        parameters = function.get("parameters")
        if not isinstance(parameters, Mapping):
            if parameters is not None:
                extras.append(parameters)
            continue
        properties = parameters.get("properties")
        if isinstance(properties, Mapping) and properties:
            tokens += _properties(encoding, properties, extras)
        rest = {k: v for k, v in parameters.items() if k not in _IGNORED_SCHEMA_KEYS}
        if rest:
            extras.append(rest)
        if parameters.get("additionalProperties") not in (None, False):
            extras.append({"additionalProperties": parameters["additionalProperties"]})
    tokens += FUNC_END
    verified = _VERIFIED.match(profile.model) is not None
    extra = 0 if verified else tokens * UNVERIFIED_RULE_MARGIN
    profile.overhead(tally, tokens, note="tool rule", extra=extra)
    for part in extras:
        profile.text(tally, json_text(part), extra_margin=UNKNOWN_MARGIN, note="tool rule")


def count_tools(profile: Profile, tally: Tally, tools: Any) -> None:
    """Add a ``tools`` / ``functions`` list: function tools by the rule, others as JSON."""
    tool_list = items(tools)
    if tool_list is None:
        unknown(profile, tally, tools)
        return
    functions = []
    for tool in tool_list:
        function = function_of(tool)
        if function is None:
            unknown(profile, tally, tool, note="built-in tools")
        else:
            functions.append(function)
    count_functions(profile, tally, functions)
