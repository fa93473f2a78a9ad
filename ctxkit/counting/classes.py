r"""The pre-tokenizer's patterns with their classes written out, so the standard `re` can split text.

Input: a tiktoken pattern written with `\p{..}` classes and `\s` (which only the `regex`
module reads). Output: `explicit(pattern)`, the same pattern with every class spelled out as
the code point ranges it has in `bpe.VERIFIED` (less BIG), each class positive: on a text
within them `re` splits as `regex` does (`_TABLE` is what `regex` answers for every verified
code point; a test recomputes it and the patterns), and a character outside them matches no
class, so the pieces found fall short of the text. `re` runs them about 2.5 times as fast
(557,000 characters of a 20,000-message history), and no start imports `regex` (~10 ms).

The patterns of the known encodings are stored written out (`written.py`): working them out
costs up to 3 ms a start. After changing `bpe.VERIFIED` or BIG, regenerate `_TABLE` with
`python -m ctxkit.counting.classes table` and then `written.py` with
`python -m ctxkit.counting.classes written > ctxkit/counting/written.py` (they need `regex`).
"""

from __future__ import annotations

import functools

_TABLE = {  # class -> its ranges in hex, `lo-hi` or one code point, separated by spaces
    "L": (
        "41-5a 61-7a aa b5 ba c0-d6 d8-f6 f8-2c1 2c6-2d1 2e0-2e4 2ec 2ee 370-374 376-377 37a-37d 37f 386 388-38a 38c "
        "38e-3a1 3a3-3f5 3f7-481 48a-52f 531-556 558-559 560-588 58b-58c 5d0-5ea 5ef-5f2 620-64a 66e-66f 671-6d3 6d5 "
        "6e5-6e6 6ee-6ef 6fa-6fc 6ff 710 712-72f 74d-7a5 7b1 7ca-7ea 7f4-7f5 7fa 1e00-1eff 2071 207f 208f-209f 2102 "
        "2107 210a-2113 2115 2119-211d 2124 2126 2128 212a-212d 212f-2139 213c-213f 2145-2149 214e 2183-2184 "
        "3005-3006 3031-3035 303b-303c 3041-3096 309d-309f 30a1-30fa 30fc-30ff 3105-312f 3131-318e 31a0-31bf "
        "31f0-31ff 3400-4dbf 4e00-9ffc ac00-d7a3 ff21-ff3a ff41-ff5a ff66-ffbe ffc2-ffc7 ffca-ffcf ffd2-ffd7 "
        "ffda-ffdc"
    ),
    "N": (
        "30-39 b2-b3 b9 bc-be 660-669 6f0-6f9 7c0-7c9 2070 2074-2079 2080-2089 2150-2182 2185-2189 2460-249b "
        "24ea-24ff 2776-2793 3007 3021-3029 3038-303a 3192-3195 3220-3229 3248-324f 3251-325f 3280-3289 32b1-32bf "
        "ff10-ff19 1f100-1f10c"
    ),
    "Lu": (
        "41-5a c0-d6 d8-de 100 102 104 106 108 10a 10c 10e 110 112 114 116 118 11a 11c 11e 120 122 124 126 128 12a "
        "12c 12e 130 132 134 136 139 13b 13d 13f 141 143 145 147 14a 14c 14e 150 152 154 156 158 15a 15c 15e 160 162 "
        "164 166 168 16a 16c 16e 170 172 174 176 178-179 17b 17d 181-182 184 186-187 189-18b 18e-191 193-194 196-198 "
        "19c-19d 19f-1a0 1a2 1a4 1a6-1a7 1a9 1ac 1ae-1af 1b1-1b3 1b5 1b7-1b8 1bc 1c4 1c7 1ca 1cd 1cf 1d1 1d3 1d5 1d7 "
        "1d9 1db 1de 1e0 1e2 1e4 1e6 1e8 1ea 1ec 1ee 1f1 1f4 1f6-1f8 1fa 1fc 1fe 200 202 204 206 208 20a 20c 20e 210 "
        "212 214 216 218 21a 21c 21e 220 222 224 226 228 22a 22c 22e 230 232 23a-23b 23d-23e 241 243-246 248 24a 24c "
        "24e 370 372 376 37f 386 388-38a 38c 38e-38f 391-3a1 3a3-3ab 3cf 3d2-3d4 3d8 3da 3dc 3de 3e0 3e2 3e4 3e6 3e8 "
        "3ea 3ec 3ee 3f4 3f7 3f9-3fa 3fd-42f 460 462 464 466 468 46a 46c 46e 470 472 474 476 478 47a 47c 47e 480 48a "
        "48c 48e 490 492 494 496 498 49a 49c 49e 4a0 4a2 4a4 4a6 4a8 4aa 4ac 4ae 4b0 4b2 4b4 4b6 4b8 4ba 4bc 4be "
        "4c0-4c1 4c3 4c5 4c7 4c9 4cb 4cd 4d0 4d2 4d4 4d6 4d8 4da 4dc 4de 4e0 4e2 4e4 4e6 4e8 4ea 4ec 4ee 4f0 4f2 4f4 "
        "4f6 4f8 4fa 4fc 4fe 500 502 504 506 508 50a 50c 50e 510 512 514 516 518 51a 51c 51e 520 522 524 526 528 52a "
        "52c 52e 531-556 1e00 1e02 1e04 1e06 1e08 1e0a 1e0c 1e0e 1e10 1e12 1e14 1e16 1e18 1e1a 1e1c 1e1e 1e20 1e22 "
        "1e24 1e26 1e28 1e2a 1e2c 1e2e 1e30 1e32 1e34 1e36 1e38 1e3a 1e3c 1e3e 1e40 1e42 1e44 1e46 1e48 1e4a 1e4c "
        "1e4e 1e50 1e52 1e54 1e56 1e58 1e5a 1e5c 1e5e 1e60 1e62 1e64 1e66 1e68 1e6a 1e6c 1e6e 1e70 1e72 1e74 1e76 "
        "1e78 1e7a 1e7c 1e7e 1e80 1e82 1e84 1e86 1e88 1e8a 1e8c 1e8e 1e90 1e92 1e94 1e9e 1ea0 1ea2 1ea4 1ea6 1ea8 "
        "1eaa 1eac 1eae 1eb0 1eb2 1eb4 1eb6 1eb8 1eba 1ebc 1ebe 1ec0 1ec2 1ec4 1ec6 1ec8 1eca 1ecc 1ece 1ed0 1ed2 "
        "1ed4 1ed6 1ed8 1eda 1edc 1ede 1ee0 1ee2 1ee4 1ee6 1ee8 1eea 1eec 1eee 1ef0 1ef2 1ef4 1ef6 1ef8 1efa 1efc "
        "1efe 2102 2107 210b-210d 2110-2112 2115 2119-211d 2124 2126 2128 212a-212d 2130-2133 213e-213f 2145 2183 "
        "ff21-ff3a"
    ),
    "Ll": (
        "61-7a b5 df-f6 f8-ff 101 103 105 107 109 10b 10d 10f 111 113 115 117 119 11b 11d 11f 121 123 125 127 129 12b "
        "12d 12f 131 133 135 137-138 13a 13c 13e 140 142 144 146 148-149 14b 14d 14f 151 153 155 157 159 15b 15d 15f "
        "161 163 165 167 169 16b 16d 16f 171 173 175 177 17a 17c 17e-180 183 185 188 18c-18d 192 195 199-19b 19e 1a1 "
        "1a3 1a5 1a8 1aa-1ab 1ad 1b0 1b4 1b6 1b9-1ba 1bd-1bf 1c6 1c9 1cc 1ce 1d0 1d2 1d4 1d6 1d8 1da 1dc-1dd 1df 1e1 "
        "1e3 1e5 1e7 1e9 1eb 1ed 1ef-1f0 1f3 1f5 1f9 1fb 1fd 1ff 201 203 205 207 209 20b 20d 20f 211 213 215 217 219 "
        "21b 21d 21f 221 223 225 227 229 22b 22d 22f 231 233-239 23c 23f-240 242 247 249 24b 24d 24f-293 296-2af 371 "
        "373 377 37b-37d 390 3ac-3ce 3d0-3d1 3d5-3d7 3d9 3db 3dd 3df 3e1 3e3 3e5 3e7 3e9 3eb 3ed 3ef-3f3 3f5 3f8 "
        "3fb-3fc 430-45f 461 463 465 467 469 46b 46d 46f 471 473 475 477 479 47b 47d 47f 481 48b 48d 48f 491 493 495 "
        "497 499 49b 49d 49f 4a1 4a3 4a5 4a7 4a9 4ab 4ad 4af 4b1 4b3 4b5 4b7 4b9 4bb 4bd 4bf 4c2 4c4 4c6 4c8 4ca 4cc "
        "4ce-4cf 4d1 4d3 4d5 4d7 4d9 4db 4dd 4df 4e1 4e3 4e5 4e7 4e9 4eb 4ed 4ef 4f1 4f3 4f5 4f7 4f9 4fb 4fd 4ff 501 "
        "503 505 507 509 50b 50d 50f 511 513 515 517 519 51b 51d 51f 521 523 525 527 529 52b 52d 52f 560-588 1e01 "
        "1e03 1e05 1e07 1e09 1e0b 1e0d 1e0f 1e11 1e13 1e15 1e17 1e19 1e1b 1e1d 1e1f 1e21 1e23 1e25 1e27 1e29 1e2b "
        "1e2d 1e2f 1e31 1e33 1e35 1e37 1e39 1e3b 1e3d 1e3f 1e41 1e43 1e45 1e47 1e49 1e4b 1e4d 1e4f 1e51 1e53 1e55 "
        "1e57 1e59 1e5b 1e5d 1e5f 1e61 1e63 1e65 1e67 1e69 1e6b 1e6d 1e6f 1e71 1e73 1e75 1e77 1e79 1e7b 1e7d 1e7f "
        "1e81 1e83 1e85 1e87 1e89 1e8b 1e8d 1e8f 1e91 1e93 1e95-1e9d 1e9f 1ea1 1ea3 1ea5 1ea7 1ea9 1eab 1ead 1eaf "
        "1eb1 1eb3 1eb5 1eb7 1eb9 1ebb 1ebd 1ebf 1ec1 1ec3 1ec5 1ec7 1ec9 1ecb 1ecd 1ecf 1ed1 1ed3 1ed5 1ed7 1ed9 "
        "1edb 1edd 1edf 1ee1 1ee3 1ee5 1ee7 1ee9 1eeb 1eed 1eef 1ef1 1ef3 1ef5 1ef7 1ef9 1efb 1efd 1eff 210a "
        "210e-210f 2113 212f 2134 2139 213c-213d 2146-2149 214e 2184 ff41-ff5a"
    ),
    "Lt": ("1c5 1c8 1cb 1f2"),
    "Lm": (
        "2b0-2c1 2c6-2d1 2e0-2e4 2ec 2ee 374 37a 558-559 58b-58c 640 6e5-6e6 7f4-7f5 7fa 2071 207f 208f-209f 3005 "
        "3031-3035 303b 309d-309e 30fc-30fe ff70 ff9e-ff9f"
    ),
    "Lo": (
        "aa ba 1bb 1c0-1c3 294-295 5d0-5ea 5ef-5f2 620-63f 641-64a 66e-66f 671-6d3 6d5 6ee-6ef 6fa-6fc 6ff 710 "
        "712-72f 74d-7a5 7b1 7ca-7ea 2135-2138 3006 303c 3041-3096 309f 30a1-30fa 30ff 3105-312f 3131-318e 31a0-31bf "
        "31f0-31ff 3400-4dbf 4e00-9ffc ac00-d7a3 ff66-ff6f ff71-ff9d ffa0-ffbe ffc2-ffc7 ffca-ffcf ffd2-ffd7 "
        "ffda-ffdc"
    ),
    "M": (
        "300-36f 483-489 591-5bd 5bf 5c1-5c2 5c4-5c5 5c7-5c9 610-61a 64b-65f 670 6d6-6dc 6df-6e4 6e7-6e8 6ea-6ed 711 "
        "730-74a 7a6-7b0 7eb-7f3 7fd 20d0-20f0 302a-302f 3099-309a"
    ),
    "s": ("9-d 20 85 a0 2000-200a 2028-2029 202f 205f 3000"),
}


