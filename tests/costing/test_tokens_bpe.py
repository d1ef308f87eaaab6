"""The bundled BPE files: identical to tiktoken's own encodings, verified, offline, lazy."""

from __future__ import annotations

import gzip
import hashlib
import os
import shutil
import socket
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

import pytest

from spendguard import TokenizerError, count_tokens
from spendguard._costing.tokens import bpe
from tests.paths import REPO

URLS = {
    "cl100k_base": "https://openaipublic.blob.core.windows.net/encodings/cl100k_base.tiktoken",
    "o200k_base": "https://openaipublic.blob.core.windows.net/encodings/o200k_base.tiktoken",
}

CORPUS = [
    "hello world",
    "The quick brown fox jumps over the lazy dog. It's 12:45 — isn't it?",
    "def f(x):\n\treturn {'a': [1, 2, 3], \"b\": None}  # comment\r\n",
    "日本語、中文、한국어, Ελληνικά, русский, العربية, हिन्दी",
    "emoji 🎉🚀👩‍💻 and combining e\u0301 a\u0308",
    "   leading and trailing spaces   \n\n\n\t\t",
    "1234567890 3.14159 -42 1e10 0xFF",
    "<|endoftext|> special-token text is plain text here <|endofprompt|>",
    "HTTPServerError CamelCaseIdentifiers snake_case_names SCREAMING_CASE",
    "a" * 500,
    "",
]


def _block_network(monkeypatch: pytest.MonkeyPatch) -> None:
    def refuse(*args: Any, **kwargs: Any) -> Any:
        raise AssertionError(f"network access attempted: {args!r}")

    monkeypatch.setattr(socket, "create_connection", refuse)
    monkeypatch.setattr(socket, "getaddrinfo", refuse)
    monkeypatch.setattr(socket.socket, "connect", refuse)


@pytest.mark.parametrize("name", sorted(bpe.ENCODINGS))
def test_bundled_encoding_is_identical_to_tiktokens_own(name: str, tmp_path: Path,
                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    """Seed a private tiktoken cache with our verified bytes, then compare with tiktoken's
    constructor: same ranks, same split pattern, same special tokens, same encodings."""
    import tiktoken
    from tiktoken_ext import openai_public  # type: ignore[import-untyped]

    spec = bpe.ENCODINGS[name]
    raw = gzip.decompress((bpe.DATA_DIR / spec.filename).read_bytes())
    (tmp_path / hashlib.sha1(URLS[name].encode()).hexdigest()).write_bytes(raw)
    monkeypatch.setenv("TIKTOKEN_CACHE_DIR", str(tmp_path))
    _block_network(monkeypatch)

    reference = getattr(openai_public, name)()
    assert reference["pat_str"] == spec.pat_str
    assert reference["special_tokens"] == spec.special_tokens
    assert reference["mergeable_ranks"] == bpe.read_ranks(spec)

    theirs = tiktoken.Encoding(**reference)
    ours = bpe.encoding(name)
    assert ours.n_vocab == theirs.n_vocab
    for text in CORPUS:
        assert ours.encode_ordinary(text) == theirs.encode_ordinary(text), text
        assert ours.encode(text, disallowed_special=()) == theirs.encode(
            text, disallowed_special=()), text


def test_counting_never_touches_the_network(monkeypatch: pytest.MonkeyPatch) -> None:
    _block_network(monkeypatch)
    monkeypatch.setattr(bpe, "_loaded", {})  # force a fresh load from the package data
    bpe.count_text.cache_clear()
    environ = dict(os.environ)
    assert count_tokens("gpt-4o", text="hello world") == 2
    assert count_tokens("gpt-4", text="hello world") == 2
    assert count_tokens("text-embedding-3-small", text="hello world") == 2
    assert dict(os.environ) == environ  # no TIKTOKEN_CACHE_DIR games


@pytest.mark.parametrize("damage", ["flipped byte", "truncated", "wrong content", "missing"])
def test_corrupt_data_file_raises_tokenizer_error(damage: str, tmp_path: Path) -> None:
    spec = bpe.ENCODINGS["cl100k_base"]
    shutil.copy(bpe.DATA_DIR / spec.filename, tmp_path / spec.filename)
    target = tmp_path / spec.filename
    data = target.read_bytes()
    if damage == "flipped byte":
        middle = len(data) // 2
        target.write_bytes(data[:middle] + bytes([data[middle] ^ 0xFF]) + data[middle + 1:])
    elif damage == "truncated":
        target.write_bytes(data[: len(data) // 3])
    elif damage == "wrong content":
        target.write_bytes(gzip.compress(gzip.decompress(data).replace(b" 0\n", b" 1\n", 1)))
    else:
        target.unlink()
    with pytest.raises(TokenizerError, match=r"reinstall spendguard-llm|corrupt"):
        bpe.load_encoding("cl100k_base", data_dir=tmp_path)


def test_encoding_not_bundled_raises_tokenizer_error() -> None:
    with pytest.raises(TokenizerError, match="not bundled"):
        bpe.load_encoding("p50k_base")


def test_first_load_is_shared_by_concurrent_threads(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(bpe, "_loaded", {})
    calls: list[str] = []
    real = bpe.load_encoding

    def counting(name: str, data_dir: Path = bpe.DATA_DIR) -> Any:
        calls.append(name)
        return real(name, data_dir)

    monkeypatch.setattr(bpe, "load_encoding", counting)
    start = threading.Barrier(8)
    results: list[Any] = []

    def worker() -> None:
        start.wait()
        results.append(bpe.encoding("cl100k_base"))

    threads = [threading.Thread(target=worker) for _ in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert calls == ["cl100k_base"]
    assert len({id(r) for r in results}) == 1


def test_importing_spendguard_does_not_import_tiktoken() -> None:
    code = ("import sys, spendguard, spendguard._costing.tokens\n"
            "assert 'tiktoken' not in sys.modules, 'tiktoken imported too early'\n"
            "assert spendguard.count_tokens('gpt-4o', text='hello world') == 2\n"
            "assert 'tiktoken' in sys.modules\n")
    root = REPO
    env = {**os.environ, "PYTHONPATH": str(root)}
    subprocess.run([sys.executable, "-c", code], check=True, cwd=root, env=env, timeout=60)


def test_repeated_strings_are_encoded_once() -> None:
    shared = "A long shared system prompt. " * 200
    bpe.count_text("o200k_base", shared)
    before = bpe.count_text.cache_info()
    for _ in range(100):
        bpe.count_text("o200k_base", shared)
    after = bpe.count_text.cache_info()
    assert after.misses == before.misses
    assert after.hits == before.hits + 100
