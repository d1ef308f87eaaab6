"""A bounded estimate of the input tokens of an Anthropic Messages request.

Anthropic publishes no tokenizer for current Claude models. Text is counted with o200k_base,
scaled by the model generation's ratio and bounded by ``CLAUDE_MARGIN`` (see ``models.py`` and
docs/tokens.md). Framing constants are in Claude tokens, chosen above what ``count_tokens``
reports for minimal requests (two one-word messages: 9 tokens on Opus 4.6, 15 on Opus 4.7).
The tool-use system prompt is Anthropic's published figure (346 tokens for Claude 4 models,
scaled for the newer tokenizer). Use ``count_tokens_exact`` for the provider's own count.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from spendguard._costing.tokens.content import file_part, image, items, json_text, pdf, unknown
from spendguard._costing.tokens.count import Tally
from spendguard._costing.tokens.models import CLAUDE_RATIO_OLD, Profile
from spendguard._costing.tokens.tools import as_anthropic_tool

__all__ = ["count_messages", "count_parts"]

REQUEST_BASE = 5
PER_MESSAGE = 4
PER_BLOCK = 2
SYSTEM_BASE = 3
TOOL_USE_SYSTEM_PROMPT = 346  # Anthropic pricing page, Claude 4 models, tool_choice auto/none
PER_TOOL = 5
TOOL_CALL_FRAMING = 10
# Anthropic-defined tools add their own documented prompt (Claude 4 tokens); others: 300.
SERVER_TOOL_TOKENS = {"bash": 245, "text_editor": 700, "computer": 1234}
SERVER_TOOL_DEFAULT = 300


def _scaled(profile: Profile, claude4_tokens: int) -> int:
    """A figure published in Claude 4 tokens, in the tokens of ``profile``'s generation."""
    return int(claude4_tokens * profile.ratio / CLAUDE_RATIO_OLD)


def _source(profile: Profile, tally: Tally, block: Mapping[str, Any]) -> None:
    source = block.get("source")
    if not isinstance(source, Mapping):
        unknown(profile, tally, block)
        return
    kind = source.get("type")
    if block.get("type") == "image":
        image(profile, tally, source.get("data") if kind == "base64" else None)
    elif kind == "base64":
        media_type = source.get("media_type")
        if media_type == "application/pdf":
            pdf(profile, tally, str(source.get("data", "")))
        else:
            file_part(profile, tally, source.get("data"), media_type=media_type)
    elif kind == "text":
        profile.text(tally, str(source.get("data", "")))
    elif kind == "content":
        _blocks(profile, tally, source.get("content"))
    else:  # url, file: the bytes are not in the request
        tally.uncounted("files by reference")


def _block(profile: Profile, tally: Tally, block: Any) -> None:
    if isinstance(block, str):
        profile.text(tally, block)
        return
    if not isinstance(block, Mapping):
        unknown(profile, tally, block)
        return
    kind = block.get("type")
    if kind == "text":
        profile.text(tally, str(block.get("text", "")))
    elif kind in ("image", "document"):
        for key in ("title", "context"):
            if isinstance(block.get(key), str):
                profile.text(tally, block[key])
        _source(profile, tally, block)
    elif kind in ("tool_use", "server_tool_use", "mcp_tool_use"):
        profile.overhead(tally, TOOL_CALL_FRAMING)
        profile.text(tally, str(block.get("name", "")))
        profile.text(tally, json_text(block.get("input", {})))
    elif kind in ("tool_result", "mcp_tool_result"):
        profile.overhead(tally, TOOL_CALL_FRAMING)
        _blocks(profile, tally, block.get("content"))
    elif kind == "thinking":
        profile.text(tally, str(block.get("thinking", "")))
    elif kind == "redacted_thinking":
        tally.uncounted("redacted thinking")
    elif kind == "search_result":
        for key in ("title", "source"):
            profile.text(tally, str(block.get(key, "")))
        _blocks(profile, tally, block.get("content"))
    else:
        unknown(profile, tally, block)


def _blocks(profile: Profile, tally: Tally, content: Any) -> None:
    if content is None:
        return
    if isinstance(content, str):
        profile.text(tally, content)
        return
    blocks = items(content)
    if blocks is None:
        unknown(profile, tally, content)
        return
    for block in blocks:
        profile.overhead(tally, PER_BLOCK)
        _block(profile, tally, block)


def _tool(profile: Profile, tally: Tally, tool: Any) -> None:
    tool = as_anthropic_tool(tool)
    if isinstance(tool, Mapping) and "input_schema" in tool:
        profile.overhead(tally, PER_TOOL)
        definition = {k: tool.get(k) for k in ("name", "description", "input_schema")}
        profile.text(tally, json_text(definition))
        return
    kind = str(tool.get("type", "")) if isinstance(tool, Mapping) else ""
    family = next((name for name in SERVER_TOOL_TOKENS if kind.startswith(name)), None)
    tokens = SERVER_TOOL_TOKENS[family] if family else SERVER_TOOL_DEFAULT
    profile.overhead(tally, _scaled(profile, tokens))
    unknown(profile, tally, tool, note="")


def count_parts(profile: Profile, tally: Tally, *, system: Any = None, messages: Any = None,
                tools: Any = None) -> None:
    """Add a system prompt, messages and tools (any may be None)."""
    if system:
        profile.overhead(tally, SYSTEM_BASE)
        _blocks(profile, tally, system)
    if messages is not None:
        profile.overhead(tally, REQUEST_BASE)
        message_list = items(messages)
        if message_list is None:
            unknown(profile, tally, messages)
        for message in message_list or []:
            if not isinstance(message, Mapping):
                unknown(profile, tally, message)
                continue
            profile.overhead(tally, PER_MESSAGE)
            _blocks(profile, tally, message.get("content"))
    tool_list = items(tools) if tools else None
    if tools and tool_list is None:
        unknown(profile, tally, tools)
    if tool_list:
        profile.overhead(tally, _scaled(profile, TOOL_USE_SYSTEM_PROMPT))
        for tool in tool_list:
            _tool(profile, tally, tool)


def count_messages(profile: Profile, body: Mapping[str, Any], tally: Tally) -> None:
    """``POST /v1/messages`` and ``/v1/messages/count_tokens``."""
    count_parts(profile, tally, system=body.get("system"), messages=body.get("messages", []),
                tools=body.get("tools"))
    fmt = body.get("output_format")
    config = body.get("output_config")
    if fmt is None and isinstance(config, Mapping):
        fmt = config.get("format")
    if fmt is not None:  # a structured-output schema reaches the prompt
        unknown(profile, tally, fmt, note="")