Ranges = list[tuple[int, int]]


def _class(name: str) -> Ranges:
    found: Ranges = []
    for item in _TABLE[name].split():
        lo, _, hi = item.partition("-")
        found.append((int(lo, 16), int(hi or lo, 16)))
    return found


def _merged(ranges: Ranges) -> Ranges:
    out: Ranges = []
    for lo, hi in sorted(ranges):
        if out and lo <= out[-1][1] + 1:
            out[-1] = (out[-1][0], max(hi, out[-1][1]))
        else:
            out.append((lo, hi))
    return out


def _minus(universe: Ranges, taken: Ranges) -> Ranges:
    """The code points of `universe` not in `taken` (both merged)."""
    out: Ranges = []
    for lo, hi in universe:
        for t_lo, t_hi in taken:
            if t_hi < lo or t_lo > hi:
                continue
            if t_lo > lo:
                out.append((lo, t_lo - 1))
            lo = t_hi + 1
            if lo > hi:
                break
        if lo <= hi:
            out.append((lo, hi))
    return out


def _text(ranges: Ranges) -> str:
    return "".join(_char(lo) if lo == hi else f"{_char(lo)}-{_char(hi)}" for lo, hi in ranges)


def _char(code: int) -> str:
    """The character itself (parsed faster than an escape), escaped where a class needs it."""
    char = chr(code)
    return f"\\x{code:02x}" if char in "\\]^-[" or code < 0x20 or 0x7F <= code <= 0x9F else char


