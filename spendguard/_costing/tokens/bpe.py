"""The bundled tiktoken encodings: verified on load, built without network or cache writes.

tiktoken downloads its BPE files on first use and fails offline. spendguard ships OpenAI's two
current encodings as package data (``data/*.tiktoken.gz``, provenance in ``data/SOURCE.md``),
checks each file's decompressed SHA-256 against the hash tiktoken itself expects, and builds a
``tiktoken.Encoding`` straight from those bytes. Nothing touches the environment or tiktoken's
cache directory. tiktoken is imported on the first load, never when spendguard is imported.
"""

from __future__ import annotations

import base64
import binascii
import functools
import gzip
import hashlib
import threading
import zlib
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from spendguard._core.errors import TokenizerError

__all__ = ["DATA_DIR", "ENCODINGS", "EncodingSpec", "count_text", "encoding", "load_encoding"]

DATA_DIR = Path(__file__).with_name("data")

# Count cache size (distinct strings). A planner counting 100k requests that share a system
# prompt or document encodes it once; the bound keeps memory in check for unique texts.
TEXT_CACHE_SIZE = 8192


@dataclass(frozen=True)
class EncodingSpec:
    """How to build one encoding: its file, the hash tiktoken expects, its split pattern."""

    name: str
    filename: str
    sha256: str  # of the decompressed bytes; equals tiktoken_ext.openai_public's expected_hash
    n_ranks: int
    pat_str: str
    special_tokens: dict[str, int]


# pat_str and special tokens copied from tiktoken 0.14.0 tiktoken_ext/openai_public.py; a test
# pins them against tiktoken's own constructors so a drift cannot go unnoticed.
_O200K_PAT = "|".join(
    [
        r"""[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+(?i:'s|'t|'re|'ve|'m|'ll|'d)?""",
        r"""[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*(?i:'s|'t|'re|'ve|'m|'ll|'d)?""",
        r"""\p{N}{1,3}""",
        r""" ?[^\s\p{L}\p{N}]+[\r\n/]*""",
        r"""\s*[\r\n]+""",
        r"""\s+(?!\S)""",
        r"""\s+""",
    ]
)
_CL100K_PAT = (
    r"""'(?i:[sdmt]|ll|ve|re)|[^\r\n\p{L}\p{N}]?+\p{L}++|\p{N}{1,3}+| ?[^\s\p{L}\p{N}]++[\r\n]*+|"""
    r"""\s++$|\s*[\r\n]|\s+(?!\S)|\s"""
)

ENCODINGS: dict[str, EncodingSpec] = {
    "cl100k_base": EncodingSpec(
        name="cl100k_base",
        filename="cl100k_base.tiktoken.gz",
        sha256="223921b76ee99bde995b7ff738513eef100fb51d18c93597a113bcffe865b2a7",
        n_ranks=100256,
        pat_str=_CL100K_PAT,
        special_tokens={
            "<|endoftext|>": 100257,
            "<|fim_prefix|>": 100258,
            "<|fim_middle|>": 100259,
            "<|fim_suffix|>": 100260,
            "<|endofprompt|>": 100276,
        },
    ),
    "o200k_base": EncodingSpec(
        name="o200k_base",
        filename="o200k_base.tiktoken.gz",
        sha256="446a9538cb6c348e3516120d7c08b09f57c36495e2acfffe59a5bf8b0cfb1a2d",
        n_ranks=199998,
        pat_str=_O200K_PAT,
        special_tokens={"<|endoftext|>": 199999, "<|endofprompt|>": 200018},
    ),
}

_lock = threading.Lock()
_loaded: dict[str, Any] = {}


def read_ranks(spec: EncodingSpec, data_dir: Path = DATA_DIR) -> dict[bytes, int]:
    """Read, verify and parse one bundled BPE file into tiktoken's ``mergeable_ranks``."""
    path = data_dir / spec.filename
    try:
        raw = gzip.decompress(path.read_bytes())
    except OSError as exc:  # missing file, unreadable, or not gzip (BadGzipFile is an OSError)
        raise TokenizerError(
            f"cannot read the bundled tokenizer file {path}: {exc}; reinstall spendguard-llm "
            "(the file ships in the wheel under spendguard/_costing/tokens/data/)"
        ) from exc
    except (EOFError, zlib.error) as exc:
        raise TokenizerError(f"the bundled tokenizer file {path} is truncated or corrupt: "
                             f"{exc}; reinstall spendguard-llm") from exc
    digest = hashlib.sha256(raw).hexdigest()
    if digest != spec.sha256:
        raise TokenizerError(
            f"the bundled tokenizer file {path} is corrupt: sha256 of its contents is {digest}, "
            f"expected {spec.sha256} (tiktoken's hash for {spec.name}); reinstall spendguard-llm"
        )
    try:
        ranks = {base64.b64decode(token, validate=True): int(rank)
                 for token, rank in (line.split() for line in raw.splitlines() if line)}
    except (ValueError, binascii.Error) as exc:  # unreachable once the hash matched
        raise TokenizerError(f"cannot parse the tokenizer file {path}: {exc}") from exc
    if len(ranks) != spec.n_ranks:
        raise TokenizerError(f"{path} holds {len(ranks)} tokens, expected {spec.n_ranks}")
    return ranks


def load_encoding(name: str, data_dir: Path = DATA_DIR) -> Any:
    """Build a fresh ``tiktoken.Encoding`` for ``name`` from the bundled, verified bytes."""
    spec = ENCODINGS.get(name)
    if spec is None:
        raise TokenizerError(
            f"encoding {name!r} is not bundled with spendguard (bundled: "
            f"{', '.join(sorted(ENCODINGS))}); count with a model that uses one of these"
        )
    ranks = read_ranks(spec, data_dir)
    import tiktoken  # noqa: PLC0415 - heavy; loaded on the first count only

    try:
        return tiktoken.Encoding(spec.name, pat_str=spec.pat_str, mergeable_ranks=ranks,
                                 special_tokens=dict(spec.special_tokens))
    except ValueError as exc:
        raise TokenizerError(f"tiktoken rejected the bundled {name} data: {exc}") from exc


def encoding(name: str) -> Any:
    """The process-wide ``tiktoken.Encoding`` for ``name``: loaded once, thread-safe."""
    enc = _loaded.get(name)
    if enc is None:
        with _lock:  # two threads counting at start-up must not parse 3.6 MB twice
            enc = _loaded.get(name)
            if enc is None:
                enc = _loaded[name] = load_encoding(name)
    return enc


@functools.lru_cache(maxsize=TEXT_CACHE_SIZE)
def count_text(name: str, text: str) -> int:
    """Tokens in ``text`` under encoding ``name`` (special-token text counts as plain text).

    Repeated strings are counted once (an LRU of ``TEXT_CACHE_SIZE`` entries): the cache is
    the function itself, so a repeat (a role, a shared system prompt) costs no Python call.
    """
    if not text:
        return 0
    return len(encoding(name).encode_ordinary(text))

