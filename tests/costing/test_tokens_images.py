"""Image and PDF tokens by the providers' published rules."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from spendguard import count_request_tokens, count_tokens
from spendguard._costing.tokens.images import (
    AnthropicImageRule,
    OpenAIPatchRule,
    OpenAITileRule,
    image_size,
    image_size_from_base64,
)
from tests.tokens_helpers import b64, data_url, gif, jpeg, pdf, png, webp_lossless

GPT_4O = OpenAITileRule(85, 170)


@pytest.mark.parametrize("make", [png, jpeg, gif, webp_lossless])
def test_image_size_reads_each_format(make: object) -> None:
    assert callable(make)
    assert image_size(make(1234, 567)) == (1234, 567)


def test_image_size_of_a_jpeg_behind_a_large_exif_block() -> None:
    assert image_size_from_base64(b64(jpeg(800, 600, exif_bytes=60_000))) == (800, 600)


def test_image_size_of_garbage_is_none() -> None:
    assert image_size(b"not an image") is None
    assert image_size_from_base64("%%%not base64%%%") is None


@pytest.mark.parametrize(("width", "height", "detail", "tokens"), [
    (1024, 1024, "high", 765),   # OpenAI vision guide examples
    (2048, 4096, "high", 1105),
    (4096, 8192, "low", 85),
    (512, 512, "auto", 255),
    (768, 2048, "high", 1445),   # the most tiles an image can have: 2 × 4
])
def test_openai_tile_rule_matches_the_published_examples(width: int, height: int, detail: str,
                                                         tokens: int) -> None:
    assert GPT_4O.tokens(width, height, detail) == tokens


@given(st.integers(1, 20_000), st.integers(1, 20_000))
def test_openai_tile_rule_never_exceeds_its_maximum(width: int, height: int) -> None:
    assert GPT_4O.tokens(width, height) <= GPT_4O.max_tokens()


def test_openai_patch_rule_caps_at_1536_patches() -> None:
    rule = OpenAIPatchRule(1.62)
    assert rule.tokens(1024, 1024) == 1659  # 1024 patches × 1.62, rounded up
    assert rule.tokens(8000, 8000) == rule.max_tokens() == 2489


@pytest.mark.parametrize(("width", "height", "tokens"), [
    (200, 200, 64),     # ~54 by w×h/750; 28-px patches: 8 × 8
    (1000, 1000, 1334),  # Anthropic vision guide: ~1334
    (1092, 1092, 1590),  # Anthropic vision guide: ~1590
])
def test_anthropic_rule_follows_pixels_over_750(width: int, height: int, tokens: int) -> None:
    assert AnthropicImageRule(1568, 1600).tokens(width, height) == tokens


@given(st.integers(1, 8000), st.integers(1, 8000))
def test_anthropic_rule_caps_each_generation(width: int, height: int) -> None:
    assert AnthropicImageRule(1568, 1600).tokens(width, height) <= 1600
    assert AnthropicImageRule(2576, 4784).tokens(width, height) <= 4784


def test_chat_image_of_known_size_is_counted_by_the_tile_rule() -> None:
    text_only = count_tokens("gpt-4o", messages=[{"role": "user", "content": [
        {"type": "text", "text": "What is this?"}]}])
    with_image = count_tokens("gpt-4o", messages=[{"role": "user", "content": [
        {"type": "text", "text": "What is this?"},
        {"type": "image_url", "image_url": {"url": data_url(png(1024, 1024)), "detail": "high"}},
    ]}])
    # +765 for the image, +1 of headroom for the boundary between the two parts
    assert int(with_image) == int(text_only) + 765 + 1
    assert not with_image.exact
    assert "image rule" in with_image.method


def test_low_detail_image_costs_the_base_tokens() -> None:
    one = count_tokens("gpt-4o", messages=[{"role": "user", "content": [
        {"type": "image_url", "image_url": {"url": data_url(png(4000, 3000)), "detail": "low"}}]}])
    assert one.expected == 3 + 1 + 85 + 3  # message, role "user", image, reply priming


def test_image_by_url_is_bounded_by_the_largest_image() -> None:
    count = count_tokens("gpt-4o", messages=[{"role": "user", "content": [
        {"type": "image_url", "image_url": {"url": "https://example.com/cat.jpg"}}]}])
    assert int(count) == 3 + 1 + 1445 + 3
    assert count.expected < int(count)


def test_anthropic_image_block_uses_the_pixels_rule() -> None:
    body = {"model": "claude-sonnet-4-5", "max_tokens": 10, "messages": [
        {"role": "user", "content": [{"type": "image", "source": {
            "type": "base64", "media_type": "image/png", "data": b64(png(1000, 1000))}}]}]}
    count = count_request_tokens("anthropic", "/v1/messages", body)
    assert count.expected >= 1334
    assert int(count) >= 1334 * 1.35


def test_pdf_document_is_estimated_per_page() -> None:
    def body(pages: int) -> dict[str, object]:
        return {"model": "claude-opus-4-7", "max_tokens": 10, "messages": [
            {"role": "user", "content": [{"type": "document", "source": {
                "type": "base64", "media_type": "application/pdf", "data": b64(pdf(pages))}}]}]}
    one = count_request_tokens("anthropic", "/v1/messages", body(1))
    three = count_request_tokens("anthropic", "/v1/messages", body(3))
    assert int(three) - int(one) > 2 * 3000  # at least the documented text tokens a page
    assert "PDF pages" in three.method


def test_file_by_id_is_reported_as_not_counted() -> None:
    count = count_request_tokens("openai", "/v1/responses", {"model": "gpt-4.1", "input": [
        {"role": "user", "content": [{"type": "input_file", "file_id": "file-abc"}]}]})
    assert not count.exact
    assert "not counted: files by reference" in count.method