def _items(body: str) -> tuple[bool, Ranges]:
    """A class body of the patterns (`^`, `\\p{X}`, `\\s`, `\\r`, `\\n`, plain characters) as ranges."""
    negated = body.startswith("^")
    found: Ranges = []
    i = 1 if negated else 0
    while i < len(body):
        if body[i] != "\\":
            found.append((ord(body[i]), ord(body[i])))
            i += 1
        elif body[i + 1] == "p":
            end = body.index("}", i)
            found += _class(body[i + 3 : end])
            i = end + 1
        elif body[i + 1] == "s":
            found += _class("s")
            i += 2
        elif body[i + 1] in "rn":
            code = 13 if body[i + 1] == "r" else 10
            found.append((code, code))
            i += 2
        else:
            raise ValueError(f"unexpected escape in a class: {body[i : i + 2]}")
    return negated, _merged(found)


_STANDALONE = {"\\p": None, "\\s": "\\s", "\\S": "^\\s"}


# Blocks of letters only (CJK ideographs, Hangul syllables): about 39,000 code points that
# every class treats alike, left out of the written classes (`re` marks each code point a
# class names, one by one, when it compiles it: ~40 ms for the two patterns). A text that has
# them is split with each of them replaced by STAND_IN, a letter of the same classes.
BIG = ((0x3400, 0x4DBF), (0x4E00, 0x9FFC), (0xAC00, 0xD7A3))
STAND_IN = "\u05d0"  # HEBREW LETTER ALEF: L and Lo, like them (a test checks every class)


