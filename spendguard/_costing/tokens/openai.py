"""Input tokens of OpenAI request bodies: Chat Completions, Responses, Embeddings, Completions.

Chat messages follow the OpenAI Cookbook rule, exact with the model's tiktoken encoding:
3 tokens per message, the tokens of every ``role`` / ``content`` / ``name`` value, +1 per
``name``, and 3 priming the reply (``<|start|>assistant<|message|>``). The Responses API
publishes no framing rule: its items are framed like chat messages with 2 tokens of headroom
each, so its counts are bounded, never exact. Tool calls, images and files are estimates.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from spendguard._costing.tokens.bpe import count_text
from spendguard._costing.tokens.content import (
    UNKNOWN_MARGIN,
    file_part,
    image,
    items,
    json_text,
    unknown,
)
from spendguard._costing.tokens.count import Tally
from spendguard._costing.tokens.models import Profile
from spendguard._costing.tokens.tools import count_tools

__all__ = ["chat_messages", "count_chat", "count_embeddings", "count_responses",
           "plain_chat_tokens"]

REPLY_PRIMING = 3
TOOL_CALL_FRAMING = 8  # an assumption: name, arguments and call id markers
TOOL_CALL_HEADROOM = 4
RESPONSES_ITEM_HEADROOM = 2
# Message keys that never reach the prompt as text.
_SILENT_KEYS = frozenset({"cache_control", "prompt_cache_breakpoint", "id", "status", "type"})


def _tool_call(profile: Profile, tally: Tally, name: Any, arguments: Any) -> None:
    profile.overhead(tally, TOOL_CALL_FRAMING, note="tool calls", extra=TOOL_CALL_HEADROOM)
    for value in (name, arguments):
        if value is not None:
            profile.text(tally, value if isinstance(value, str) else json_text(value))


def _content_part(profile: Profile, tally: Tally, part: Any) -> None:
    if not isinstance(part, Mapping):
        unknown(profile, tally, part)
        return
    kind = part.get("type")
    if kind in ("text", "input_text", "output_text") and isinstance(part.get("text"), str):
        profile.text(tally, part["text"])
    elif kind == "refusal" and isinstance(part.get("refusal"), str):
        profile.text(tally, part["refusal"])
    elif kind == "image_url":  # chat: {"image_url": {"url": ..., "detail": ...}} or a str
        spec = part.get("image_url")
        if isinstance(spec, Mapping):
            image(profile, tally, spec.get("url"), spec.get("detail", "auto"))
        else:
            image(profile, tally, spec if isinstance(spec, str) else None)
    elif kind == "input_image":  # Responses: image_url (str) or file_id
        image(profile, tally, part.get("image_url"), part.get("detail", "auto"))
    elif kind == "file" and isinstance(part.get("file"), Mapping):  # chat
        spec = part["file"]
        file_part(profile, tally, spec.get("file_data"), by_reference="file_data" not in spec)
    elif kind == "input_file":  # Responses
        file_part(profile, tally, part.get("file_data"), by_reference="file_data" not in part)
    else:
        unknown(profile, tally, part)


def _content(profile: Profile, tally: Tally, content: Any) -> None:
    if content is None:
        return
    if isinstance(content, str):
        profile.text(tally, content)
        return
    parts = items(content)
    if parts is None:
        unknown(profile, tally, content)
        return
    for part in parts:
        _content_part(profile, tally, part)
    if len(parts) > 1:
        # Parts are encoded one by one here; the server may join them first, merging a token
        # across a boundary: at most one token more per boundary in our count.
        tally.add_estimate(0, len(parts) - 1, note="content parts")


def _chat_message(profile: Profile, tally: Tally, message: Any) -> None:
    if profile.exact and type(message) is dict and len(message) == 2:
        # The usual message, {"role": str, "content": str}, with the model's own tokenizer:
        # the Cookbook rule in one step (the same sum as the walk below).
        role, content = message.get("role"), message.get("content")
        if type(role) is str and type(content) is str:
            tally.add(profile.tokens_per_message + count_text(profile.encoding, role)
                      + count_text(profile.encoding, content))
            return
    if not isinstance(message, Mapping):
        unknown(profile, tally, message)
        return
    profile.overhead(tally, profile.tokens_per_message)
    for key, value in message.items():
        if value is None or key in _SILENT_KEYS:
            continue
        if key in ("role", "name"):
            profile.text(tally, value if isinstance(value, str) else json_text(value))
            if key == "name":
                profile.overhead(tally, profile.tokens_per_name)
        elif key in ("content", "refusal"):
            _content(profile, tally, value)
        elif key == "tool_calls":
            for call in items(value) or [value]:
                function = call.get("function") if isinstance(call, Mapping) else None
                if isinstance(function, Mapping):
                    _tool_call(profile, tally, function.get("name"), function.get("arguments"))
                else:
                    unknown(profile, tally, call)
        elif key == "function_call" and isinstance(value, Mapping):
            _tool_call(profile, tally, value.get("name"), value.get("arguments"))
        elif key == "tool_call_id":  # whether the id reaches the prompt is unpublished
            profile.text(tally, str(value), extra_margin=UNKNOWN_MARGIN, note="tool calls")
        else:
            unknown(profile, tally, value)


def chat_messages(profile: Profile, tally: Tally, messages: Any) -> None:
    """Add a chat ``messages`` list and the reply priming."""
    message_list = items(messages)
    if message_list is None:
        unknown(profile, tally, messages)
        return
    for message in message_list:
        _chat_message(profile, tally, message)
    profile.overhead(tally, REPLY_PRIMING)


def _schema(profile: Profile, tally: Tally, response_format: Any) -> None:
    """A structured-output JSON schema: it reaches the prompt, in an unpublished rendering."""
    if isinstance(response_format, Mapping) and response_format.get("type") in ("text",
                                                                                 "json_object"):
        return
    unknown(profile, tally, response_format, note="response schema")


def plain_chat_tokens(profile: Profile, body: Mapping[str, Any]) -> int | None:
    """The input tokens of the usual chat body — a list of plain ``{"role": str, "content":
    str}`` messages, no tools, functions or response format — by the Cookbook rule with the
    model's own tokenizer (the sum :func:`count_chat` makes); None for any other body, or a
    model counted by proxy. Every guarded chat call comes here first: it makes one call per
    message (a repeated text is a cache hit, which costs none)."""
    if not profile.exact or "messages" not in body or "tools" in body \
            or "functions" in body or "response_format" in body:
        return None
    messages = body["messages"]
    if messages.__class__ is not list:
        return None
    per_message = profile.tokens_per_message
    encoding = profile.encoding
    total = REPLY_PRIMING
    for message in messages:
        if message.__class__ is not dict or len(message) != 2 or "role" not in message \
                or "content" not in message:
            return None
        role, content = message["role"], message["content"]
        if role.__class__ is not str or content.__class__ is not str:
            return None
        total += per_message + count_text(encoding, role) + count_text(encoding, content)
    return total


def count_chat(profile: Profile, body: Mapping[str, Any], tally: Tally) -> None:
    """``POST /v1/chat/completions``."""
    if "messages" in body:
        chat_messages(profile, tally, body["messages"])
    for key in ("tools", "functions"):
        if body.get(key):
            count_tools(profile, tally, body[key])
    if body.get("response_format") is not None:
        _schema(profile, tally, body["response_format"])


def _responses_item(profile: Profile, tally: Tally, item: Any) -> None:
    if isinstance(item, str):
        item = {"role": "user", "content": item}
    if not isinstance(item, Mapping):
        unknown(profile, tally, item)
        return
    kind = item.get("type", "message")
    if kind == "message" or "role" in item:
        profile.overhead(tally, profile.tokens_per_message, note="responses framing",
                         extra=RESPONSES_ITEM_HEADROOM)
        if isinstance(item.get("role"), str):
            profile.text(tally, item["role"])
        _content(profile, tally, item.get("content"))
    elif kind in ("function_call", "custom_tool_call"):
        _tool_call(profile, tally, item.get("name"), item.get("arguments", item.get("input")))
    elif kind in ("function_call_output", "custom_tool_call_output"):
        profile.overhead(tally, TOOL_CALL_FRAMING, note="tool calls", extra=TOOL_CALL_HEADROOM)
        _content(profile, tally, item.get("output"))
    elif kind == "reasoning":
        for part in items(item.get("summary")) or []:
            _content_part(profile, tally, {**part, "type": "text"} if isinstance(part, Mapping)
                          else part)
        if item.get("encrypted_content"):
            tally.uncounted("encrypted reasoning")
    elif kind == "item_reference":
        tally.uncounted("item references")
    else:
        unknown(profile, tally, item)


def count_responses(profile: Profile, body: Mapping[str, Any], tally: Tally) -> None:
    """``POST /v1/responses`` and ``/v1/responses/input_tokens``."""
    instructions = body.get("instructions")
    if instructions is not None:
        _responses_item(profile, tally, {"role": "developer", "content": instructions})
    given = body.get("input")
    if given is not None:
        for item in [given] if isinstance(given, str) else (items(given) or [given]):
            _responses_item(profile, tally, item)
    if body.get("tools"):
        count_tools(profile, tally, body["tools"])
    text = body.get("text")
    if isinstance(text, Mapping) and text.get("format") is not None:
        _schema(profile, tally, text["format"])
    for key, what in (("previous_response_id", "previous response"),
                      ("conversation", "conversation items"), ("prompt", "stored prompt")):
        if body.get(key):
            tally.uncounted(what)
    profile.overhead(tally, REPLY_PRIMING, note="responses framing")


def count_embeddings(profile: Profile, body: Mapping[str, Any], tally: Tally,
                     field: str = "input") -> None:
    """``POST /v1/embeddings`` (``input``) and ``/v1/completions`` (``prompt``): no framing."""
    given = body.get(field)
    if isinstance(given, str):
        profile.text(tally, given)
        return
    entries = items(given)
    if entries is None:
        unknown(profile, tally, given)
        return
    if entries and all(isinstance(x, int) for x in entries):  # one pre-tokenised input
        tally.add(len(entries))
        return
    for entry in entries:
        if isinstance(entry, str):
            profile.text(tally, entry)
        elif (tokens := items(entry)) is not None and all(isinstance(x, int) for x in tokens):
            tally.add(len(tokens))
        else:
            unknown(profile, tally, entry)
