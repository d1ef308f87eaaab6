"""Which tokenizer, framing constants and image rule apply to a model, and how sure that is.

OpenAI models: tiktoken's own model table first (exact); ids it does not know but that belong
to an OpenAI family (``gpt-6.2-sol``, ``codex-mini-latest``…) map to ``o200k_base`` with a small
margin, marked as an assumption. Claude models: no public tokenizer, so ``o200k_base`` counts
are scaled by a per-generation ratio and carry the documented margin (see docs/tokens.md).
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass
from decimal import Decimal
from typing import Literal

from spendguard._core.errors import UnknownModelError
from spendguard._costing.tokens.bpe import ENCODINGS, count_text
from spendguard._costing.tokens.count import Tally
from spendguard._costing.tokens.images import AnthropicImageRule, OpenAIPatchRule, OpenAITileRule

__all__ = ["Family", "Profile", "profile_for", "resolve"]

ImageRule = OpenAITileRule | OpenAIPatchRule | AnthropicImageRule

# An OpenAI id tiktoken does not know is counted with o200k_base (every OpenAI model since
# gpt-4o uses it, and each new OpenAI vocabulary so far was larger, i.e. fewer tokens per text);
# 5 % headroom covers a different framing or a modestly different vocabulary.
FAMILY_MARGIN = Decimal("0.05")
# Claude: central = o200k tokens × ratio; bound = central × 1.35 (docs/tokens.md: Claude 3-4.6
# tokenizers use ~16-30 % more tokens than o200k; Opus 4.7+ a further 1.0-1.47×).
CLAUDE_MARGIN = Decimal("0.35")
CLAUDE_RATIO_OLD = Decimal("1.2")
CLAUDE_RATIO_NEW = Decimal("1.5")
# A model whose tokenizer is unknown (only in count_request_tokens): o200k × 1.25, bound × 2.
FOREIGN_RATIO = Decimal("1.25")
FOREIGN_MARGIN = Decimal("0.6")

_OPENAI_FAMILY = re.compile(r"^(ft:)?(gpt-|chatgpt-|codex-|computer-use-|o\d)")
# claude-3-5-sonnet-… (old style) or claude-opus-4-7-… / claude-sonnet-5 (family first)
_CLAUDE_VERSION = re.compile(
    r"^claude-(?:(\d+)(?:-(\d))?-[a-z]|[a-z]+-(\d+)(?:-(\d{1,2}))?(?:-|$))")
_DEFAULT_IMAGE_RULE = OpenAITileRule(85, 170)


@dataclass(frozen=True)
class Profile:
    """How to count for one model."""

    model: str
    provider: Literal["openai", "anthropic", "foreign"]
    encoding: str  # bundled encoding used (a proxy for Claude and unknown models)
    label: str  # tokenizer named in TokenCount.method; empty for proxies
    exact: bool
    ratio: Decimal = Decimal(1)
    margin: Decimal = Decimal(0)
    image_rule: ImageRule = _DEFAULT_IMAGE_RULE
    tokens_per_message: int = 3  # OpenAI Cookbook "How to count tokens with tiktoken"
    tokens_per_name: int = 1
    func_init: int = 7  # cookbook tool rule: 7 for o200k models, 10 for gpt-4 / gpt-3.5

    def tally(self) -> Tally:
        return Tally(self.label, exact=self.exact)

    def text(self, tally: Tally, text: str, *, extra_margin: Decimal = Decimal(0),
             note: str | None = None) -> None:
        """Add the tokens of ``text``: exact, or scaled and bounded for a proxy.

        ``extra_margin`` marks text whose place in the prompt is a guess (JSON of an
        unrecognised shape, a schema): it is then an estimate even for an exact tokenizer.
        """
        if not text:
            return
        tokens = count_text(self.encoding, text)
        if self.exact and not extra_margin:
            tally.add(tokens)
            return
        # A byte-level BPE never emits more tokens than UTF-8 bytes: a hard ceiling.
        size = len(text) if text.isascii() else len(text.encode("utf-8", "replace"))
        central = min(Decimal(size), tokens * self.ratio)
        bound = min(Decimal(size), tokens * self.ratio * (1 + self.margin + extra_margin))
        tally.add_estimate(central, bound - central, note=note)

    def overhead(self, tally: Tally, tokens: int | Decimal, *, note: str | None = None,
                 extra: int | Decimal = 0) -> None:
        """Add framing tokens (separators, priming, a rule's constants) in the model's tokens.

        Exact only for an exact tokenizer with no ``note`` (a published rule) and no ``extra``
        headroom; otherwise an estimate carrying the profile's margin plus ``extra``.
        """
        if self.exact and note is None and not extra:
            tally.add(int(tokens))
        else:
            tally.add_estimate(tokens, tokens * self.margin + extra, note=note)


def _openai_image_rule(model: str) -> ImageRule:
    name = model.removeprefix("ft:")
    for prefix, multiplier in (("gpt-4.1-mini", 1.62), ("gpt-4.1-nano", 2.46), ("o4-mini", 1.72)):
        if name.startswith(prefix):
            return OpenAIPatchRule(multiplier)
    if re.match(r"gpt-5(\.\d+)?-mini", name):
        return OpenAIPatchRule(1.62)
    if re.match(r"gpt-5(\.\d+)?-nano", name):
        return OpenAIPatchRule(2.46)
    if name.startswith("gpt-4o-mini"):
        return OpenAITileRule(2833, 5667)
    if re.match(r"gpt-\d{2,}|gpt-[5-9]", name):
        return OpenAITileRule(70, 140)
    if re.match(r"o[13](-|$)", name):
        return OpenAITileRule(75, 150)
    if name.startswith("computer-use"):
        return OpenAITileRule(65, 129)
    return OpenAITileRule(85, 170)


def _claude_is_new(model: str) -> bool:
    """True for Opus 4.7 and later (new tokenizer, 2576-px images) and for unknown ids."""
    match = _CLAUDE_VERSION.match(model)
    if match is None:
        return True  # e.g. claude-mythos-preview: assume the newer, larger counts
    major = int(match.group(1) or match.group(3))
    minor = int(match.group(2) or match.group(4) or 0)
    return (major, minor) >= (4, 7)


def _openai(model: str) -> Profile | None:
    import tiktoken.model  # noqa: PLC0415 - a dict look-up, but it imports tiktoken

    try:
        name = tiktoken.model.encoding_name_for_model(model)
    except KeyError:
        name = None
    if name == "o200k_harmony":  # same ranks as o200k_base; only extra special tokens
        name = "o200k_base"
    rule = _openai_image_rule(model)
    if name is not None and name in ENCODINGS:
        legacy = model == "gpt-3.5-turbo-0301"
        return Profile(model, "openai", name, f"tiktoken {name}", exact=True, image_rule=rule,
                       tokens_per_message=4 if legacy else 3, tokens_per_name=-1 if legacy else 1,
                       func_init=10 if name == "cl100k_base" else 7)
    if name is None and _OPENAI_FAMILY.match(model):
        return Profile(model, "openai", "o200k_base", "tiktoken o200k_base (assumed by family)",
                       exact=False, margin=FAMILY_MARGIN, image_rule=rule)
    return None  # an encoding we do not bundle (p50k/r50k) or not an OpenAI id


@functools.lru_cache(maxsize=512)
def profile_for(model: str) -> Profile | None:
    """The counting profile for ``model``, or None if no tokenizer is known for it."""
    if model.startswith("claude-"):
        new = _claude_is_new(model)
        rule = AnthropicImageRule(2576, 4784) if new else AnthropicImageRule(1568, 1600)
        return Profile(model, "anthropic", "o200k_base", "", exact=False,
                       ratio=CLAUDE_RATIO_NEW if new else CLAUDE_RATIO_OLD,
                       margin=CLAUDE_MARGIN, image_rule=rule)
    return _openai(model)


Family = Literal["openai", "anthropic"]
"""The tokenizer families counted offline: OpenAI's BPE files, and Claude's bound on them."""


def foreign_profile(model: str, provider: Family) -> Profile:
    """A loose bound for a model whose tokenizer is unknown (never raises)."""
    if provider == "anthropic":
        claude = profile_for("claude-")
        assert claude is not None
        return claude
    return Profile(model, "foreign", "o200k_base", "", exact=False, ratio=FOREIGN_RATIO,
                   margin=FOREIGN_MARGIN)


def resolve(model: str) -> Profile:
    """The counting profile for ``model``; raises ``UnknownModelError`` if there is none."""
    profile = profile_for(model)
    if profile is None:
        raise UnknownModelError(
            f"no tokenizer known for model {model!r}: spendguard counts OpenAI models "
            "(gpt-*, o*, text-embedding-*, codex-*) with tiktoken and Claude models (claude-*) "
            "with a bounded estimate; for another model, count with an id of the same "
            "tokenizer family (e.g. 'gpt-4o' for an o200k_base model)",
            name=model, kind="tokenizer",
        )
    return profile