def big_class() -> str:
    return f"[{_text(list(BIG))}]"


def explicit(pattern: str) -> str:
    """`pattern` for `re`: stored for the known encodings, else worked out."""
    from ctxkit.counting.tokens import _SPECS
    from ctxkit.counting.written import PATTERNS

    for name, spec in _SPECS.items():
        if spec.pat_str == pattern and name in PATTERNS:
            return PATTERNS[name]
    return written_out(pattern)


@functools.cache
def written_out(pattern: str) -> str:
    """`pattern` with its classes (`[...]`, `\\p{X}`, `\\s`, `\\S`) written as code point ranges.

    Only the verified blocks without BIG, and every class positive (a negated one is written
    as the rest of those code points): a character outside them matches nothing, so the
    pieces found do not cover the text, which tells that this pattern cannot split it.
    """
    from ctxkit.counting.bpe import VERIFIED

    universe = _minus(_merged(list(VERIFIED)), list(BIG))
    out: list[str] = []
    i = 0
    while i < len(pattern):
        c = pattern[i]
        if c == "[" and "\\" in pattern[i : (end := pattern.index("]", i))].replace("\\r", "").replace("\\n", ""):
            body, i = pattern[i + 1 : end], end + 1  # the patterns hold no `]` inside a class
        elif c == "\\" and pattern[i : i + 2] in _STANDALONE:
            if pattern[i + 1] == "p":
                end = pattern.index("}", i)
                body, i = pattern[i : end + 1], end + 1
            else:
                body, i = str(_STANDALONE[pattern[i : i + 2]]), i + 2
        else:
            step = 2 if c == "\\" else 1
            out.append(pattern[i : i + step])
            i += step
            continue
        negated, ranges = _items(body)
        out.append(f"[{_text(_minus(universe, ranges) if negated else _minus(universe, _minus(universe, ranges)))}]")
    return "".join(out)


def computed() -> dict[str, str]:
    """The table as `regex` answers it on the verified blocks (for the test, and to regenerate it)."""
    import regex  # type: ignore[import-untyped]

    from ctxkit.counting.bpe import VERIFIED

    table = {}
    for name in _TABLE:
        match = regex.compile("\\s" if name == "s" else f"\\p{{{name}}}").fullmatch
        found: list[list[int]] = []
        for lo, hi in VERIFIED:
            for code in range(lo, hi + 1):
                if match(chr(code)):
                    if found and found[-1][1] == code - 1:
                        found[-1][1] = code
                    else:
                        found.append([code, code])
        table[name] = " ".join(f"{a:x}" if a == b else f"{a:x}-{b:x}" for a, b in found)
    return table


def stored() -> dict[str, str]:
    """The table as stored here, in `computed`'s form."""
    return {name: " ".join(ranges.split()) for name, ranges in _TABLE.items()}


def _table_source(table: dict[str, str], width: int = 108) -> str:
    """`_TABLE` as Python source."""
    lines = ["_TABLE = {  # class -> its ranges in hex, `lo-hi` or one code point, separated by spaces"]
    for name, ranges in table.items():
        rows, row = [], ""
        for item in ranges.split():
            if row and len(row) + len(item) + 1 > width:
                rows.append(row + " ")
                row = ""
            row = f"{row} {item}" if row else item
        lines += [f'    "{name}": (', *(f'        "{r}"' for r in [*rows, row]), "    ),"]
    return "\n".join([*lines, "}"])


def _written_source(width: int = 108) -> str:
    """`written.py`: the known encodings' patterns as `written_out` makes them, in ASCII."""
    from ctxkit.counting.tokens import _SPECS

    lines = [
        '"""The known encodings\' pre-tokenizer patterns with their classes written out (made by',
        "`python -m ctxkit.counting.classes written`; a test checks them against `classes.written_out`).",
        '"""',
        "",
        "PATTERNS = {",
    ]
    for name, spec in _SPECS.items():
        rows, row = [], ""
        for char in written_out(spec.pat_str):
            code = ord(char)
            escaped = (
                "\\" + char
                if char in '"\\'
                else char
                if 0x20 <= code < 0x7F
                else f"\\x{code:02x}"
                if code < 0x100
                else f"\\u{code:04x}"
                if code < 0x10000
                else f"\\U{code:08x}"
            )
            if len(row) + len(escaped) > width:
                rows.append(row)
                row = ""
            row += escaped
        lines += [f'    "{name}": (', *(f'        "{r}"' for r in [*rows, row]), "    ),"]
    return "\n".join([*lines, "}"])


if __name__ == "__main__":
    import sys

    print(_written_source() if sys.argv[1:] == ["written"] else _table_source(computed()))
